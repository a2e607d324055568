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

"""The seed workflow: a lease made by a boot hint, with the real `nova`
and `openstack` CLIs.
"""

from nova_reservation.tests.integration import base


class SeedWorkflowTest(base.CloudTestCase):

    def test_lease_by_nova_boot_and_by_openstack_server_create(self):
        start, end = base.utc(60), base.utc(120)
        shown = self.nova(
            'alice', 'boot', '--flavor', 'm1.small', '--image', 'cirros',
            '--nic', 'none', '--hint', 'lease_params=' + base.lease_params(
                'seed-nova-' + self.suffix, start, end),
            'seed-nova-' + self.suffix)
        by_nova = shown['id']
        self.addCleanup(self.delete_server, by_nova)
        self.assertIn('"status": "RESERVED"', shown['reservation'])
        by_osc = self.openstack(
            'alice', 'server', 'create', '--flavor', 'm1.tiny', '--image',
            'cirros', '--nic', 'none', '--hint', 'lease_params=' +
            base.lease_params('seed-osc-' + self.suffix, start, end),
            'seed-osc-' + self.suffix)['id']
        self.addCleanup(self.delete_server, by_osc)
        servers = (by_nova, by_osc)

        # Until the start: RESERVED, shelved and offloaded, holding nothing.
        for server_id in servers:
            self.wait_for('%s offloaded' % server_id, lambda: self.server(
                server_id)['OS-EXT-STS:vm_state'] == 'shelved_offloaded')
            view = self.nova('alice', 'show', server_id)
            self.assertEqual('RESERVED', view['status'])
            self.assertIn('"lease_name": "seed-', view['reservation'])
            self.assertIn('reservation:lease_id', view['metadata'])
            self.assertIsNone(self.server(server_id)['OS-EXT-SRV-ATTR:host'])
        reserved_on = {
            row['instance_uuid']: row['node'] for row in self.store(
                'SELECT instance_uuid, node FROM rsv_allocations '
                'WHERE instance_uuid IN (%s, %s)', *servers)}
        self.assertEqual(set(servers), set(reserved_on))

        # From the start: ACTIVE on the host the ledger holds for it.
        for server_id in servers:
            active = self.wait_for('%s active' % server_id, lambda: (
                self.server(server_id)['status'] == 'ACTIVE' and
                self.server(server_id)), timeout=150)
            self.assertEqual(reserved_on[server_id],
                             active['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        leases = self.openstack('alice', 'reservation', 'lease', 'list')
        mine = [x for x in leases if x['name'].endswith(self.suffix)]
        self.assertEqual(2, len(mine))

        # At the end: on_end (delete) ran.
        for server_id in servers:
            self.wait_for('%s deleted' % server_id,
                          lambda: self.server(server_id) is None,
                          timeout=150)
        for lease in mine:
            self.assertEqual('TERMINATED', self.openstack(
                'alice', 'reservation', 'lease', 'show', lease['id'])[
                'status'])
