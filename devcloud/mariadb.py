#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""How the development clouds and the tests connect to a MariaDB on this
machine (the machine's own, a local cloud's Galera nodes): over loopback
or a socket, without TLS, which none of them offers.

PyMySQL from 1.2 on tries TLS unless told not to, building a TLS context
(the system's certificates read) for every connection, about 20 ms of a
core: thousands of connections a run.
"""

# pymysql.connect's arguments.
CONNECT = dict(ssl_disabled=True)
# The same in a SQLAlchemy URL's query (SQLAlchemy hands it to PyMySQL).
URL_QUERY = 'ssl_disabled=true'
