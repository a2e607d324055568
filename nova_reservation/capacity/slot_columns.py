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

"""A node's slots as columns of numbers, pure and without I/O.

A copy of the ledger holds every slot of a cloud (a million at 10,000
nodes) in every nova-api and nova-scheduler process.  As Python objects
(a `amounts.Slot`, its floats, tuple and strings, the dict entries that
hold it) a slot takes about a kilobyte; as columns (`array`) it takes
about 30 bytes.  `amounts.Slot` objects are made only when asked for.
"""

import array
import bisect
import sys
import threading
from typing import Callable, Iterable, Iterator, Optional

from nova_reservation.capacity import amounts
from nova_reservation.capacity import level_arrays


class Sizes:
    """The distinct slot sizes seen, each one shared `amounts.Resources`,
    numbered: a slot keeps the number of its size (a cloud has a few
    flavors, not a size per slot).  Only ever grows: a number once given
    names the same size for good, so readers need no lock.  (`make`: the
    shared value of a tuple; `EXTRAS` numbers slots' extras so.)
    """

    def __init__(self, make: Callable = lambda value: amounts.Resources(
            *value)) -> None:
        self._make = make
        self._sizes: list = []
        self._numbers: dict = {}
        self._lock = threading.Lock()

    def number(self, resources: tuple) -> int:
        """The number of a size ((vcpus, memory_mb, disk_gb))."""
        # A tuple and the Resources of its values hash and compare equal.
        found = self._numbers.get(resources)
        if found is None:
            resources = self._make(resources)
            with self._lock:
                found = self._numbers.get(resources)
                if found is None:
                    found = len(self._sizes)
                    self._sizes.append(resources)
                    # Published after the size it names.
                    self._numbers[resources] = found
        return found

    def __getitem__(self, number: int) -> amounts.Resources:
        return self._sizes[number]

    def shared(self, resources: tuple) -> amounts.Resources:
        """The one Resources object of that size."""
        return self._sizes[self.number(resources)]


# One table per process: every node's slots share it.
SIZES = Sizes()
# The distinct extras of slots (`amounts.extras`), numbered as sizes are;
# 0 is none.
EXTRAS = Sizes(make=tuple)
EXTRAS.number(amounts.NO_EXTRAS)


