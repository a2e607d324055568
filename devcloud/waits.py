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

"""Nova's functional test helpers' waits (``integrated_helpers``), looking
ten times as often and as long in all.

They look every half second: a test waited for the next look long after
what it waited for was done (a server ACTIVE, deleted, migrated).  Here
each wait makes ten times as many looks, a tenth as far apart, so that it
gives up no sooner than Nova's.
"""

import contextlib
import threading
import time

import fixtures
from nova.tests.functional.api import client as api_client

# How many looks for one of Nova's.
OFTEN = 10
# Nova's interval.
NOVA_INTERVAL = 0.5


class _Sleeps:
    """``integrated_helpers``' time module, whose sleep is a tenth as long
    in a thread (green thread) that waits through `LookingOften`.
    """

    def __init__(self) -> None:
        # Made when a test sets up, after the eventlet or threads choice.
        self.often = threading.local()

    def sleep(self, seconds: float) -> None:
        if getattr(self.often, 'depth', 0):
            seconds /= OFTEN
        time.sleep(seconds)

    def __getattr__(self, name: str):
        return getattr(time, name)


class ShorterSleeps(fixtures.Fixture):
    """Nova's helpers' sleeps, a tenth as long in `LookingOften`'s waits
    (and only there) while the fixture is set up.
    """

    def _setUp(self) -> None:
        self.sleeps = _Sleeps()
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.functional.integrated_helpers.time', self.sleeps))

    @contextlib.contextmanager
    def shorter(self):
        often = self.sleeps.often
        often.depth = getattr(often, 'depth', 0) + 1
        try:
            yield
        finally:
            often.depth -= 1


class LookingOften:
    """The waits of ``integrated_helpers.InstanceHelperMixin`` that the
    tests use, looking often; a test case mixes it in before Nova's helpers
    and sets up `ShorterSleeps` as ``self.sleeps``.
    """

    sleeps: ShorterSleeps

    def _wait_for_server_parameter(self, server, expected_params,
                                   max_retries=10, *args, **kwargs):
        # Nova's own (which differs per release), with its sleeps shorter.
        with self.sleeps.shorter():
            return super()._wait_for_server_parameter(
                server, expected_params, max_retries * OFTEN,
                *args, **kwargs)

    def _wait_until_deleted(self, server):
        """Until the server is gone, failing if it goes to ERROR instead
        (as Nova's: 40 looks half a second apart).
        """
        initially_in_error = server.get('status') == 'ERROR'
        try:
            for _ in range(40 * OFTEN):
                server = self.api.get_server(server['id'])
                if not initially_in_error and server['status'] == 'ERROR':
                    self.fail('Server went to error state instead of'
                              'disappearing.')
                time.sleep(NOVA_INTERVAL / OFTEN)
            self.fail('Server failed to delete.')
        except api_client.OpenStackApiNotFoundException:
            return

    def _wait_for_migration_status(self, server, expected_statuses):
        """The migration of the server in one of `expected_statuses` (as
        Nova's: 10 looks half a second apart).
        """
        api = getattr(self, 'admin_api', self.api)
        statuses = [status.lower() for status in expected_statuses]
        actual_status = None
        for _ in range(10 * OFTEN):
            for migration in api.api_get('/os-migrations').body[
                    'migrations']:
                if migration['instance_uuid'] == server['id']:
                    actual_status = migration['status']
                    if actual_status.lower() in statuses:
                        return migration
            time.sleep(NOVA_INTERVAL / OFTEN)
        self.fail('Timed out waiting for migration with status for '
                  'instance %s (expected "%s", got "%s")' % (
                      server['id'], expected_statuses, actual_status))
