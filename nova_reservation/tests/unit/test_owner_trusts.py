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

"""Which leases get a trust of their owner, and the volumes the engine
makes through it: what Cinder is asked for, under which name; the
engine's own session, made once for its credentials.
"""

import types

from keystoneauth1 import loading as ks_loading
from oslo_config import fixture as config_fixture
import testtools

from nova_reservation.clients import trusts
from nova_reservation import conf
from nova_reservation.engine import volumes
from nova_reservation import exception


def bdm(source: str, **fields):
    values = dict(uuid='b-' + source, source_type=source,
                  destination_type='volume', volume_size=2, image_id=None,
                  snapshot_id=None, volume_type=None)
    values.update(fields)
    return types.SimpleNamespace(**values)


class WantedTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(conf.CONF))
        self.conf.config(group='reservation', owner_trusts=True,
                         auth_type='password')
        self.ctx = types.SimpleNamespace(auth_token='a-token')

    def test_a_caller_with_a_token_and_an_engine_with_credentials(self):
        self.assertTrue(trusts.wanted(self.ctx))

    def test_not_when_turned_off(self):
        self.conf.config(group='reservation', owner_trusts=False)
        self.assertFalse(trusts.wanted(self.ctx))

    def test_not_without_keystone_credentials_for_the_engine(self):
        for auth_type in (None, 'none'):
            self.conf.config(group='reservation', auth_type=auth_type)
            self.assertFalse(trusts.wanted(self.ctx), auth_type)

    def test_not_without_a_token(self):
        for token in (None, ''):
            self.assertFalse(trusts.wanted(
                types.SimpleNamespace(auth_token=token)), token)
        self.assertFalse(trusts.wanted(types.SimpleNamespace()))


class VolumeTest(testtools.TestCase):

    def test_from_an_image(self):
        self.assertEqual({'volume': {'name': 'v', 'size': 2,
                                     'imageRef': 'img'}},
                         volumes.body(bdm('image', image_id='img'), 'v'))

    def test_blank_with_a_type(self):
        self.assertEqual({'volume': {'name': 'v', 'size': 2,
                                     'volume_type': 'fast'}},
                         volumes.body(bdm('blank', volume_type='fast'), 'v'))

    def test_from_a_snapshot(self):
        self.assertEqual({'volume': {'name': 'v', 'size': 2,
                                     'snapshot_id': 'snap'}},
                         volumes.body(bdm('snapshot', snapshot_id='snap'),
                                      'v'))

    def test_the_name_is_the_server_s_and_the_mapping_s(self):
        # Found again by it after an engine died between two steps.
        first = volumes.name('server-1', bdm('image'))
        self.assertEqual(first, volumes.name('server-1', bdm('image')))
        self.assertNotEqual(first, volumes.name('server-2', bdm('image')))
        self.assertNotEqual(first, volumes.name('server-1', bdm('blank')))
        self.assertIn('server-1', first)


class UserlessEngineTest(testtools.TestCase):
    """Engine credentials that name no user (an admin token plugin)."""

    def setUp(self) -> None:
        super().setUp()
        self.useFixture(config_fixture.Config(conf.CONF)).config(
            group='reservation', owner_trusts=True, auth_type='admin_token')
        trusts._TRUSTEE.clear()
        self.addCleanup(trusts._TRUSTEE.clear)
        self.asked = []
        userless = types.SimpleNamespace(
            get_user_id=lambda: self.asked.append(1))
        self.patch(trusts, 'service_session', lambda: userless)

    def test_a_lease_gets_no_trust_rather_than_a_refusal(self):
        ctx = types.SimpleNamespace(user_id='u', project_id='p', roles=[])
        self.assertIsNone(trusts.make(ctx))

    def test_the_trusts_are_not_listed_without_a_trustee(self):
        # Keystone would list every trust, and the reconciler delete them.
        self.assertRaises(exception.TrustUnavailable, trusts.given)

    def test_the_user_is_asked_again_until_known(self):
        trusts.trustee()
        trusts.trustee()
        self.assertEqual(2, len(self.asked))


class ServiceSessionTest(testtools.TestCase):
    """The engine's own session is made once for its credentials."""

    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(conf.CONF))
        self.conf.register_opts(ks_loading.get_auth_plugin_conf_options(
            'password'), group=conf.GROUP)
        self.conf.config(group=conf.GROUP, auth_type='password',
                         auth_url='http://keystone.example/v3',
                         username='engine', password='one',
                         user_domain_name='Default', project_name='service',
                         project_domain_name='Default')

    def test_kept_until_the_credentials_change(self):
        first = trusts.service_session()
        self.assertIs(first, trusts.service_session())
        self.assertIsNot(first, trusts.session())
        for option, value in (('password', 'two'), ('username', 'other'),
                              ('project_name', 'other'), ('timeout', 5),
                              ('auth_url', 'http://other.example/v3')):
            before = trusts.service_session()
            self.conf.config(group=conf.GROUP, **{option: value})
            changed = trusts.service_session()
            self.assertIsNot(before, changed, option)
            self.assertIs(changed, trusts.service_session(), option)
        self.assertEqual('http://other.example/v3', changed.auth.auth_url)
