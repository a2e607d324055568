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

"""Leases in a cloud of two cells: Nova builds a server only in the cell it
was made in, so the slots of a reserved server keep to that cell, when a
waiting lease is placed and when a slot leaves a failed node.

host1 is in cell1; host2 and host3 are in cell2.
"""

from nova import context as nova_context
from nova import objects

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE
DAY = 24 * 60   # minutes


class TwoCellsTest(base.ReservationsTestCase):
    NODES = ('host1', 'host2', 'host3')
    CELLS = {'host2': 'cell2', 'host3': 'cell2'}

    def setUp(self) -> None:
        super().setUp()
        self.flags(ledger_max_age=0, group='reservation')

    def cell_of(self, uuid: str) -> str:
        return objects.InstanceMapping.get_by_instance_uuid(
            nova_context.get_admin_context(), uuid).cell_mapping.name

    def assert_runs_on(self, uuid: str, node: str) -> None:
        view = self.admin_api.get_server(uuid)
        self.assertEqual(('ACTIVE', node), (
            view['status'], view['OS-EXT-SRV-ATTR:hypervisor_hostname']))

    def fill(self, start: float, end: float) -> dict:
        """{node: the id of a lease that takes all of it over [start,
        end) minutes from now}, a lease per node.
        """
        by_node = {}
        for i in range(len(self.NODES)):
            resp = self.rsv('POST', '/leases', base.flavor_lease(
                amount=1, start=start, end=end, name='full%d' % i))
            self.assertEqual(201, resp.status_code, resp.text)
            lease = resp.json()['lease']
            node, = [s.node for s in db_ledger.slots(
                STORE, lease['reservations'][0]['id'])]
            by_node[node] = lease['id']
        self.assertEqual(set(self.NODES), set(by_node))
        return by_node

    def free(self, lease_id: str) -> None:
        resp = self.rsv('DELETE', '/leases/%s' % lease_id)
        self.assertEqual(204, resp.status_code, resp.text)
        self.run_engine()

    def try_waiting(self, lease_id: str) -> None:
        """The engine's next try of the waiting lease, then its events."""
        self.clock.now = max(self.clock.now, epoch.to_epoch(
            db_leases.get(STORE, lease_id).next_try_at) + 1)
        self.engine.place_waiting()
        self.run_engine()

    def test_a_waiting_boot_waits_in_one_cell_and_is_placed_there(self):
        full = self.fill(50, 130)
        resp = self.boot(base.params(base.when(60), base.when(120),
                                     if_busy='wait'))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        lease_id = resp.body['server']['reservation']['lease_id']
        self.assertEqual('WAITING', db_leases.get(STORE, lease_id).status)
        # Made in the cell whose nodes hold the most such servers then:
        # none anywhere, and cell2 has more nodes.
        self.assertEqual('cell2', self.cell_of(uuid))
        # Room on host1 only, in the other cell: not taken.
        self.free(full['host1'])
        self.try_waiting(lease_id)
        lease = db_leases.get(STORE, lease_id)
        self.assertEqual('WAITING', lease.status)
        self.assertIn('Not enough capacity', lease.status_reason)
        # Room in its cell: placed there, and built there at the start.
        self.free(full['host3'])
        self.try_waiting(lease_id)
        lease = db_leases.get(STORE, lease_id)
        self.assertEqual('PENDING', lease.status)
        rid = self.api.get_server(uuid)['reservation']['reservation_id']
        self.assertEqual('host3', db_ledger.slot_of(STORE, rid, uuid).node)
        self.start_lease(lease)
        self.assert_runs_on(uuid, 'host3')

    def test_a_reserved_server_s_slot_leaves_a_failed_node_in_its_cell(self):
        full = self.fill(50, 130)
        self.free(full['host2'])
        uuid = self.boot_reserved()
        rid = self.api.get_server(uuid)['reservation']['reservation_id']
        self.assertEqual('host2', db_ledger.slot_of(STORE, rid, uuid).node)
        self.assertEqual('cell2', self.cell_of(uuid))
        # host2 fails; only host1, of the other cell, has room: the slot
        # stays, and the lease is degraded.
        self.free(full['host1'])
        self.set_compute('host2', 'disabled')
        self.engine.check_hosts()
        lease = self.lease_of_server(uuid)
        self.assertEqual('host2', db_ledger.slot_of(STORE, rid, uuid).node)
        self.assertTrue(lease.degraded)
        # Room on host3, of its cell: the slot moves there, and the server
        # is built there at the start.
        self.free(full['host3'])
        self.engine.check_hosts()
        self.assertEqual('host3', db_ledger.slot_of(STORE, rid, uuid).node)
        self.start_lease(self.lease_of_server(uuid))
        self.assert_runs_on(uuid, 'host3')
        self.set_compute('host2', 'enabled')

    def recurring_boot(self):
        return self.boot(base.params(base.when(60), base.when(120),
                                     recurrence=dict(every='day', count=2)))

    def test_a_recurring_boot_s_occurrences_keep_to_one_cell(self):
        # cell2 is full on the second day: both days go to host1, where
        # the server is made, and it runs there on each.
        tomorrow = self.fill(DAY + 50, DAY + 130)
        self.free(tomorrow['host1'])
        resp = self.recurring_boot()
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        first = db_leases.get(STORE, resp.body['server']['reservation'][
            'lease_id'])
        second = db_leases.occurrence(STORE, first, later=True)
        for lease in (first, second):
            self.assertEqual(['host1'], [
                s.node for r in db_leases.reservations(STORE, lease.id)
                for s in db_ledger.slots(STORE, r.id)])
        self.assertEqual('cell1', self.cell_of(uuid))
        self.start_lease(first)
        self.run_engine(at=epoch.to_epoch(first.end_at) + 1)
        self._wait_for_server_parameter(
            self.admin_api.get_server(uuid),
            {'OS-EXT-STS:vm_state': 'shelved_offloaded'})
        self.start_lease(second)
        self.assert_runs_on(uuid, 'host1')

    def test_a_recurring_boot_that_fits_only_across_cells_is_a_409(self):
        # Only host1 today, only cell2 tomorrow: no cell holds both days.
        full = self.fill(50, 130)
        self.free(full['host1'])
        tomorrow = self.fill(DAY + 50, DAY + 130)
        for node in ('host2', 'host3'):
            self.free(tomorrow[node])
        leases = len(self.leases())
        resp = self.recurring_boot()
        self.assertEqual(409, resp.status, resp.content)
        self.assertIn('Not enough capacity',
                      resp.body['conflictingRequest']['message'])
        self.assertEqual(leases, len(self.leases()))
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))

    def test_a_capacity_lease_s_slots_move_to_any_cell(self):
        # No server is bound to them: a boot into the reservation is
        # scheduled to whichever cell holds its slot.
        full = self.fill(50, 130)
        self.free(full['host2'])
        self.free(full['host1'])
        resp = self.rsv('POST', '/leases', base.flavor_lease(
            amount=1, start=60, end=120, name='cap'))
        self.assertEqual(201, resp.status_code, resp.text)
        rid = resp.json()['lease']['reservations'][0]['id']
        node, = [s.node for s in db_ledger.slots(STORE, rid)]
        self.set_compute(node, 'disabled')
        self.engine.check_hosts()
        moved, = [s.node for s in db_ledger.slots(STORE, rid)]
        self.assertEqual({'host1', 'host2'} - {node}, {moved})
        self.set_compute(node, 'enabled')

    def forced(self, node: str, flavor: str) -> str:
        """An ordinary server of admin's on `node` (a forced host)."""
        server = self.admin_api.post_server({'server': {
            'name': 'on-' + node, 'imageRef': base.IMAGE,
            'flavorRef': flavor, 'networks': 'none',
            'availability_zone': 'nova:' + node}})
        self.assertEqual(node, self.node_of(server['id']))
        return server['id']

    def test_a_preemptible_server_moves_within_its_cell(self):
        self.capture_notifications()
        fillers = [self.forced(n, base.ONE_PER_NODE)
                   for n in ('host1', 'host3')]
        spot = self.cloud.boot('spot', base.ONE_PER_NODE, {
            'preemptible': 'true'}, None, None).body['server']['id']
        self.assertEqual('host2', self.node_of(spot))
        for uuid in fillers:
            self.admin_api.delete_server(uuid)
            self.wait_gone(uuid)
        # host1, of the other cell, has the most room; host3 has room too.
        self.forced('host3', base.TINY)
        resp = self.rsv('POST', '/leases', base.flavor_lease(amount=1))
        self.assertEqual(201, resp.status_code, resp.text)
        rid = resp.json()['lease']['reservations'][0]['id']
        self.assertEqual(['host2'], [s.node for s in db_ledger.slots(
            STORE, rid)])
        start = epoch.to_epoch(db_leases.get(
            STORE, resp.json()['lease']['id']).start_at)
        for at in (self.clock.now, start - 20 * 60, start - 5 * 60):
            self.clock.now = at
            for _ in range(6):
                self.engine.preempt()
        self.assertEqual('host3', self.node_of(spot))
        self.assertEqual([(spot, 'migrate')], [
            (p['server_id'], p['action'])
            for t, p in self.notified('server.preempt.end')])
