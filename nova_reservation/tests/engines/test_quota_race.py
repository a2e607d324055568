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

"""On MariaDB, with connections of their own: two leases of one project
written at once for the last of its quota; one is refused."""

import datetime
import threading
import uuid

import testtools

from devcloud import machine
from nova_reservation import capacity
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation import exception
from nova_reservation.lease import quotas as lease_quotas
from nova_reservation.lease import request
from nova_reservation import status

STORE = db_api.Context()
SLOT = capacity.Resources(2, 1024, 1)


class QuotaRaceTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore())

    def lease(self, node: str) -> tuple:
        now = db_api.utcnow()
        values = dict(
            id=str(uuid.uuid4()), name='l', project_id='p1', user_id='u',
            start_at=now + datetime.timedelta(hours=1),
            end_at=now + datetime.timedelta(hours=2),
            status=status.PENDING, on_end='delete', created_at=now)
        req = request.ReservationRequest(
            resource_type='flavor:instance', count=1, need=SLOT,
            flavor_id='1')
        return values, [(request.reservation_row(values, req),
                         request.slot_rows(values, [
                             capacity.Placed(node, SLOT)]))]

    def test_two_leases_for_the_last_of_a_quota(self):
        quota = lease_quotas.Quota('p1', {'vcpus': 2})
        # Each write waits for the other (at most a second) between its
        # read of the project's use and its own slots: without the
        # ledger's lock taken first, both would read none used.
        met = threading.Barrier(2, timeout=1)
        made, refused = [], []

        def write(node):
            values, reservations = self.lease(node)

            def slots():
                try:
                    met.wait()
                except threading.BrokenBarrierError:
                    pass
                db_leases.create(ctx, None, values, reservations, [])
            ctx = db_api.Context()
            try:
                lease_quotas.guarded(ctx, quota, slots)
                made.append(values['id'])
            except exception.OverQuota as e:
                refused.append(e.excess)
        threads = [threading.Thread(target=write, args=(node,))
                   for node in ('node1', 'node2')]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual((1, 1), (len(made), len(refused)))
        self.assertEqual(('vcpus', 2, 4), (refused[0].limit, refused[0].had,
                                           refused[0].would_have))
        self.assertEqual(made, [x.id for x in db_leases.get_all(STORE)])
        self.assertEqual(
            2, lease_quotas.usage_of(STORE, 'p1').peaks['vcpus'][0])
