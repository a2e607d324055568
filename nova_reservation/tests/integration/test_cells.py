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

"""Leases on a cloud of two cells (``tools/localcloud up --cells 2``:
compute2 is cell2's, with its own database, message queue and
conductor): a reserved server is made and built in the cell of its slot's
node, and a waiting boot lease is placed only in the cell its server
waits in.
"""

import json
import os

from nova_reservation.tests.integration import base

NODE = 'resource_type=virtual:instance,vcpus=4,memory_mb=8192,' \
       'disk_gb=80,amount=1,affinity=None'


def cells() -> int:
    """How many cells the running local cloud has."""
    try:
        with open(os.path.join(base.CLOUD.base, 'state.json')) as f:
            return json.load(f).get('cells', 1)
    except OSError:
        return 1


class TwoCellsTest(base.CloudTestCase):

    def setUp(self) -> None:
        super().setUp()
        if cells() < 2:
            self.skipTest('the local cloud has one cell')

    def cell_of(self, server_id: str) -> str:
        found, = self.store(
            'SELECT c.name FROM instance_mappings m JOIN cell_mappings c ON '
            'c.id = m.cell_id WHERE m.instance_uuid = %s', server_id)
        return found['name']

    def fill(self) -> dict:
        """{node: the id of admin's lease that takes all of it from now
        for half an hour}, a lease per node of this lane.
        """
        by_node = {}
        for i in range(3):
            lease = self.openstack(
                'admin', 'reservation', 'lease', 'create', '--end-date',
                base.minutes(30), '--reservation',
                NODE + ',resource_properties=' + self.on_lane(),
                'full%d-%s' % (i, self.suffix))
            self.addCleanup(self.delete_lease, lease['id'])
            node, = [r['node'] for r in self.store(
                'SELECT s.node FROM rsv_allocations s JOIN rsv_reservations '
                'r ON r.id = s.reservation_id WHERE r.lease_id = %s AND NOT '
                's.deleted', lease['id'])]
            by_node[node] = lease['id']
        self.assertEqual(set(map(self.node, ('compute1', 'compute2',
                                             'compute3'))), set(by_node))
        return by_node

    def free(self, lease_id: str) -> None:
        """Delete the lease; once its slots are gone."""
        self.delete_lease(lease_id)
        self.wait_for('lease %s deleted' % lease_id, lambda: not self.store(
            'SELECT s.id FROM rsv_allocations s JOIN rsv_reservations r ON '
            'r.id = s.reservation_id WHERE r.lease_id = %s AND NOT '
            's.deleted', lease_id), timeout=60, interval=2)

    def boot(self, name: str, start: int, **extra) -> dict:
        server = self.openstack(
            'alice', 'server', 'create', '--flavor', self.flavor('m1.large'),
            '--image', 'cirros', '--nic', 'none', '--hint', 'lease_params=' +
            base.lease_params(name, base.utc(start), base.utc(900), **extra),
            name)
        self.addCleanup(self.delete_server, server['id'])
        return server

    def lease_of(self, server_id: str) -> dict:
        row, = self.store(
            'SELECT l.* FROM rsv_leases l JOIN rsv_server_bindings b ON '
            'b.lease_id = l.id WHERE b.instance_uuid = %s', server_id)
        return row

    def assert_runs_on(self, server_id: str, node: str) -> None:
        shown = self.wait_for_server(
            '%s active' % server_id, server_id, lambda s: s and s[
                'status'] in ('ACTIVE', 'ERROR'), timeout=300)
        self.assertEqual(('ACTIVE', node), (
            shown['status'], shown['OS-EXT-SRV-ATTR:hypervisor_hostname']))

    def test_a_reserved_server_is_built_in_its_node_s_cell(self):
        full = self.fill()
        self.free(full[self.node('compute2')])
        server = self.boot('cell2-' + self.suffix, 30)
        self.assertEqual('cell2', self.cell_of(server['id']))
        self.assert_runs_on(server['id'], self.node('compute2'))

    def test_a_waiting_boot_is_placed_in_its_server_s_cell(self):
        full = self.fill()
        # Its start leaves room for the tries below (wait_interval 10 s):
        # past it, a waiting lease is refused.
        server = self.boot('patient-' + self.suffix, 100, if_busy='wait')
        lease = self.lease_of(server['id'])
        self.assertEqual('WAITING', lease['status'])
        # cell1 has two of the three nodes.
        self.assertEqual('cell1', self.cell_of(server['id']))
        # Room on compute2, of cell2, only: tried, and still waiting.
        self.free(full[self.node('compute2')])
        tries = lease['tries'] or 0
        self.wait_for('two more tries', lambda: (self.lease_of(
            server['id'])['tries'] or 0) >= tries + 2, timeout=90)
        self.assertEqual('WAITING', self.lease_of(server['id'])['status'])
        # Room in its cell: placed there, and built there at its start.
        self.free(full[self.node('compute1')])
        self.wait_for('the waiting lease placed', lambda: self.lease_of(
            server['id'])['status'] == 'PENDING', timeout=90)
        self.assert_runs_on(server['id'], self.node('compute1'))
