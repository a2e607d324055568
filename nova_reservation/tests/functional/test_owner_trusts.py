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

"""A lease whose owner's trust Keystone can not make is refused whole with
a 503 that says to try again, through the lease API and through a boot
with lease_params; a cloud whose engine has no Keystone credentials (a
noauth cloud) makes no trust and leases as before.
"""

import fixtures
from keystoneauth1 import loading as ks_loading
from nova import context as nova_context
from oslo_config import fixture as config_fixture

from devcloud import embedded
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class KeystoneAwayTest(base.ReservationTestCase):

    def setUp(self) -> None:
        # Cleaned up after the harness and the invariants' check: it resets
        # the configuration.
        self.options = self.useFixture(config_fixture.Config(conf.CONF))
        super().setUp()
        # The harness's stand-in for Keystone, with the caller's token.
        stub = nova_context.RequestContext

        def with_token(env, **kwargs):
            return stub(env['HTTP_X_AUTH_USER'],
                        env['HTTP_X_AUTH_PROJECT_ID'],
                        is_admin=env['HTTP_X_AUTH_USER'] == 'admin',
                        roles=env['HTTP_X_ROLES'].split(','),
                        auth_token=env.get('HTTP_X_AUTH_TOKEN'), **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.auth.NovaKeystoneContext._create_context', with_token))
        self.rsv = self.lease_api()
        # The caller came with a Keystone token.
        self.rsv.headers['X-Auth-Token'] = 'a-token'

    def assert_refused_whole(self, resp) -> None:
        self.assertEqual(503, resp.status_code, resp.text)
        self.assertIn('trust', resp.text)
        self.assertIn('try again', resp.text)
        self.assertEqual([], db_leases.get_all(STORE))
        self.assertEqual([], self.api.get_servers())

    def test_no_trust_without_keystone_credentials(self):
        self.flags(auth_type=None, group=conf.GROUP)
        resp = self.rsv('POST', '/leases', base.flavor_lease(amount=1))
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertIsNone(resp.json()['lease']['trust_id'])

    def keystone_away(self) -> None:
        """The engine has Keystone credentials, and Keystone is not there.
        (The plugin's options go with the test: some are required.)
        """
        self.options.register_opts(ks_loading.get_auth_plugin_conf_options(
            'password'), group=conf.GROUP)
        self.flags(auth_type='password', auth_url='http://127.0.0.1:9/v3',
                   username='engine', password='secret',
                   user_domain_name='Default', project_name='service',
                   project_domain_name='Default', group=conf.GROUP)

    def test_the_lease_api(self):
        self.keystone_away()
        self.assert_refused_whole(self.rsv('POST', '/leases',
                                           base.flavor_lease(amount=1)))

    def test_a_boot_with_lease_params(self):
        self.keystone_away()
        resp = self.api.api_post('/servers', {
            'server': {'name': 'vm', 'imageRef': embedded.IMAGE,
                       'flavorRef': embedded.ONE_PER_NODE,
                       'networks': 'none'},
            'os:scheduler_hints': {'lease_params': base.params(
                base.when(60), base.when(120))}},
            headers={'X-Auth-Token': 'a-token'},
            check_response_status=False)
        self.assertEqual(503, resp.status, resp.content)
        self.assertIn(b'trust', resp.content)
        self.assertEqual([], db_leases.get_all(STORE))
        self.assertEqual([], self.api.get_servers())
