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
to find no device at its start.
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
