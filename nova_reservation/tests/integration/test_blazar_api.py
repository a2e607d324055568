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

"""Blazar's own API tests, the gabbi files of the blazar-tempest-plugin
package, run unchanged against the local cloud as Blazar's gate runs them:
the plugin's ``AuthenticationFixture`` gets a Keystone token from tempest's
credentials (here a ``tempest.conf`` for the local cloud), and the files
address ``compute/v2.1`` and ``reservation/v1`` under one address, which
the local cloud serves as devstack does.
"""

import importlib.resources
import os

from blazar_tempest_plugin.tests.api import fixtures
from gabbi import driver

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

GABBITS = importlib.resources.files(
    'blazar_tempest_plugin.tests.api').joinpath('gabbits')
# The files count what every lane makes (every lease of an admin's list,
# every reservable host and host allocation) and enroll the cloud's first
# hypervisor, whichever lane's: their tests run while no other test runs.
ALONE = True


def _tempest_conf() -> str:
    """A tempest configuration for the local cloud: its Keystone, its
    admin, and no Neutron for the accounts tempest makes.
    """
    sections = {
        'identity': dict(uri_v3=cloud.url('keystone'), auth_version='v3',
                         region=cloud.REGION, v3_endpoint_type='public',
                         admin_role='admin'),
        'auth': dict(use_dynamic_credentials='true',
                     admin_username='admin',
                     admin_password=cloud.password('admin'),
                     admin_project_name='admin',
                     admin_domain_name='Default'),
        'identity-feature-enabled': dict(api_v2='false'),
        'service_available': dict(neutron='false'),
    }
    # Each lane's own: every lane's test process writes it as it loads.
    folder = os.path.join(base.CLOUD.etc, 'tempest', 'lane%d' % base.LANE)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, 'tempest.conf'), 'w') as f:
        for name, options in sections.items():
            f.write('[%s]\n' % name)
            f.writelines('%s = %s\n' % x for x in options.items())
    return folder


class AuthenticationFixture(fixtures.AuthenticationFixture):
    """The plugin's fixture, which keeps the account tempest made for it:
    this one removes it, and its token, at the end.
    """

    def stop_fixture(self) -> None:
        super().stop_fixture()
        self._get_credentials_provider().clear_creds()
        os.environ.pop('OS_TOKEN', None)


class _Fixtures:
    """The fixture module the files' ``fixtures:`` names resolve in."""

    AuthenticationFixture = AuthenticationFixture


def load_tests(loader, tests, pattern):
    """The tests of Blazar's YAML files (unittest's load_tests)."""
    os.environ['TEMPEST_CONFIG_DIR'] = _tempest_conf()
    built = driver.build_tests(
        str(GABBITS), loader, fixture_module=_Fixtures,
        url='http://%s:%d/' % (cloud.HOST, cloud.PORTS['nova']),
        test_loader_name=__name__)
    # gabbi makes a class for each test of each file.
    for file_tests in built:
        for test in file_tests:
            type(test).ALONE = ALONE
    return built
