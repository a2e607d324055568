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

"""What a server of a flavor takes, as Nova's own `ResourceRequest` asks
Placement for it, and what a lease's slot cannot hold.
"""

from nova import objects
import testtools

from nova_reservation import capacity
from nova_reservation.clients import flavors
from nova_reservation.engine import preemption
from nova_reservation import exception

objects.register_all()

REFUSAL = ('asks for %s, which a lease cannot hold (a slot holds classes '
           "of its node's provider tree, asked for outside of numbered "
           'request groups)')


def flavor(vcpus=2, memory_mb=2048, root_gb=20, ephemeral_gb=0, swap=0,
           **extra_specs) -> objects.Flavor:
    return objects.Flavor(id=1, flavorid='f1', name='f1', vcpus=vcpus,
                          memory_mb=memory_mb, root_gb=root_gb,
                          ephemeral_gb=ephemeral_gb, swap=swap,
                          extra_specs=extra_specs)


class NeedTest(testtools.TestCase):

    def assert_refused(self, named: str, **extra_specs) -> None:
        e = self.assertRaises(exception.Uncounted, flavors.need,
                              flavor(**extra_specs))
        self.assertEqual(REFUSAL % named, str(e))

    def assert_need(self, resources, flavor, volume_backed=False,
                    traits=()) -> None:
        self.assertEqual(capacity.Need(capacity.Resources(*resources),
                                       traits),
                         flavors.need(flavor, volume_backed))

    def test_the_standard_classes_of_a_flavor(self):
        self.assert_need((2, 2048, 20), flavor())
        # Swap in whole GB, rounded up; ephemeral disk with the root.
        self.assert_need((2, 2048, 26), flavor(ephemeral_gb=5, swap=513))
        # From a volume: none of the node's disk for the root.
        self.assert_need((2, 2048, 5), flavor(ephemeral_gb=5), True)
        self.assert_need((2, 2048, 0), flavor(), True)

    def test_extra_specs_override_the_flavor_s_numbers(self):
        self.assert_need((0, 2048, 20), flavor(**{'resources:VCPU': '0'}))
        self.assert_need((2, 1024, 0), flavor(**{
            'resources:MEMORY_MB': '1024', 'resources:DISK_GB': '0'}))
        # A numbered group's standard classes are the node's too.
        self.assert_need((3, 2048, 20), flavor(**{'resources1:VCPU': '3'}))
        # Keys Placement is not asked about change nothing.
        self.assert_need((2, 2048, 20), flavor(**{
            'hw:cpu_policy': 'shared', 'quota:cpu_shares': '2048',
            'group_policy': 'none'}))

    def test_traits_are_those_nova_asks_the_node_for(self):
        # Required and forbidden, of any group: the groups' resources are
        # the node's own, so are their traits.
        self.assert_need((2, 2048, 20), flavor(**{
            'trait:CUSTOM_GOLD': 'required',
            'trait1:CUSTOM_SLOW': 'forbidden', 'resources1:VCPU': '1',
            'resources:VCPU': '1'}),
            traits=('!CUSTOM_SLOW', 'CUSTOM_GOLD'))
        # Extra specs that Nova turns into traits.
        self.assert_need((2, 2048, 20), flavor(**{
            'hw:tpm_version': '2.0', 'hw:tpm_model': 'tpm-crb'}),
            traits=('COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_CRB'))

    def assert_extras(self, extras: dict, **extra_specs) -> None:
        self.assertEqual(capacity.extras(
            {('', rc): n for rc, n in extras.items()}),
            flavors.need(flavor(**extra_specs)).extras)

    def test_classes_beyond_a_slot_s_three_are_its_node_s_extras(self):
        self.assert_extras({'CUSTOM_GPU_A100': 1}, **{
            'resources:CUSTOM_GPU_A100': '1'})
        self.assert_extras({'VGPU': 1}, **{'resources:VGPU': '1'})
        # Dedicated CPUs are PCPU in Placement, not VCPU.
        self.assert_extras({'PCPU': 2}, **{'hw:cpu_policy': 'dedicated'})
        self.assertEqual((0, 2048, 20), flavors.need(flavor(**{
            'hw:cpu_policy': 'dedicated'})).resources)
        # Bare metal: one unit of the node's class, none of the others.
        self.assertEqual(capacity.Need(capacity.ZERO, (), capacity.extras(
            {('', 'CUSTOM_BAREMETAL_GOLD'): 1})), flavors.need(flavor(**{
                'resources:CUSTOM_BAREMETAL_GOLD': '1',
                'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                'resources:DISK_GB': '0'})))
        self.assert_extras({}, **{'hw:cpu_policy': 'shared'})

    def test_what_a_slot_cannot_hold_is_named(self):
        # A numbered group may be given a child provider's class.
        self.assert_refused('VGPU:1 in request group 1, VGPU:1 in request '
                            'group 2', **{
                                'resources1:VGPU': '1',
                                'resources2:VGPU': '1',
                                'group_policy': 'isolate'})
        # Devices that Nova asks for outside of Placement.
        self.assert_refused('PCI devices a100:2', **{
            'pci_passthrough:alias': 'a100:2'})
        self.assert_refused('Cyborg device profile fpga', **{
            'accel:device_profile': 'fpga'})

    def test_a_flavor_nova_refuses_without_an_image(self):
        # Memory encryption needs an image with UEFI firmware: no slot
        # can be planned for it.
        e = self.assertRaises(exception.Uncounted, flavors.need, flavor(**{
            'hw:mem_encryption': 'true'}))
        self.assertTrue(str(e).startswith('is refused by Nova: '), e)

    def test_an_ordinary_boot_counts_a_pinned_server_s_cpus_as_vcpus(self):
        # Nova asks for them as VCPU where no node has PCPU for it.
        dedicated = flavor(**{'hw:cpu_policy': 'dedicated'})
        self.assertEqual((2, 2048, 20), flavors.counted(dedicated))
        self.assertEqual((2, 2048, 0), flavors.counted(dedicated, True))
        self.assertEqual((0, 2048, 20), flavors.counted(flavor(**{
            'resources:VCPU': '0', 'resources:VGPU': '1'})))
        self.assertEqual((2, 2048, 20), flavors.need_of_request(
            objects.RequestSpec(
                flavor=dedicated, is_bfv=False, requested_resources=[],
                image=objects.ImageMeta(
                    properties=objects.ImageMetaProps()))))

    def test_the_engine_reads_a_server_s_embedded_flavor_so(self):
        # A preemptible server is unshelved where what it takes fits: as
        # the filter counts it, from the flavor its API view embeds.
        embedded = {'vcpus': 4, 'ram': 2048, 'disk': 20, 'ephemeral': 5,
                    'swap': 1024, 'original_name': 'f1',
                    'extra_specs': {'resources:VCPU': '1'}}
        self.assertEqual(((1, 2048, 26), ()), preemption._asks(
            {'flavor': embedded, 'image': {'id': 'i'}}))
        self.assertEqual((1, 2048, 6), preemption._asks(
            {'flavor': embedded, 'image': ''})[0])
        self.assertEqual((4, 2048, 0), preemption._asks({'flavor': dict(
            embedded, ephemeral=0, swap='', extra_specs={
                'hw:cpu_policy': 'dedicated'}), 'image': ''})[0])
        # And the traits its node must have, and not have.
        self.assertEqual(('!CUSTOM_OLD', 'CUSTOM_GOLD'), tuple(sorted(
            preemption._asks({'flavor': dict(embedded, extra_specs={
                'trait:CUSTOM_GOLD': 'required',
                'trait:CUSTOM_OLD': 'forbidden'}), 'image': ''})[1])))

    def test_a_finder_reads_each_flavor_once(self):
        read = []

        def find(ctx, flavor_id):
            read.append(flavor_id)
            return {'plain': flavor(),
                    'pci': flavor(**{'pci_passthrough:alias': 'a:1'}),
                    }.get(flavor_id)
        self.patch(flavors, 'find', find)
        need = flavors.need_finder(None)
        for _ in range(2):
            self.assertEqual((2, 2048, 20), need('plain').resources)
            self.assertIsNone(need('gone'))
            e = self.assertRaises(exception.Uncounted, need, 'pci')
            self.assertEqual(REFUSAL % 'PCI devices a:1', str(e))
        self.assertEqual(['plain', 'gone', 'pci'], read)

    def test_a_scheduler_request_counts_the_standard_classes(self):
        # What a GPU boot takes of the node beside its GPU, and a port's
        # bandwidth from the network's providers is not the node's.
        port = objects.RequestGroup(
            requester_id='port-1', resources={
                'NET_BW_EGR_KILOBIT_PER_SEC': 1000})
        spec_obj = objects.RequestSpec(
            flavor=flavor(**{'resources:VGPU': '1',
                             'resources:VCPU': '1'}),
            is_bfv=False, requested_resources=[port],
            image=objects.ImageMeta(properties=objects.ImageMetaProps()))
        self.assertEqual((1, 2048, 20), flavors.need_of_request(spec_obj))


class CountedTest(testtools.TestCase):
    """The pure part, in `capacity`."""

    def test_counted_and_uncounted(self):
        self.assertEqual((4, 8, 0), capacity.counted({
            'VCPU': 4, 'MEMORY_MB': 8, 'VGPU': 1}))
        self.assertEqual(((4, 8, 1), ()), capacity.need_of({
            'VCPU': 4, 'MEMORY_MB': 8, 'DISK_GB': 1, 'VGPU': 0}))
        self.assertEqual(((1, 0, 0), capacity.extras({
            ('', 'CUSTOM_A'): 2, ('', 'VGPU'): 1})), capacity.need_of(
            {'VCPU': 1, 'VGPU': 1, 'CUSTOM_A': 2}))
        e = self.assertRaises(exception.Uncounted, capacity.need_of,
                              {'VCPU': 1, 'VGPU': 1, 'CUSTOM_A': 2},
                              ['member_of=in:agg1'])
        self.assertEqual(REFUSAL % 'member_of=in:agg1', str(e))

    def test_a_node_s_traits(self):
        host = capacity.Host('n1', capacity.ZERO,
                             traits=frozenset({'CUSTOM_GOLD', 'HW_X'}))
        self.assertTrue(capacity.has_traits(host, ()))
        self.assertTrue(capacity.has_traits(host, ('CUSTOM_GOLD',
                                                   '!CUSTOM_SLOW')))
        self.assertFalse(capacity.has_traits(host, ('CUSTOM_SILVER',)))
        self.assertFalse(capacity.has_traits(host, ('CUSTOM_GOLD',
                                                    '!HW_X')))
        # What a reservation's nodes were chosen for assures a boot.
        self.assertTrue(capacity.assures(('CUSTOM_GOLD', '!HW_Y'),
                                         ('CUSTOM_GOLD',)))
        self.assertTrue(capacity.assures((), ()))
        self.assertFalse(capacity.assures((), ('CUSTOM_GOLD',)))
        self.assertFalse(capacity.assures(('CUSTOM_GOLD',), ('!HW_Y',)))

    def test_a_node_s_unit_bounds(self):
        # Placement gives a server 2 to 8 vCPUs in steps of 2, any RAM,
        # disk in steps of 10 GB; a class not asked for is not bounded.
        host = capacity.Host('n1', capacity.Resources(32, 4096, 100),
                             units=(capacity.Resources(2, 1, 1),
                                    capacity.Resources(8, 4096, 100),
                                    capacity.Resources(2, 1, 10)))
        for need, taken in (((2, 512, 10), True), ((8, 4096, 100), True),
                            ((0, 512, 0), True), ((1, 512, 10), False),
                            ((3, 512, 10), False), ((10, 512, 10), False),
                            ((4, 512, 15), False), ((4, 5000, 0), False)):
            self.assertEqual(taken, capacity.takes(
                host, capacity.Resources(*need)), need)
        self.assertTrue(capacity.takes(capacity.Host('n2', capacity.ZERO),
                                       capacity.Resources(99, 1, 1)))
        self.assertFalse(capacity.may_hold(host, capacity.Need(
            capacity.Resources(2, 512, 10), ('CUSTOM_GOLD',))))
        self.assertTrue(capacity.may_hold(host, capacity.Need(
            capacity.Resources(2, 512, 10), ('!CUSTOM_GOLD',))))
