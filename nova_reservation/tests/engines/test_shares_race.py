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

"""On MariaDB, with connections of their own: a share taken back while
the project it was shared with claims slots one after the other, and two
splits of one reservation at once.
"""

import datetime
import threading
import time
import uuid

import testtools

from devcloud import machine
from nova_reservation import capacity
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import splits as db_splits
from nova_reservation import exception
from nova_reservation.lease import request
from nova_reservation.lease import splits as lease_splits
from nova_reservation import status

STORE = db_api.Context()
SLOT = capacity.Resources(1, 512, 1)


class ShareRaceTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore())
        now = db_api.utcnow()
        self.lease = dict(
            id=str(uuid.uuid4()), name='l', project_id='owner',
            user_id='u', start_at=now - datetime.timedelta(minutes=1),
            end_at=now + datetime.timedelta(hours=1), status=status.ACTIVE,
            on_end='delete', created_at=now)
        self.req = request.ReservationRequest(
            resource_type='flavor:instance', count=40, need=SLOT,
            flavor_id='1', shared_with=('other',))
        db_leases.create(STORE, None, self.lease, [(
            request.reservation_row(self.lease, self.req),
            request.slot_rows(self.lease, [
                capacity.Placed('node%d' % (i % 4), SLOT)
                for i in range(40)]))], [])

    def test_no_claim_after_the_share_is_taken_back(self):
        claimed, ended = [], []
        go = threading.Event()

        def claims():
            go.set()
            while True:
                try:
                    held = db_ledger.claim_slots(
                        db_api.Context(), self.req.id, 1,
                        db_ledger.CLAIM_PREFIX + uuid.uuid4().hex[:20],
                        'other')
                except exception.NotShared:
                    ended.append('not shared')
                    return
                if not held:
                    ended.append('full')
                    return
                claimed.extend(held)
        worker = threading.Thread(target=claims)
        worker.start()
        go.wait()
        # Taken back while claims are being made: after the first (on a
        # busy machine the thread may not have claimed any yet).
        deadline = time.monotonic() + 10
        while not claimed and not ended and time.monotonic() < deadline:
            time.sleep(0.001)
        lease = db_leases.get(STORE, self.lease['id'])
        db_leases.change(STORE, None, lease.id, lease.version, {},
                         {self.req.id: ({'shared_with': None}, [])}, {})
        worker.join(30)
        taken_back = db_leases.reservation(STORE, self.req.id).generation
        self.assertEqual(['not shared'], ended)
        # Every claim that succeeded came before the change, in the
        # ledger's order; none after it.
        gens = {s.id: s.generation for s in db_ledger.slots(STORE,
                                                            self.req.id)}
        self.assertTrue(claimed)
        self.assertEqual([], [i for i in claimed if gens[i] > taken_back])
        # The owner still claims.
        self.assertTrue(db_ledger.claim_slots(
            STORE, self.req.id, 1, db_ledger.CLAIM_PREFIX + 'owner'))

    def test_two_splits_at_once_lose_no_slot(self):
        made, refused = [], []

        def split():
            values = dict(self.lease, id=str(uuid.uuid4()),
                          status=status.PENDING)
            res = request.reservation_row(values, request.ReservationRequest(
                resource_type='flavor:instance', count=15, need=SLOT,
                flavor_id='1'))
            try:
                db_splits.split(db_api.Context(), self.lease['id'],
                                self.req.id, 15, values, res, [], {},
                                lambda slots: lease_splits.choose(slots, 15))
                made.append(res['id'])
            except exception.TooFewToSplit:
                refused.append(values['id'])
        threads = [threading.Thread(target=split) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        # 40 slots: two splits of 15 fit, the third would leave none... of
        # the 10 left it can not take 15.
        self.assertEqual((2, 1), (len(made), len(refused)))
        left = db_leases.reservation(STORE, self.req.id)
        self.assertEqual(10, left.amount)
        ids = [s.id for rid in [self.req.id] + made
               for s in db_ledger.slots(STORE, rid)]
        self.assertEqual(40, len(ids))
        self.assertEqual(40, len(set(ids)))
        self.assertEqual([10, 15, 15], sorted(
            len(db_ledger.slots(STORE, rid)) for rid in [self.req.id] + made))
