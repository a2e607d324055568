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

"""The engine's Nova client reads the proxy variables once, for Nova's
endpoint, and still honours them (and no_proxy)."""

import json

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
import testtools

from devcloud import standins
from nova_reservation.engine import nova_client


class Recorder:
    """An HTTP server that answers every request with a server."""

    def __init__(self) -> None:
        self.seen: list = []
        self.server = standins.serve(self.app, 0)
        self.url = 'http://127.0.0.1:%d' % self.server.server_port

    def app(self, environ, start_response):
        self.seen.append(environ['PATH_INFO'])
        body = json.dumps({'server': {'id': 'x'}}).encode()
        start_response('200 OK', [('Content-Type', 'application/json'),
                                  ('Content-Length', str(len(body)))])
        return [body]


class EnvironmentTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        for name in ('http_proxy', 'HTTP_PROXY', 'no_proxy', 'NO_PROXY',
                     'all_proxy', 'ALL_PROXY'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.proxy = Recorder()
        self.addCleanup(self.proxy.server.shutdown)

    def client(self, endpoint: str) -> nova_client.NovaClient:
        return nova_client.NovaClient(ks_adapter.Adapter(
            ks_session.Session(), endpoint_override=endpoint))

    def test_the_proxy_of_the_environment_is_used_read_once(self):
        self.useFixture(fixtures.EnvironmentVariable('http_proxy',
                                                     self.proxy.url))
        client = self.client('http://nova.invalid:8774/v2.1')
        self.assertEqual({'id': 'x'}, client.server('x'))
        # Read once: a change of the environment later is not looked at
        # at every call.
        self.useFixture(fixtures.EnvironmentVariable('http_proxy'))
        client.server('y')
        self.assertEqual(['http://nova.invalid:8774/v2.1/servers/x',
                          'http://nova.invalid:8774/v2.1/servers/y'],
                         self.proxy.seen)

    def test_no_proxy_is_honoured(self):
        nova = Recorder()
        self.addCleanup(nova.server.shutdown)
        self.useFixture(fixtures.EnvironmentVariable('http_proxy',
                                                     self.proxy.url))
        self.useFixture(fixtures.EnvironmentVariable('no_proxy',
                                                     '127.0.0.1'))
        client = self.client(nova.url + '/v2.1')
        client.server('x')
        client.server('y')
        self.assertEqual(['/v2.1/servers/x', '/v2.1/servers/y'], nova.seen)
        self.assertEqual([], self.proxy.seen)
