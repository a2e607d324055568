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
package, read from the installed package and run unchanged against the
lease API of an embedded cloud.

They address the services as a devstack serves them (``compute/v2.1``,
``reservation/v1`` under one address) with a Keystone token made by their
``AuthenticationFixture``: here `AuthenticationFixture` starts the cloud
and gives the token of its admin, and `_devstack_paths` serves those paths.
"""

import importlib.resources

from gabbi import driver
from nova.tests import fixtures as nova_fixtures

from nova_reservation.tests.functional import gabbi_fixtures

GABBITS = importlib.resources.files(
    'blazar_tempest_plugin.tests.api').joinpath('gabbits')
# The stand-in for Keystone: this token is the admin's.
ADMIN_TOKEN = 'admin-token'
ADMIN_HEADERS = {'HTTP_X_AUTH_USER': 'admin',
                 'HTTP_X_AUTH_PROJECT_ID': nova_fixtures.PROJECT_ID,
                 'HTTP_X_ROLES': 'admin,member,reader'}


class AuthenticationFixture(gabbi_fixtures.EmbeddedCloud):
    """The fixture Blazar's files name: an embedded cloud, and OS_TOKEN."""

    def start_fixture(self) -> None:
        super().start_fixture()
        self._restore = gabbi_fixtures._set_environ(
            {'OS_TOKEN': ADMIN_TOKEN})

    def stop_fixture(self) -> None:
        self._restore()
        super().stop_fixture()


def _devstack_paths(environ: dict, start_response):
    """WSGI: nova-api under devstack's paths, with the admin's token."""
    path = environ.get('PATH_INFO', '')
    if path.startswith('/compute/'):
        environ['PATH_INFO'] = path[len('/compute'):]
    if environ.get('HTTP_X_AUTH_TOKEN') == ADMIN_TOKEN:
        environ.update(ADMIN_HEADERS)
    return gabbi_fixtures.nova_api()(environ, start_response)


class _Fixtures:
    """The fixture module the files' ``fixtures:`` names resolve in."""

    AuthenticationFixture = AuthenticationFixture


def load_tests(loader, tests, pattern):
    """The tests of Blazar's YAML files (unittest's load_tests)."""
    return driver.build_tests(
        str(GABBITS), loader, intercept=lambda: _devstack_paths,
        fixture_module=_Fixtures,
        inner_fixtures=[gabbi_fixtures.EngineKeepsUp],
        test_loader_name=__name__)
