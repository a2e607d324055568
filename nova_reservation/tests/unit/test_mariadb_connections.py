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

"""The development clouds and the tests connect to MariaDB without TLS
(``devcloud/mariadb.py``): PyMySQL builds no TLS context for a connection
made with the local cloud's URLs or the machine's arguments, as it does
by default from 1.2 on.
"""

import pymysql
import sqlalchemy as sa
import testtools

from devcloud.localcloud import cloud
from devcloud import machine


def tls_context(**arguments) -> bool:
    """Does PyMySQL build a TLS context for a connection made with
    `arguments` (the connection not opened)?
    """
    conn = pymysql.connections.Connection(defer_connect=True, **arguments)
    return getattr(conn, 'ctx', None) is not None


def url_arguments(url: str) -> dict:
    """pymysql.connect's arguments as SQLAlchemy makes them of `url`."""
    url = sa.engine.make_url(url)
    return url.get_dialect()().create_connect_args(url)[1]


class NoTLSTest(testtools.TestCase):

    def test_the_local_cloud_s_database_urls(self):
        for port in (3306, 3307):
            self.assertFalse(tls_context(**url_arguments(
                cloud.db_url('nova_api', port))))

    def test_the_machine_s_store_and_arguments(self):
        self.assertFalse(tls_context(**machine.MARIADB))
        self.assertFalse(tls_context(**url_arguments(
            machine.store_url('rsv_test', 'utf8mb4'))))

    def test_without_them_pymysql_1_2_builds_one(self):
        # What the arguments save (a connection made with none).
        if pymysql.VERSION[:2] < (1, 2):
            self.skipTest('PyMySQL %s tries no TLS unasked'
                          % '.'.join(map(str, pymysql.VERSION[:3])))
        self.assertTrue(tls_context(host='127.0.0.1', user='root'))
