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

"""An ordinary boot of a GPU on the scheduler's read of every node's
provider tree: no request to Placement per node, the lease servers'
GPUs counted once, a node the read lacks read on its own.
"""

import datetime

from nova import objects
from nova.scheduler import host_manager
import testtools

from nova_reservation import capacity
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.clients import placement_usage
from nova_reservation import filters
from nova_reservation.filters import extras
from nova_reservation.ledger import memory as ledger_mod

objects.register_all()
NOW = 1_000_000.0
HOUR = 3600.0
GPU = 'CUSTOM_GPU_A100'
NODE = 'c0ffee00-0000-4000-8000-000000000001'
SERVER = 'c0ffee00-0000-4000-8000-00000000aaa1'


def summary(resources: dict, root: str) -> dict:
    return {'root_provider_uuid': root, 'resources': {
        rc: {'capacity': cap, 'used': used}
        for rc, (cap, used) in resources.items()}}


def node_summary(gpus: int, used: int) -> dict:
    return summary({'VCPU': (8, 0), 'MEMORY_MB': (16384, 0),
                    'DISK_GB': (100, 0), GPU: (gpus, used)}, NODE)


class _Placement:
    """Placement's answers: the summaries of the usage read; the node's
    tree (its provider alone, 2 GPUs, `used` by another server) for a
    read of the node alone.  Counts the requests.
    """

    def __init__(self, summaries: dict, used: int = 0) -> None:
        self.summaries = summaries
        # {class: the summaries of its candidates} beyond vCPU's.
        self.by_class: dict = {}
        self.used = used
        self.asked: list = []

    def get(self, url: str, version: str):
        self.asked.append(url)
        if url == '/allocation_candidates?resources=VCPU:1':
            body = {'provider_summaries': self.summaries}
        elif url.startswith('/allocation_candidates?resources='):
            rc = url.split('=')[1].split(':')[0]
            body = {'provider_summaries': self.by_class.get(rc, {})}
        elif url.startswith('/resource_providers?in_tree='):
            body = {'resource_providers': [{'uuid': NODE}]}
        elif url.endswith('/inventories'):
            body = {'inventories': {GPU: {'total': 2}}}
        else:
            body = {'allocations': {'other': {'resources': {
                GPU: self.used}}} if self.used else {}}
        return type('Response', (), dict(
            status_code=200, url=url, json=lambda _: body))()


def host_state(instances=()) -> host_manager.HostState:
    state = host_manager.HostState('n1', 'n1', 'cell')
    state.update(compute=objects.ComputeNode(
        uuid=NODE, id=1, host='n1', hypervisor_hostname='n1', vcpus=8,
        vcpus_used=1, memory_mb=16384, memory_mb_used=512, free_ram_mb=15872,
        local_gb=100, local_gb_used=1, free_disk_gb=99,
        disk_available_least=99, updated_at=datetime.datetime(
            2026, 1, 1, tzinfo=datetime.timezone.utc),
        host_ip='127.0.0.1', hypervisor_type='fake', hypervisor_version=1,
        numa_topology=None, supported_hv_specs=[], pci_device_pools=None,
        cpu_info='{}', stats=None, metrics=None, cpu_allocation_ratio=1.0,
        ram_allocation_ratio=1.0, disk_allocation_ratio=1.0),
        aggregates=[], inst_dict={})
    flavor = objects.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                            ephemeral_gb=0, swap=0)
    state.instances = {u: objects.Instance(uuid=u, flavor=flavor)
                       for u in instances}
    return state


def gpu_boot(**extra_specs) -> objects.RequestSpec:
    flavor = objects.Flavor(id=1, flavorid='1', name='g', vcpus=1,
                            memory_mb=512, root_gb=1, ephemeral_gb=0, swap=0,
                            extra_specs=extra_specs or {
                                'resources:' + GPU: '1'})
    return objects.RequestSpec(
        project_id='p', user_id='u', flavor=flavor, num_instances=1,
        scheduler_hints={}, instance_group=None, numa_topology=None,
        pci_requests=None)


def view(start: float = NOW + HOUR, server=None,
         gpus: int = 1) -> ledger_mod.View:
    """`gpus` promised on n1 from `start` for an hour (to `server`)."""
    slot = capacity.Slot(1, 'r1', 'n1', start, start + HOUR,
                         capacity.Resources(1, 512, 1), server,
                         capacity.extras({('', GPU): gpus}))
    bound = {server: slot.resources} if server else {}
    return ledger_mod.View(timelines={'n1': timeline_mod.Timeline([slot])},
                           bound=bound)


