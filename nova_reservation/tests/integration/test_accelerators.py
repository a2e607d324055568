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
flavor lands where Placement has its device; a lease of it is refused by
name (a slot holds VCPU, MEMORY_MB and DISK_GB), never accepted and left
to find no device at its start; a lease of a flavor that only requires
a node's trait is placed on that node, and its server booted there.
"""

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

# flavor: (the node that has its device, its resource class).
DEVICES = {'g1.vgpu': ('compute1', 'VGPU'),
           'g1.a100': ('compute2', 'CUSTOM_GPU_A100'),
           'c1.dedicated': ('compute3', 'PCPU')}


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

    def test_each_device_is_booted_where_it_is_and_never_leased(self):
        flavors = {f['name']: f['id'] for f in self.rest(
            cloud.url('nova') + '/flavors')['flavors']}
        self.assertLessEqual(set(DEVICES), set(flavors),
                             'tools/localcloud up --accelerators')
        for flavor, (node, rc) in DEVICES.items():
            name = '%s-%s' % (flavor, self.suffix)
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
            done = self.run_cli(
                'alice', 'openstack', 'reservation', 'lease', 'create',
                '--start-date', base.minutes(60), '--end-date',
                base.minutes(120), '--reservation',
                'resource_type=flavor:instance,flavor_id=%s,amount=1'
                % flavor_id, lease, check=False)
            self.assert_lease_refused(
                done, 'reservations[0].flavor_id', 'flavor %s asks for %s:'
                % (flavor_id, rc), 'which a lease cannot hold')
            self.assert_nothing_written(lease)
            # A boot with lease_params: a 400 naming flavorRef.
            boot = 'leased-' + name
            done = self.run_cli(
                'alice', 'nova', 'boot', '--flavor', flavor, '--image',
                'cirros', '--nic', 'none', '--hint',
                'lease_params=' + base.lease_params(
                    boot, base.utc(3600), base.utc(7200)), boot,
                check=False)
            self.assert_refused(done, '400', 'flavorRef: flavor %s asks '
                                'for %s:' % (flavor_id, rc))
            self.assert_nothing_written(boot)

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
            cloud.url('nova'), flavor['id']), json={'extra_specs': {
                'trait:CUSTOM_GPU_A100': 'required'}})
        resp = base.CLOUD.session('alice').post(base.LEASES, json={
            'name': 'trait-' + self.suffix, 'start_date': base.utc(5),
            'end_date': base.utc(900), 'reservations': [{
                'resource_type': 'flavor:instance',
                'flavor_id': flavor['id'], 'amount': 1,
                'affinity': 'None'}]}, raise_exc=False)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.addCleanup(self.delete_lease, lease['id'])
        rid = lease['reservations'][0]['id']
        self.assertEqual(['compute2'], [r['node'] for r in self.store(
            'SELECT node FROM rsv_allocations WHERE reservation_id = %s '
            'AND deleted = 0', rid)])
        self.wait_for_lease('lease active', lease['id'],
                            lambda x: x and x['status'] == 'ACTIVE',
                            timeout=90, interval=2)
        server_id, = self.boot('alice', 'trait-' + self.suffix, flavor_name,
                               'reservation=' + rid)
        server = self.settled(server_id)
        self.assertEqual('ACTIVE', server['status'], server)
        self.assertEqual('compute2',
                         server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
