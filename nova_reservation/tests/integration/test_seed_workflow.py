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
and `openstack` CLIs, on a cloud (a lane of it) that is full until a
minute before the start.
"""

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base


class SeedWorkflowTest(base.CloudTestCase):

    def _fill_until(self, end: str) -> list:
        """Immediate leases of whole nodes until no shared node of the
        lane has room now (the lane's flavors keep them on its nodes);
        their servers.
        """
        alice = base.CLOUD.session('alice')
        nova = cloud.url('nova')
        image = self.image_ref()
        busy = []
        for sizes in ('m1.large', 'm1.small', 'm1.tiny'):
            flavor = self.flavor_ref(self.flavor(sizes))
            for i in range(40):
                name = 'busy-%d-%s' % (len(busy), self.suffix)
                resp = alice.post(nova + '/servers', json={
                    'server': dict(name=name, flavorRef=flavor,
                                   imageRef=image, networks='auto'),
                    'os:scheduler_hints': {'lease_params': base.lease_params(
                        name, 'now', end)}},
                    headers={'OpenStack-API-Version': 'compute 2.91'},
                    raise_exc=False)
                if resp.status_code == 409:
                    break
                self.assertEqual(202, resp.status_code, resp.text)
                busy.append(resp.json()['server']['id'])
                self.addCleanup(self.delete_server, busy[-1])
        return busy

    def test_lease_by_nova_boot_and_by_openstack_server_create(self):
        # The fill and its builds take about 20 s, three times that on a
        # busy machine (seen: its leases ended before its third server was
        # waited for, 65 s in): they last two minutes, then the start's
        # builds take a few seconds, and the lease lasts 40 s.
        start, end = base.utc(160), base.utc(200)
        busy = self._fill_until(base.utc(120))
        self.assertTrue(busy)
        self.wait_for('the fill active', lambda: [
            s['status'] for s in self.named('busy-.*-%s$' % self.suffix)] ==
            ['ACTIVE'] * len(busy), timeout=120, interval=2)
        shown = self.nova(
            'alice', 'boot', '--flavor', self.flavor('m1.small'), '--image',
            'cirros', *self.nic('alice'), '--hint', 'lease_params=' +
            base.lease_params('seed-nova-' + self.suffix, start, end),
            'seed-nova-' + self.suffix)
        by_nova = shown['id']
        self.addCleanup(self.delete_server, by_nova)
        self.assertIn('"status": "RESERVED"', shown['reservation'])
        by_osc = self.openstack(
            'alice', 'server', 'create', '--flavor', self.flavor('m1.tiny'),
            '--image', 'cirros', *self.nic('alice'), '--hint',
            'lease_params=' + base.lease_params(
                'seed-osc-' + self.suffix, start, end),
            'seed-osc-' + self.suffix)['id']
        self.addCleanup(self.delete_server, by_osc)
        servers = (by_nova, by_osc)

        # Until the start: RESERVED and offloaded from the first answer,
        # holding nothing in Placement, on no node, with no image.
        admin = base.CLOUD.session('admin')
        for server_id in servers:
            view = self.nova('alice', 'show', server_id)
            self.assertEqual('RESERVED', view['status'])
            self.assertIn('"lease_name": "seed-', view['reservation'])
            self.assertIn('reservation:lease_id', view['metadata'])
            admin_view = self.server(server_id)
            self.assertEqual('shelved_offloaded',
                             admin_view['OS-EXT-STS:vm_state'])
            self.assertIsNone(admin_view['OS-EXT-SRV-ATTR:host'])
            self.assertEqual({}, admin.get(
                cloud.url('placement') + '/allocations/' + server_id
            ).json()['allocations'])
        reserved_on = {
            row['instance_uuid']: row['node'] for row in self.store(
                'SELECT instance_uuid, node FROM rsv_allocations '
                'WHERE instance_uuid IN (%s, %s)', *servers)}
        self.assertEqual(set(servers), set(reserved_on))

        # From the start: ACTIVE on the host the ledger holds for it.
        for server_id in servers:
            active = self.wait_for_server(
                '%s active' % server_id, server_id,
                lambda s: s and s['status'] == 'ACTIVE', timeout=240)
            self.assertEqual(reserved_on[server_id],
                             active['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        # No image of them (other lanes' tests make images meanwhile):
        # Nova names its server in each image it makes of one.
        for server_id in servers:
            self.assertEqual([], admin.get(
                cloud.url('image') + '/v2/images',
                params=dict(instance_uuid=server_id)).json()['images'])
        leases = self.openstack('alice', 'reservation', 'lease', 'list')
        mine = [x for x in leases if x['name'].startswith('seed-') and
                x['name'].endswith(self.suffix)]
        self.assertEqual(2, len(mine))

        # At the end: on_end (delete) ran.
        for server_id in servers:
            self.wait_for_server('%s deleted' % server_id, server_id,
                                 lambda s: s is None, timeout=150)
        for lease in mine:
            self.assertEqual('TERMINATED', self.openstack(
                'alice', 'reservation', 'lease', 'show', lease['id'])[
                'status'])
