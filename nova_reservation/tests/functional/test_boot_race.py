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

"""A lease and an ordinary boot for the last capacity of a node, at once:
never both."""

import threading
import time

from nova.scheduler import weights
import sqlalchemy as sa

from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import models
from nova_reservation.filters import reservation_filter
from nova_reservation.lease import relocation as lease_relocation
from nova_reservation.lease import write as lease_write
from nova_reservation import status
from nova_reservation.tests.functional import base

CONF = conf.CONF
STORE = db_api.Context()


class GateWeigher(weights.BaseHostWeigher):
    """A scheduler weigher, configured as any weigher is, that holds a boot
    between the filters and its claim in Placement while the gate is shut:
    the boot has passed the filters (which read the ledger) and has not
    taken its resources yet.
    """
    entered = threading.Event()
    gate = threading.Event()
    # The node the boot is to go to, once the gate opens (or Nova's pick).
    prefer = None

    def weigh_objects(self, weighed_obj_list, weight_properties):
        GateWeigher.entered.set()
        GateWeigher.gate.wait(60)
        return [1.0 if w.obj.nodename == GateWeigher.prefer else 0.0
                for w in weighed_obj_list]

    def _weigh_object(self, host_state, weight_properties) -> float:
        return 0.0


def lease_meanwhile(test, amount: int) -> tuple:
    """A lease of `amount` node-sized slots created in a thread; (the
    thread, {'resp': its answer once it ends}) once the lease is written.
    """
    answer = {}

    def create():
        answer['resp'] = test.lease_api()('POST', '/leases', {
            'name': 'last', 'start_date': base.when(30)[:16],
            'end_date': base.when(90)[:16], 'events': [],
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': base.ONE_PER_NODE,
                              'amount': amount, 'affinity': 'None'}]})
    creating = threading.Thread(target=create)
    creating.start()
    deadline = time.time() + 30
    while time.time() < deadline and not db_leases.get_all(STORE):
        time.sleep(0.01)
    test.assertEqual(['last'], [x.name for x in db_leases.get_all(STORE)])
    return creating, answer


class GatedTestCase(base.ReservationTestCase):
    """A cloud whose scheduler holds each boot at GateWeigher (when it
    has a choice of hosts: Nova weighs only then).
    """
    CAST_AS_CALL = False

    def setUp(self) -> None:
        super().setUp()
        GateWeigher.entered.clear()
        GateWeigher.gate.clear()
        GateWeigher.prefer = None
        self.addCleanup(GateWeigher.gate.set)
        self.flags(weight_classes=[__name__ + '.GateWeigher'],
                   group='filter_scheduler')
        self.scheduler.stop()
        self.scheduler = self.cloud.harness.start_service('scheduler')

    def held_boot(self) -> dict:
        """An ordinary boot of a node's size, past the filter, held before
        its claim.
        """
        server = self.api.post_server({'server': self._build_server(
            name='o1', image_uuid=base.IMAGE, flavor_id=base.ONE_PER_NODE,
            networks='none')})
        self.assertTrue(GateWeigher.entered.wait(30))
        return server

    def node_of_active(self, server: dict) -> str:
        return self._wait_for_state_change(
            self.admin_api.get_server(server['id']), 'ACTIVE')[
            'OS-EXT-SRV-ATTR:hypervisor_hostname']

    def assert_lost_to(self, server: dict, resp) -> None:
        """The boot got its node, and the lease's request was refused for
        it.
        """
        node = self.node_of_active(server)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('booted meanwhile took the last of node %s' % node,
                      resp.json()['error_message'])

    @staticmethod
    def holds() -> set:
        """The holds of lease changes in the ledger."""
        return db_ledger.claims(STORE, db_ledger.HOLD_PREFIX)

    @staticmethod
    def held_slots() -> list:
        """The slots held for lease changes (no reservation's slots)."""
        s = models.Slot
        return db_api.rows(STORE, sa.select(s).where(
            s.instance_uuid.like(db_ledger.HOLD_PREFIX + '%'),
            s.deleted == sa.false()))


class BootRaceTest(GatedTestCase):
    NODES = ('host1', 'host2')

    def test_a_lease_and_a_boot_never_both_take_the_last_capacity(self):
        # Past the filter (no lease yet), held before its claim.
        server = self.held_boot()
        # A lease for the whole cloud, placed meanwhile.
        creating, answer = lease_meanwhile(self, 2)
        # The boot claims the node now.
        GateWeigher.gate.set()
        creating.join(90)
        self.assert_lost_to(server, answer['resp'])
        self.assertEqual([], [x.id for x in db_leases.get_all(STORE)
                              if x.status != status.DELETED])
        self.assert_invariants()


