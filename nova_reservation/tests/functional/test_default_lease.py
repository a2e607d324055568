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

"""Default leases: in the projects an operator names, every ordinary boot
is a lease from now, told before its end and ended as configured, so
that a forgotten server goes.
"""

from nova.tests import fixtures as nova_fixtures

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.tests.functional import base

STORE = base.STORE


class DefaultLeaseTest(base.ReservationsTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.flags(default_lease_projects=[nova_fixtures.PROJECT_ID],
                   default_lease_duration=3600, default_on_end='delete',
                   default_before_end=10, group='reservation')
        self.capture_notifications()

    def test_a_forgotten_server_is_told_then_ends(self):
        resp = self.boot(None, name='forgotten')
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.node_of(uuid)
        lease = db_leases.get(STORE, resp.body['server']['reservation'][
            'lease_id'])
        self.assertEqual(('default: forgotten', 'delete', 'ACTIVE'),
                         (lease.name, lease.on_end, lease.status))
        self.assertEqual(3600, (lease.end_at - lease.start_at).seconds)
        shown = self.rsv('GET', '/leases/%s' % lease.id).json()['lease']
        self.assertEqual([uuid], shown['reservations'][0]['servers'])
        end = epoch.to_epoch(lease.end_at)
        self.run_engine(at=end - 10 * 60 + 1)
        self.assertEqual(['lease.event.start_lease',
                          'lease.event.before_end_lease'],
                         [t for t, _ in self.notified('lease.event')])
        self.run_engine(at=end + 1)
        self.wait_gone(uuid)
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease.id).status)

    def test_other_projects_and_other_boots_are_unchanged(self):
        theirs = self.boot(None, api=self.other_api, name='theirs')
        self.assertEqual(202, theirs.status, theirs.content)
        self.assertNotIn('reservation', theirs.body['server'])
        # A boot with its own lease keeps it.
        own = self.boot(base.params(base.when(60), base.when(120)))
        self.assertEqual(202, own.status, own.content)
        self.assertEqual('l1', db_leases.get(STORE, own.body['server'][
            'reservation']['lease_id']).name)
        self.assertEqual(1, len(self.leases()))

    def test_a_boot_the_ledger_can_not_hold_is_a_409(self):
        for i in (1, 2):
            self.node_of(self.boot(None, name='vm%d' % i).body['server'][
                'id'])
        full = self.boot(None, name='vm3')
        self.assertEqual(409, full.status, full.content)
        self.assertIn('Not enough capacity', full.body['conflictingRequest'][
            'message'])
        self.assertEqual(2, len(self.leases()))
