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

"""The host view of a cloud of like nodes holds what they repeat once:
every nova-api process holds a view of every node and its providers.
"""

import gc
import tracemalloc
import types

import testtools

from nova_reservation.clients import placement


def _answer(body) -> types.SimpleNamespace:
    """An answer of Placement's, as the report client gives it."""
    return types.SimpleNamespace(status_code=200, url='', json=lambda: body)


class LikeNodes:
    """`count` GPU nodes as Nova reports them: a root of vCPU, RAM, disk
    and A100s, and a child of vGPUs (a physical GPU); one server on each.
    Each answer is new, as Placement's are.
    """

    def __init__(self, count: int) -> None:
        self.roots = ['rp%04d' % i for i in range(count)]

    def get(self, url, version=None):
        if url == '/resource_providers':
            return _answer({'resource_providers': [
                dict(uuid=uuid, name=name, generation=1,
                     root_provider_uuid=root)
                for root in self.roots
                for uuid, name in ((root, 'node-' + root),
                                   (root + '-gpu', root + '_pgpu0'))]})
        uuid = url.split('/')[2]
        child = uuid.endswith('-gpu')
        if url.endswith('/traits'):
            return _answer({'traits': ['CUSTOM_NVIDIA_A2'] if child else
                            ['COMPUTE_NODE', 'HW_CPU_X86_AVX2']})
        if url.endswith('/allocations'):
            return _answer({'allocations': {} if child else {
                'vm-' + uuid: {'resources': {'VCPU': 2,
                                             'MEMORY_MB': 2048}}}})
        if child:
            return _answer({'inventories': {'VGPU': dict(
                total=8, reserved=0, allocation_ratio=1.0, min_unit=1,
                max_unit=8, step_size=1)}})
        return _answer({'inventories': {
            rc: dict(total=total, reserved=reserved, allocation_ratio=ratio,
                     min_unit=1, max_unit=total, step_size=1)
            for rc, total, reserved, ratio in (
                ('VCPU', 64, 0, 4.0), ('MEMORY_MB', 524288, 512, 1.0),
                ('DISK_GB', 2000, 0, 1.0), ('CUSTOM_GPU_A100', 8, 0, 1.0))}})


class LikeNodesTest(testtools.TestCase):

    def test_like_providers_share_what_they_repeat(self):
        view = placement.HostView(lambda uuids: set())
        one, other = view.hosts(LikeNodes(2))
        self.assertIsNot(one, other)
        for field in ('capacity', 'traits', 'units', 'extra_capacity',
                      'extra_units'):
            self.assertIs(getattr(one, field), getattr(other, field), field)

    def test_a_node_takes_little_beyond_its_names(self):
        nodes = LikeNodes(400)
        view = placement.HostView(lambda uuids: set())
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            hosts = view.hosts(nodes)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        self.assertEqual(400, len(hosts))
        # About 2 kB (names, generations, the server's allocation), where
        # each provider's own inventories, traits, capacity and bounds
        # took 6 kB a node.
        self.assertLess(grown / 400, 3000, grown)