class TreeCountsTest(testtools.TestCase):

    def test_a_tree_s_classes_are_summed_and_ironic_s_left_out(self):
        used, found = placement_usage.tree_counts({
            'root': summary({'VCPU': (8, 2), 'MEMORY_MB': (1024, 0),
                             'DISK_GB': (10, 0), GPU: (2, 1)}, 'root'),
            'pgpu1': summary({'VGPU': (4, 1)}, 'root'),
            'pgpu2': summary({'VGPU': (4, 2)}, 'root'),
            # Ironic's unit, reserved while its server holds it.
            'ironic': summary({'CUSTOM_BAREMETAL_GOLD': (0, 1)}, 'ironic')})
        self.assertEqual({'root': (capacity.Resources(8, 1024, 10),
                                   capacity.Resources(2, 0, 0))}, used)
        self.assertEqual({'root': {GPU: (2, 1), 'VGPU': (8, 3)}}, found)

    def test_the_rule_counts_boots_in_flight_and_lease_servers_apart(self):
        promised = {('', GPU): 1}
        wanted = capacity.extras({('', GPU): 1})
        counts = {GPU: (3, 1)}
        self.assertTrue(extras.fits(wanted, promised, lambda: counts))
        self.assertFalse(extras.fits(wanted, promised, lambda: counts,
                                     pending=wanted))
        self.assertTrue(extras.fits(wanted, promised, lambda: counts,
                                    pending=wanted, apart={GPU: 1}))
        # A class nothing promises is Placement's alone: not read.
        self.assertTrue(extras.fits(capacity.extras({('', 'VGPU'): 9}),
                                    promised, lambda: 1 / 0))


class GPUBootTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.placement = _Placement({NODE: node_summary(2, 0)})
        self.usage = placement_usage.Usage(lambda: self.placement)
        self.usage.refresh()
        self.filter = filters.ReservationFilter(
            ledger=object(), clock=lambda: NOW, usage=self.usage)
        self.placement.asked.clear()

    def passes(self, ledger, state=None, spec=None) -> bool:
        return bool(self.filter._ordinary(ledger, spec or gpu_boot(),
                                          [state or host_state()]))

    def test_the_read_of_every_node_serves_without_a_request(self):
        self.assertTrue(self.passes(view()))
        self.placement.summaries = {NODE: node_summary(2, 1)}
        self.usage.refresh()
        self.placement.asked.clear()
        # 2 GPUs, one used, one promised: none left.
        self.assertFalse(self.passes(view()))
        self.assertEqual([], self.placement.asked)

    def test_a_new_ledger_or_a_new_read_is_seen_next_request(self):
        self.assertTrue(self.passes(view()))
        self.assertFalse(self.passes(view(gpus=2)))
        self.assertTrue(self.passes(view()))
        self.placement.summaries = {NODE: node_summary(3, 0)}
        self.usage.refresh()
        self.assertTrue(self.passes(view(gpus=2)))

    def test_a_running_lease_server_s_gpu_is_counted_once(self):
        # The lease's server runs on n1 and uses its promised GPU.
        self.placement.summaries = {NODE: node_summary(2, 1)}
        self.usage.refresh()
        ledger = view(start=NOW - 60, server=SERVER)
        self.assertTrue(self.passes(ledger, host_state([SERVER])))
        # A host state that does not know the server yet counts it twice.
        self.assertFalse(self.passes(ledger, host_state()))

    def test_a_node_the_read_lacks_is_read_on_its_own(self):
        # No room for a vCPU at the read, say: not among its summaries.
        self.placement.summaries = {}
        self.usage.refresh()
        self.placement.asked.clear()
        self.assertTrue(self.passes(view()))
        self.assertEqual('/resource_providers?in_tree=' + NODE,
                         self.placement.asked[0])
        self.placement.used = 1
        self.assertFalse(self.passes(view()))

    def test_a_boot_of_no_vcpu_has_its_class_read_from_then_on(self):
        # The node's unit of its class (as an Ironic node has it) is the
        # GPU here; a boot that asks for it and for no vCPU.
        bare_metal = gpu_boot(**{'resources:' + GPU: '1',
                                 'resources:VCPU': '0',
                                 'resources:MEMORY_MB': '0',
                                 'resources:DISK_GB': '0'})
        self.placement.summaries = {}
        self.usage.refresh()
        # A boot that asks for vCPU too: its nodes are vCPU candidates.
        self.assertTrue(self.passes(view()))
        self.assertEqual(frozenset(), self.usage.classes)
        self.assertTrue(self.passes(view(), spec=bare_metal))
        self.assertEqual(frozenset([GPU]), self.usage.classes)
        self.placement.by_class[GPU] = {NODE: summary({GPU: (2, 0)}, NODE)}
        self.placement.asked.clear()
        self.usage.refresh()
        self.assertEqual(['/allocation_candidates?resources=VCPU:1',
                          '/allocation_candidates?resources=%s:1' % GPU],
                         self.placement.asked)
        self.placement.asked.clear()
        self.assertTrue(self.passes(view(), spec=bare_metal))
        self.assertEqual([], self.placement.asked)
