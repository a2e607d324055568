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

"""The invariant checker's count of a node's classes beyond vCPU, RAM and
disk (a bare-metal node's one unit, a node's GPUs) against Placement.
"""

import datetime
import functools
from typing import Optional
import unittest

from devcloud import invariants
from nova_reservation.capacity import epoch
from nova_reservation.db import ledger as db_ledger

NOW = datetime.datetime(2026, 1, 1, 12, 0)
GOLD = 'CUSTOM_BAREMETAL_GOLD'


def slot_row(slot_id: int, uuid=None, gold: int = 1,
             rc: str = GOLD) -> dict:
    return {'id': slot_id, 'reservation_id': 'r%d' % slot_id, 'node': 'bm1',
            'instance_uuid': uuid, 'vcpus': 0, 'memory_mb': 0, 'disk_gb': 0,
            'extras': db_ledger.extras_column(((('', rc), gold),)) if gold
            else None,
            'start_at': NOW - datetime.timedelta(hours=1),
            'end_at': NOW + datetime.timedelta(hours=1)}


class ExtraClassesTest(unittest.TestCase):

    def found(self, slots: list, servers: dict,
              vgpus: Optional[dict] = None) -> list:
        """Node bm1 has 2 gold units and runs `servers` ({uuid: gold});
        two physical GPUs below it have 2 vGPUs each and run `vgpus`
        ({uuid: the GPU's index}).
        """
        unit = {'reserved': 0, 'allocation_ratio': 1.0}
        answers = {
            '/resource_providers': {'resource_providers': [
                {'name': 'bm1', 'uuid': 'B1'},
                {'name': 'bm1_gpu0', 'uuid': 'G0'},
                {'name': 'bm1_gpu1', 'uuid': 'G1'}]},
            '/resource_providers?in_tree=B1': {'resource_providers': [
                {'uuid': 'B1'}, {'uuid': 'G0'}, {'uuid': 'G1'}]},
            '/resource_providers/B1/inventories': {'inventories': {
                GOLD: dict(unit, total=2)}},
            '/resource_providers/B1/allocations': {'allocations': {
                uuid: {'resources': {GOLD: n}}
                for uuid, n in servers.items()}}}
        for i in range(2):
            answers['/resource_providers/G%d/inventories' % i] = {
                'inventories': {'VGPU': dict(unit, total=2)}}
            answers['/resource_providers/G%d/allocations' % i] = {
                'allocations': {uuid: {'resources': {'VGPU': 1}}
                                for uuid, gpu in (vgpus or {}).items()
                                if gpu == i}}
        bound = {s['instance_uuid'] for s in slots if s['instance_uuid']}
        return invariants._capacity(slots, answers.get,
                                    epoch.to_epoch(NOW), set(), bound)

    def test_each_unit_is_promised_once(self):
        self.assertEqual([], self.found([slot_row(1), slot_row(2)], {}))
        self.assertEqual(['node bm1 is promised 3 of its 2 %s' % GOLD],
                         self.found([slot_row(1), slot_row(2, gold=2)], {}))

    def test_a_lease_s_server_is_its_slot_an_ordinary_one_is_not(self):
        self.assertEqual([], self.found([slot_row(1, 'x'), slot_row(2)],
                                        {'x': 1}))
        self.assertEqual(['node bm1 is promised 3 of its 2 %s' % GOLD],
                         self.found([slot_row(1), slot_row(2)], {'o': 1}))

    def test_a_node_s_vgpus_are_counted_over_its_physical_gpus(self):
        vgpu = functools.partial(slot_row, rc='VGPU')
        self.assertEqual([], self.found(
            [vgpu(1), vgpu(2), vgpu(3, 'x')], {}, {'x': 0, 'o': 1}))
        self.assertEqual(['node bm1 is promised 5 of its 4 VGPU'], self.found(
            [vgpu(1), vgpu(2), vgpu(3)], {}, {'o': 0, 'p': 1}))
