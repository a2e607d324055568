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

"""Development clouds of nova-reservation, kept out of the installed
package: the embedded cloud, Nova in one process (``devcloud.embedded``);
the main job's scenario on it (``devcloud.demo``); the local
multi-process cloud (``devcloud.localcloud``); the machine's MariaDB and
RabbitMQ with engine processes (``devcloud.machine``); and a stand-in
HTTP server for the tests' fake services (``devcloud.standins``).
"""
