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
import unittest

from devcloud import invariants
from nova_reservation.db import ledger as db_ledger
from nova_reservation import ledger as ledger_mod

NOW = datetime.datetime(2026, 1, 1, 12, 0)
GOLD = 'CUSTOM_BAREMETAL_GOLD'


def slot_row(slot_id: int, uuid=None, gold: int = 1) -> dict:
    return {'id': slot_id, 'reservation_id': 'r%d' % slot_id, 'node': 'bm1',
            'instance_uuid': uuid, 'vcpus': 0, 'memory_mb': 0, 'disk_gb': 0,
            'extras': db_ledger.extras_column(((('', GOLD), gold),)) if gold
            else None,
            'start_at': NOW - datetime.timedelta(hours=1),
            'end_at': NOW + datetime.timedelta(hours=1)}


class ExtraClassesTest(unittest.TestCase):

    def found(self, slots: list, servers: dict) -> list:
        """Node bm1 has 2 gold units and runs `servers` ({uuid: gold})."""
        answers = {
            '/resource_providers': {'resource_providers': [
                {'name': 'bm1', 'uuid': 'B1'}]},
            '/resource_providers/B1/inventories': {'inventories': {
                GOLD: {'total': 2, 'reserved': 0, 'allocation_ratio': 1.0}}},
            '/resource_providers/B1/allocations': {'allocations': {
                uuid: {'resources': {GOLD: n}}
                for uuid, n in servers.items()}}}
        bound = {s['instance_uuid'] for s in slots if s['instance_uuid']}
        return invariants._capacity(slots, answers.get,
                                    ledger_mod.to_epoch(NOW), set(), bound)

    def test_each_unit_is_promised_once(self):
        self.assertEqual([], self.found([slot_row(1), slot_row(2)], {}))
        self.assertEqual(['node bm1 is promised 3 of its 2 %s' % GOLD],
                         self.found([slot_row(1), slot_row(2, gold=2)], {}))

    def test_a_lease_s_server_is_its_slot_an_ordinary_one_is_not(self):
        self.assertEqual([], self.found([slot_row(1, 'x'), slot_row(2)],
                                        {'x': 1}))
        self.assertEqual(['node bm1 is promised 3 of its 2 %s' % GOLD],
                         self.found([slot_row(1), slot_row(2)], {'o': 1}))
