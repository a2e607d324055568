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

"""The node of each slot of a ledger copy, for its refreshes: a changed
row names its slot, not the node the slot was on.

Two sorted arrays (slot ids, node numbers), each in the narrowest type
that holds its numbers: about 6 bytes a slot on a cloud of fewer than
32,768 nodes whose slot ids stay below 2**31, where a dict of a million
ints to strings takes a hundred.
"""

import array
import bisect
from typing import Optional

from nova_reservation.capacity import level_arrays

# A slot deleted: its place is kept until there are many such.
GONE = -1


class SlotIndex:
    """{slot id: node} as sorted arrays; changed in place (never read by
    a request: only by the refresh that owns it).
    """

    def __init__(self) -> None:
        self._ids = level_arrays.numbers()
        self._nodes = level_arrays.numbers()
        self._names: list = []      # node number -> name
        self._numbers: dict = {}    # name -> node number
        self._gone = 0

    def __len__(self) -> int:
        return len(self._ids) - self._gone

    def _find(self, slot_id: int) -> int:
        ids = self._ids
        i = bisect.bisect_left(ids, slot_id)
        return i if i < len(ids) and ids[i] == slot_id else -1

    def get(self, slot_id: int) -> Optional[str]:
        i = self._find(slot_id)
        if i < 0 or self._nodes[i] == GONE:
            return None
        return self._names[self._nodes[i]]

    def pop(self, slot_id: int) -> Optional[str]:
        """The slot's node, which it no longer has; None: no such slot."""
        i = self._find(slot_id)
        if i < 0 or self._nodes[i] == GONE:
            return None
        node = self._names[self._nodes[i]]
        self._nodes[i] = GONE
        self._gone += 1
        if self._gone > 1024 and 2 * self._gone > len(self._ids):
            self._compact()
        return node

    def put(self, slot_id: int, node: str) -> None:
        number = self._numbers.get(node)
        if number is None:
            number = self._numbers[node] = len(self._names)
            self._names.append(node)
        ids = self._ids = level_arrays.holding(self._ids, slot_id)
        self._nodes = level_arrays.holding(self._nodes, number)
        # New slots have the highest ids so far: appended.
        if not ids or slot_id > ids[-1]:
            ids.append(slot_id)
            self._nodes.append(number)
            return
        i = bisect.bisect_left(ids, slot_id)
        if i < len(ids) and ids[i] == slot_id:
            if self._nodes[i] == GONE:
                self._gone -= 1
            self._nodes[i] = number
        else:
            ids.insert(i, slot_id)
            self._nodes.insert(i, number)

    def _compact(self) -> None:
        kept = [i for i, n in enumerate(self._nodes) if n != GONE]
        self._ids = array.array(self._ids.typecode,
                                (self._ids[i] for i in kept))
        self._nodes = array.array(self._nodes.typecode,
                                  (self._nodes[i] for i in kept))
        self._gone = 0
