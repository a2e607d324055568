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

"""Races on MariaDB, many threads at once as many nova-api workers: boots
into the last slots, leases for the last capacity, changes of one lease.
Exactly as many win as fit, the others are refused cleanly, and the ledger
never holds more than a node has.
"""

from concurrent import futures
import datetime
import threading
import uuid

import testtools

from devcloud import machine
from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation import exception
from nova_reservation.lease import request as lease_request
from nova_reservation.lease import resource_types
from nova_reservation.lease import schedule
from nova_reservation.lease import write as lease_write
from nova_reservation.ledger import memory as ledger_mod

STORE = db_api.Context()

NODES = {'n%d' % i: (4, 8192, 80) for i in range(3)}
SLOT = capacity.Resources(1, 2048, 20)
# Each node's GPUs, on its own provider; a slot of one, a bare-metal one
# of nothing else.
GPUS = 2
ONE_GPU = capacity.extras({('', 'CUSTOM_GPU'): 1})


class Placement:
    """Placement's answers for three empty nodes (what the planner reads).
    """

    class Resp:
        status_code = 200
        url = ''

        def __init__(self, body) -> None:
            self.body = body

        def json(self):
            return self.body

    def get(self, url, version=None):
        if url == '/resource_providers':
            return self.Resp({'resource_providers': [
                {'uuid': node, 'name': node, 'generation': 1}
                for node in NODES]})
        node = url.split('/')[2]
        if url.count('/') == 2:
            return self.Resp({'uuid': node, 'name': node, 'generation': 1})
        if url.endswith('/inventories'):
            v, m, d = NODES[node]
            return self.Resp({'inventories': {
                'VCPU': {'total': v}, 'MEMORY_MB': {'total': m},
                'DISK_GB': {'total': d}, 'CUSTOM_GPU': {'total': GPUS}}})
        if url.endswith('/traits'):
            return self.Resp({'traits': ['COMPUTE_NODE']})
        return self.Resp({'allocations': {}})


def together(count: int, call) -> list:
    """`call(i)` in `count` threads released at once; results or errors."""
    gate = threading.Barrier(count)

    def run(i):
        gate.wait()
        try:
            return call(i)
        except Exception as e:
            return e
    with futures.ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


class RaceTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore())

    def planner(self) -> lease_write.Writer:
        """One nova-api worker's planner."""
        # No Nova here: no boot is ever being scheduled.
        return lease_write.Writer(ledger_mod.Ledger(), Placement(),
                                  lambda: epoch.to_epoch(db_api.utcnow()),
                                  in_flight=lambda since: set(),
                                  view_age=0)

    def lease(self, hours: float = 1.0) -> dict:
        now = db_api.utcnow().replace(microsecond=0)
        return dict(id=str(uuid.uuid4()), name='l', project_id='p',
                    user_id='u', status='PENDING', on_end='delete',
                    created_at=now, before_end_minutes=None,
                    start_at=now + datetime.timedelta(hours=1),
                    end_at=now + datetime.timedelta(hours=1 + hours))

    def create(self, amount: int, need: capacity.Resources = SLOT,
               extras: tuple = capacity.NO_EXTRAS) -> dict:
        lease = self.lease()
        request = lease_request.ReservationRequest(
            resource_type=resource_types.FLAVOR, count=amount, need=need,
            extras=extras, flavor_id='f')
        self.planner().create(lease, [request], schedule.lease_events(
            lease, db_api.utcnow()))
        return dict(lease, reservation_id=request.id)

    def assertNoOverbooking(self) -> None:
        ledger = ledger_mod.Ledger()
        ledger.refresh()
        for node, timeline in ledger.timelines.items():
            peak = timeline.peak(0, float('inf'))
            self.assertTrue(peak.fits_in(capacity.Resources(*NODES[node])),
                            (node, peak))
            gpus = timeline.peak_extras(0, float('inf'))
            self.assertLessEqual(max(gpus.values(), default=0), GPUS,
                                 (node, gpus))

    def test_20_boots_into_5_free_slots(self):
        rid = self.create(5)['reservation_id']
        results = together(20, lambda i: db_ledger.claim_slots(
            STORE, rid, 1, db_ledger.CLAIM_PREFIX + str(i)))
        errors = [r for r in results if isinstance(r, Exception)]
        self.assertEqual([], errors)
        self.assertEqual(5, sum(1 for r in results if r))
        held = [a.instance_uuid for a in db_ledger.slots(STORE, rid)]
        self.assertEqual(5, len(set(held)))

    def test_20_leases_for_the_last_capacity(self):
        # 12 slots fit (3 nodes of 4 vCPUs); 20 leases of 1 ask at once.
        results = together(20, lambda i: self.create(1))
        unexpected = [r for r in results if isinstance(r, Exception) and
                      not isinstance(r, exception.NoCapacity)]
        self.assertEqual([], unexpected)
        made = [r for r in results if isinstance(r, dict)]
        self.assertEqual(12, len(made))
        self.assertEqual(12, len(db_leases.get_all(STORE)))
        self.assertNoOverbooking()

    def test_20_leases_for_the_last_gpus_and_bare_metal_nodes(self):
        # 6 GPUs (2 a node); 20 leases of one GPU each ask at once, half
        # of them of a GPU alone (a bare-metal flavor's slot).
        results = together(20, lambda i: self.create(
            1, SLOT if i % 2 else capacity.ZERO, ONE_GPU))
        unexpected = [r for r in results if isinstance(r, Exception) and
                      not isinstance(r, exception.NoCapacity)]
        self.assertEqual([], unexpected)
        self.assertEqual(3 * GPUS, len([r for r in results
                                        if isinstance(r, dict)]))
        self.assertNoOverbooking()

    def test_10_changes_of_one_lease_at_once(self):
        made = self.create(1)
        lease = db_leases.get(STORE, made['id'])

        def change(i):
            planner_ = self.planner()
            planner_.change(lease, lease.version, {
                'name': 'n%d' % i,
                'end_at': lease.end_at + datetime.timedelta(minutes=i + 1)})
            return i
        results = together(10, change)
        unexpected = [r for r in results if isinstance(r, Exception) and
                      not isinstance(r, (exception.LeaseChanged,
                                         exception.LedgerBusy))]
        self.assertEqual([], unexpected)
        won = [r for r in results if isinstance(r, int)]
        self.assertEqual(1, len(won))
        after = db_leases.get(STORE, made['id'])
        self.assertEqual(('n%d' % won[0], lease.version + 1),
                         (after.name, after.version))
        slot, = db_ledger.slots(STORE, made['reservation_id'])
        self.assertEqual(after.end_at, slot.end_at)
