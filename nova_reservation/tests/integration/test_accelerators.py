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

"""Nodes that report accelerators as real ones do, through Nova's own
mechanisms (``tools/localcloud up --accelerators``): compute1 two physical
GPUs of VGPU on child providers, compute2 CUSTOM_GPU_A100 from a provider
config file, compute3 dedicated CPUs (PCPU). An ordinary boot of each
flavor lands where Placement has its device; a lease of each (the vGPUs
of compute1's physical GPUs counted over both, the A100s, PCPU) is placed
on that node beside what ordinary servers use and never past it, and its
server booted there with its device (a vGPU from one of the GPUs); a
lease of a flavor that only requires a node's trait is placed on that
node, and its server booted there.
"""

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

# flavor: (the node that has its device, its resource class, how many
# servers of it the node holds), as named on a cloud of one lane.
DEVICES = {'g1.vgpu': ('compute1', 'VGPU', 2),
           'g1.a100': ('compute2', 'CUSTOM_GPU_A100', 2),
           'c1.dedicated': ('compute3', 'PCPU', 2)}


class AcceleratorTest(base.BlazarCLI):

    def allocations(self, server_id: str) -> dict:
        """{provider name: its resources} of the server's allocations."""
        admin = base.CLOUD.session('admin')
        headers = {'OpenStack-API-Version': 'placement 1.14'}
        found = admin.get('%s/allocations/%s' % (
            cloud.url('placement'), server_id),
            headers=headers).json()['allocations']
        return {admin.get('%s/resource_providers/%s' % (
            cloud.url('placement'), uuid), headers=headers).json()['name']:
            allocation['resources'] for uuid, allocation in found.items()}

    def lease_cli(self, name: str, flavor_id: str, amount: int):
        return self.run_cli(
            'alice', 'openstack', 'reservation', 'lease', 'create',
            '--start-date', base.minutes(60), '--end-date',
            base.minutes(120), '--reservation',
            'resource_type=flavor:instance,flavor_id=%s,amount=%d'
            % (flavor_id, amount), name, '-f', 'json', check=False)

    def test_each_device_is_booted_where_it_is_and_leased_there(self):
        flavors = {f['name']: f['id'] for f in self.rest(
            cloud.url('nova') + '/flavors')['flavors']}
        self.assertLessEqual(set(map(self.flavor, DEVICES)), set(flavors),
                             'tools/localcloud up --accelerators')
        for flavor, (node, rc, holds) in DEVICES.items():
            name = '%s-%s' % (flavor, self.suffix)
            # This lane's copy of the flavor, booted on this lane's node.
            flavor, node = self.flavor(flavor), self.node(node)
            server_id, = self.boot('alice', name, flavor)
            server = self.settled(server_id)
            self.assertEqual('ACTIVE', server['status'], server)
            self.assertEqual(node, server[
                'OS-EXT-SRV-ATTR:hypervisor_hostname'])
            used = self.allocations(server_id)
            if rc == 'VGPU':
                # From one physical GPU, a child of the node.
                gpu, = (p for p in used if p != node)
                self.assertTrue(gpu.startswith(node + '_pgpu'), used)
                self.assertEqual({rc: 1}, used[gpu])
            else:
                self.assertEqual(1 if rc != 'PCPU' else 2, used[node][rc])
            flavor_id = flavors[flavor]
            lease = 'lease-' + name
            # The rest of the node's devices, beside the ordinary server:
            # all of them, and not one more.
            done = self.lease_cli(lease + '-more', flavor_id, holds)
            self.assert_lease_refused(done, 'Not enough capacity',
                                      '%s:' % rc)
            self.assert_nothing_written(lease + '-more')
            done = self.lease_cli(lease, flavor_id, holds - 1)
            self.assertEqual(0, done.returncode, done.stderr)
            lease_id = base.parse_json(done.stdout)['id']
            self.addCleanup(self.delete_lease, lease_id)
            self.assertEqual([(node, rc)] * (holds - 1), [
                (row['node'], rc) for row in self.store(
                    'SELECT a.node, a.extras FROM rsv_allocations a JOIN '
                    'rsv_reservations r ON a.reservation_id = r.id WHERE '
                    'r.lease_id = %s AND a.deleted = 0', lease_id)
                if rc in row['extras']])

    def test_a_lease_of_a_node_s_trait_is_placed_and_booted_there(self):
        # compute2 has the trait CUSTOM_GPU_A100 from its provider config
        # file: a flavor that requires the trait (and no GPU) is leased
        # there, as Placement would place its server.
        admin = self.admin_session()
        flavor_name = 't1.a100-node-' + self.suffix
        flavor = admin.post(cloud.url('nova') + '/flavors', json={
            'flavor': {'name': flavor_name, 'vcpus': 1, 'ram': 512,
                       'disk': 1}}).json()['flavor']
        self.addCleanup(self.delete, 'compute', '/flavors/' + flavor['id'])
        admin.post('%s/flavors/%s/os-extra_specs' % (
            cloud.url('nova'), flavor['id']), json={'extra_specs': dict(
                {'trait:CUSTOM_GPU_A100': 'required'}, **self.lane_specs())})
        self.booted_into_a_lease('trait-' + self.suffix, flavor['id'],
                                 flavor_name, self.node('compute2'))

    def test_a_lease_of_a_gpu_is_booted_with_its_gpu(self):
        flavors = {f['name']: f['id'] for f in self.rest(
            cloud.url('nova') + '/flavors')['flavors']}
        flavor, node = self.flavor('g1.a100'), self.node('compute2')
        server_id = self.booted_into_a_lease(
            'gpu-' + self.suffix, flavors[flavor], flavor, node)
        self.assertEqual(1, self.allocations(server_id)[node][
            'CUSTOM_GPU_A100'])

    def test_a_lease_of_a_vgpu_is_booted_with_one_of_a_gpu(self):
        flavors = {f['name']: f['id'] for f in self.rest(
            cloud.url('nova') + '/flavors')['flavors']}
        flavor, node = self.flavor('g1.vgpu'), self.node('compute1')
        server_id = self.booted_into_a_lease(
            'vgpu-' + self.suffix, flavors[flavor], flavor, node)
        used = self.allocations(server_id)
        gpu, = (p for p in used if p != node)
        self.assertTrue(gpu.startswith(node + '_pgpu'), used)
        self.assertEqual({'VGPU': 1}, used[gpu])

    def booted_into_a_lease(self, name: str, flavor_id: str,
                            flavor_name: str, node: str) -> str:
        """A server booted into a lease of one server of the flavor that
        starts at once, its slot and its server on `node`: its id.
        """
        resp = base.CLOUD.session('alice').post(base.LEASES, json={
            'name': name, 'start_date': base.utc(5),
            'end_date': base.utc(900), 'reservations': [{
                'resource_type': 'flavor:instance', 'flavor_id': flavor_id,
                'amount': 1, 'affinity': 'None'}]}, raise_exc=False)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.addCleanup(self.delete_lease, lease['id'])
        rid = lease['reservations'][0]['id']
        self.assertEqual([node], [r['node'] for r in self.store(
            'SELECT node FROM rsv_allocations WHERE reservation_id = %s '
            'AND deleted = 0', rid)])
        self.wait_for_lease('lease active', lease['id'],
                            lambda x: x and x['status'] == 'ACTIVE',
                            timeout=90, interval=2)
        server_id, = self.boot('alice', name, flavor_name,
                               'reservation=' + rid)
        server = self.settled(server_id)
        self.assertEqual('ACTIVE', server['status'], server)
        self.assertEqual(node, server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        return server_id