class ChangeRaceTest(GatedTestCase):
    # One node for the lease, two for the boot to choose from.
    NODES = ('host1', 'host2', 'host3')

    def test_a_lease_grown_and_a_boot_never_both_take_the_last_capacity(
            self):
        rsv = self.lease_api()
        lease = rsv('POST', '/leases', base.flavor_lease(
            amount=1, start=30, end=90)).json()['lease']
        rid = lease['reservations'][0]['id']
        server = self.held_boot()
        # The lease grows onto both other nodes meanwhile.
        answer = {}

        def grow():
            answer['resp'] = rsv('PUT', '/leases/%s' % lease['id'], {
                'reservations': [{'id': rid, 'amount': 3}]})
        growing = threading.Thread(target=grow)
        growing.start()
        # Until the change is written (held, while it is checked).
        deadline = time.time() + 30
        while (time.time() < deadline and growing.is_alive() and
               not self.holds()):
            time.sleep(0.01)
        GateWeigher.gate.set()
        growing.join(90)
        self.assert_lost_to(server, answer['resp'])
        # Nothing of the change was kept: one slot, amount 1, no hold.
        self.assertEqual(1, len(db_ledger.slots(STORE, rid)))
        self.assertEqual(1, rsv('GET', '/leases/%s' % lease['id']).json()[
            'lease']['reservations'][0]['amount'])
        self.assertEqual(set(), self.holds())
        self.assert_invariants()
        # Grown by one, it fits beside the server.
        resp = rsv('PUT', '/leases/%s' % lease['id'], {
            'reservations': [{'id': rid, 'amount': 2}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(2, len(db_ledger.slots(STORE, rid)))
        self.assertEqual(set(), self.holds())
        self.assert_invariants()

    def test_slots_moved_off_a_failed_node_and_a_boot_never_both_fit(self):
        rsv = self.lease_api()
        lease = rsv('POST', '/leases', base.flavor_lease(
            amount=1, start=30, end=90)).json()['lease']
        rid = lease['reservations'][0]['id']
        failed = db_ledger.slots(STORE, rid)[0].node
        server = self.held_boot()
        # The engine moves the slot off its failed node meanwhile, and the
        # boot takes the node the slot is moved to.
        answer = {}

        def relocate():
            answer['moved'] = lease_relocation.relocate(
                lease_write.shared(), [failed], time.time())
        moving = threading.Thread(target=relocate)
        moving.start()
        deadline = time.time() + 30
        while time.time() < deadline and moving.is_alive() and not (
                self.holds()):
            time.sleep(0.01)
        # Where it is going (held while it is checked), or went.
        held = self.held_slots()
        GateWeigher.prefer = (held or db_ledger.slots(STORE, rid))[0].node
        GateWeigher.gate.set()
        moving.join(90)
        node = self.node_of_active(server)
        self.assertEqual((1, []), answer['moved'])
        slot, = db_ledger.slots(STORE, rid)
        self.assertNotIn(slot.node, (failed, node))
        self.assertEqual(set(), self.holds())
        self.assert_invariants()


class SettleBoundTest(GatedTestCase):
    NODES = ('host1', 'host2')

    def test_a_lease_waits_for_boots_in_flight_at_most_the_bound(self):
        # The request thread of a new lease is held no longer than
        # ledger_max_age and the scheduler's filter-to-claim bound (by
        # default), even while a boot stays in flight far longer.
        bound = (CONF.reservation.ledger_max_age +
                 CONF.reservation.boot_settle_timeout)
        self.assertLessEqual(bound, 15)
        server = self.held_boot()
        started = time.monotonic()
        creating, answer = lease_meanwhile(self, 1)
        creating.join(30)
        waited = time.monotonic() - started
        self.assertFalse(creating.is_alive())
        self.assertEqual(201, answer['resp'].status_code,
                         answer['resp'].text)
        self.assertLess(waited, bound + 5)
        # The boot goes where the lease is not.
        rid = answer['resp'].json()['lease']['reservations'][0]['id']
        leased, = {s.node for s in db_ledger.slots(STORE, rid)}
        GateWeigher.prefer, = set(self.NODES) - {leased}
        GateWeigher.gate.set()
        self.assertEqual(GateWeigher.prefer, self.node_of_active(server))
        self.assert_invariants()


class StaleLedgerTest(base.ReservationTestCase):
    """The scheduler filters on a copy of the ledger up to
    `ledger_max_age` old; a boot filtered on a copy older than a new lease
    still never shares the lease's last capacity.
    """
    NODES = ('host1',)
    CAST_AS_CALL = False

    def test_a_boot_filtered_on_an_old_ledger_and_a_lease(self):
        # Long enough for the lease and the boot to reach the filter
        # meanwhile, on a slow machine too (the boot alone took 5 s there).
        self.flags(ledger_max_age=10.0, group='reservation')
        copy = reservation_filter.LEDGER
        copy.refresh()
        # The scheduler's copy is not refreshed meanwhile (its thread, and
        # any request's own refresh, wait for the lock).
        with copy._lock:
            creating, answer = lease_meanwhile(self, 1)
            # Filtered on the copy of before the lease: it passes.
            server = self.api.post_server({'server': self._build_server(
                name='o1', image_uuid=base.IMAGE,
                flavor_id=base.ONE_PER_NODE, networks='none')})
            server = self._wait_for_state_change(server, 'ACTIVE',
                                                 max_retries=40)
        creating.join(90)
        resp = answer['resp']
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('booted meanwhile took the last of node host1',
                      resp.json()['error_message'])
        self.assertEqual([], [x.id for x in db_leases.get_all(STORE)
                              if x.status != status.DELETED])
        self.assert_invariants()