class SlotColumns:
    """The slots of one node, ordered by id, one array per field.

    Reservation ids are kept as references to one interned string per
    reservation; instance uuids only for the slots that have one.
    """

    __slots__ = ('ids', 'starts', 'ends', 'sizes', 'reservations',
                 'servers', 'extras')

    def __init__(self, slots: Iterable[amounts.Slot] = ()) -> None:
        # Whole numbers in the narrowest type that holds them: a byte a
        # slot for the number of its size while a process has seen fewer
        # than 128 sizes.
        self.ids = level_arrays.numbers()
        self.starts = array.array('d')
        self.ends = array.array('d')
        self.sizes = level_arrays.numbers()   # numbers of SIZES
        self.reservations: list = []
        # {slot id: instance uuid}, None while no slot has one.
        self.servers: Optional[dict] = None
        # The number in EXTRAS of each slot's extras, None while no slot
        # has any: a few bytes a slot, where a slot of a GPU is common.
        self.extras: Optional[array.array] = None
        for slot in slots:
            self.insert(slot.id, slot.reservation_id, slot.start, slot.end,
                        SIZES.number(slot.resources), slot.instance_uuid,
                        slot.extras)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, slot_id: object) -> bool:
        return isinstance(slot_id, int) and self.find(slot_id) >= 0

    def find(self, slot_id: int) -> int:
        """The position of the slot, or -1."""
        ids = self.ids
        i = bisect.bisect_left(ids, slot_id)
        return i if i < len(ids) and ids[i] == slot_id else -1

    def insert(self, slot_id: int, reservation_id: str, start: float,
               end: float, size: int,
               instance_uuid: Optional[str] = None,
               extras: tuple = amounts.NO_EXTRAS) -> None:
        """Add a slot whose id is not among them (`size`: its number in
        SIZES; `extras`: as `amounts.extras` gives).
        """
        ids = self.ids = level_arrays.holding(self.ids, slot_id)
        # Slots mostly come in the order of their ids: appended.
        i = (len(ids) if not ids or slot_id > ids[-1]
             else bisect.bisect_left(ids, slot_id))
        ids.insert(i, slot_id)
        self.starts.insert(i, start)
        self.ends.insert(i, end)
        self.sizes = level_arrays.holding(self.sizes, size)
        self.sizes.insert(i, size)
        self.reservations.insert(i, sys.intern(reservation_id))
        if instance_uuid:
            if self.servers is None:
                self.servers = {}
            self.servers[slot_id] = instance_uuid
        number = EXTRAS.number(extras) if extras else 0
        if number and self.extras is None:
            self.extras = level_arrays.numbers(len(ids) - 1)
        if self.extras is not None:
            self.extras = level_arrays.holding(self.extras, number)
            self.extras.insert(i, number)

    def pop(self, slot_id: int,
            node: str = '') -> Optional[amounts.Slot]:
        """Take the slot out; it (on `node`), or None if it is not among
        them.
        """
        i = self.find(slot_id)
        if i < 0:
            return None
        slot = self.slot(i, node)
        for column in (self.ids, self.starts, self.ends, self.sizes,
                       self.reservations):
            del column[i]
        if slot.instance_uuid:
            del self.servers[slot_id]
            if not self.servers:
                self.servers = None
        if self.extras is not None:
            del self.extras[i]
            if slot.extras and not any(self.extras):
                self.extras = None
        return slot

    def extras_by_id(self) -> dict:
        """{slot id: its extras} of the slots that have some."""
        if self.extras is None:
            return {}
        return {slot_id: EXTRAS[n]
                for slot_id, n in zip(self.ids, self.extras) if n}

    def slot(self, i: int, node: str = '') -> amounts.Slot:
        """The slot at position i, made as a `amounts.Slot`."""
        slot_id = self.ids[i]
        servers, extras = self.servers, self.extras
        return amounts.Slot(
            slot_id, self.reservations[i], node, self.starts[i],
            self.ends[i], SIZES[self.sizes[i]],
            servers.get(slot_id) if servers else None,
            EXTRAS[extras[i]] if extras is not None else amounts.NO_EXTRAS)

    def __iter__(self) -> Iterator[amounts.Slot]:
        return (self.slot(i) for i in range(len(self.ids)))

    def copy(self, excluded: Iterable[int] = ()) -> 'SlotColumns':
        """Columns of their own (without the `excluded` ids)."""
        excluded = set(excluded)
        other = SlotColumns()
        if not excluded:
            other.ids = self.ids[:]
            other.starts = self.starts[:]
            other.ends = self.ends[:]
            other.sizes = self.sizes[:]
            other.reservations = self.reservations[:]
            other.servers = dict(self.servers) if self.servers else None
            other.extras = self.extras[:] if self.extras is not None \
                else None
            return other
        # Of the same types: they hold the same numbers.
        other.ids = array.array(self.ids.typecode)
        other.sizes = array.array(self.sizes.typecode)
        extras = array.array(self.extras.typecode if self.extras is not None
                             else 'b')
        for i, slot_id in enumerate(self.ids):
            if slot_id not in excluded:
                other.ids.append(slot_id)
                other.starts.append(self.starts[i])
                other.ends.append(self.ends[i])
                other.sizes.append(self.sizes[i])
                other.reservations.append(self.reservations[i])
                server = self.servers and self.servers.get(slot_id)
                if server:
                    if other.servers is None:
                        other.servers = {}
                    other.servers[slot_id] = server
                if self.extras is not None:
                    extras.append(self.extras[i])
        if any(extras):
            other.extras = extras
        return other
