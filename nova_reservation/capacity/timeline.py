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

"""One node's promised usage over time: a step function built from its
slots, pure and without I/O.  `Timeline` answers "the peak usage over
[start, end)" with two bisections and a scan of the steps between them
(in C), or of a tree of block maxima for spans of many steps, so a query
costs O(log n) whatever the number of slots; "the peak from t on" is one
bisection into the suffix maxima.

Slots, steps and maxima are kept in arrays of numbers (`slot_columns`):
a ledger of a million slots is held by every nova-api and nova-scheduler
process.  The classes beyond `Resources` (a slot's extras) have one more
array each, only for those the node's slots hold."""

import array
import bisect
import operator
from typing import Iterable, Optional

from nova_reservation.capacity.amounts import FOREVER
from nova_reservation.capacity.amounts import NO_EXTRAS
from nova_reservation.capacity.amounts import Resources
from nova_reservation.capacity.amounts import Slot
from nova_reservation.capacity.amounts import ZERO
from nova_reservation.capacity import level_arrays
from nova_reservation.capacity import slot_columns

# Queries that span more steps than this use the block maxima (made on
# the first such query); shorter ones are scanned, in C.
LONG_SPAN = 128


class Timeline:
    """The promised usage of one node over time."""

    __slots__ = ('node', '_slots', '_built', '_times', '_levels', '_ends',
                 '_tree', '_after', '_columns', '_extra')

    def __init__(self, slots: Iterable[Slot] = (), node: str = '') -> None:
        self._slots = slot_columns.SlotColumns()
        self.node = node
        self._built = False
        for slot in slots:
            self.add(slot)

    def __len__(self) -> int:
        return len(self._slots.ids)

    def __contains__(self, slot_id: object) -> bool:
        return slot_id in self._slots

    def copy(self, exclude: Iterable[int] = ()) -> 'Timeline':
        excluded = set(exclude)
        other = Timeline((), self.node)
        other._slots = self._slots.copy(excluded)
        if excluded or not self._built:
            return other
        # A built copy: a change to one node's slots (each lease written)
        # then costs array copies and the change, not a sort of them all.
        other._times = self._times[:]
        other._levels = [values[:] for values in self._levels]
        other._columns = self._columns
        other._extra = [values[:] for values in self._extra]
        other._ends = self._ends
        other._tree = other._after = None
        other._built = True
        return other

    def add(self, slot: Slot) -> None:
        if not self.node:
            self.node = slot.node
        self.put(slot.id, slot.reservation_id, slot.start, slot.end,
                 slot_columns.SIZES.number(slot.resources),
                 slot.instance_uuid, slot.extras)

    def put(self, slot_id: int, reservation_id: str, start: float,
            end: float, size: int, instance_uuid: Optional[str] = None,
            extras: tuple = NO_EXTRAS) -> None:
        """`add` of a slot given by its fields (`size`: its number in
        `slot_columns.SIZES`), without making it.
        """
        self.remove(slot_id)
        self._slots.insert(slot_id, reservation_id, start, end, size,
                           instance_uuid, extras)
        if self._built:
            self._change(start, end, slot_columns.SIZES[size], 1, extras)

    def remove(self, slot_id: int) -> Optional[Slot]:
        """Take the slot out: it, or None if it is not on the node."""
        slot = self._slots.pop(slot_id, self.node)
        if slot is not None and self._built:
            self._change(slot.start, slot.end, slot.resources, -1,
                         slot.extras)
        return slot

    def slots(self) -> list:
        """Every slot of the node, by id (made as `capacity.Slot`)."""
        columns = self._slots
        return [columns.slot(i, self.node) for i in range(len(columns))]

    def slots_of(self, reservation_id: str) -> list:
        """The node's slots of a reservation, by id."""
        columns, node = self._slots, self.node
        return [columns.slot(i, node)
                for i, rid in enumerate(columns.reservations)
                if rid == reservation_id]

    @property
    def holds_extras(self) -> bool:
        """Whether a slot of the node holds classes beyond `Resources`."""
        return bool(self._slots.extras)

    def has_reservation(self, reservation_id: str) -> bool:
        return reservation_id in self._slots.reservations

    def _change(self, start: float, end: float, resources: Resources,
                sign: int, extras: tuple = NO_EXTRAS) -> None:
        """Add (`sign` 1) or take out (-1) a slot's usage over its
        interval, in place of a build: at most two new steps.
        """
        if end <= start:
            return
        i = self._step_at(start)
        j = self._step_at(end)
        for n, amount in enumerate(resources):
            if amount:
                self._levels[n] = level_arrays.added(
                    self._levels[n], i, j, amount * sign)
        for key, amount in extras:
            if key not in self._columns:
                self._columns += (key,)
                self._extra.append(level_arrays.numbers(len(self._times)))
            n = self._columns.index(key)
            self._extra[n] = level_arrays.added(
                self._extra[n], i, j, amount * sign)
        self._ends = None
        self._tree = self._after = None

    def _step_at(self, t: float) -> int:
        """The index of the step that starts at t, made if there is none
        (with the usage of the step it splits).
        """
        times = self._times
        i = bisect.bisect_left(times, t)
        if i == len(times) or times[i] != t:
            times.insert(i, t)
            for values in (*self._levels, *self._extra):
                values.insert(i, values[i - 1] if i else 0)
        return i

    def _build(self) -> None:
        # Plain numbers, not Resources: a node's timeline is rebuilt at
        # each change of its slots.
        columns = self._slots
        sizes = slot_columns.SIZES
        steps = []
        for start, end, size in zip(columns.starts, columns.ends,
                                    columns.sizes):
            if end > start:
                v, m, d = sizes[size]
                steps.append((start, v, m, d))
                steps.append((end, -v, -m, -d))
        steps.sort(key=operator.itemgetter(0))
        times = array.array('d')
        vcpus: list = []
        memory: list = []
        disk: list = []
        level_v = level_m = level_d = 0
        for t, v, m, d in steps:
            level_v += v
            level_m += m
            level_d += d
            if times and times[-1] == t:
                vcpus[-1], memory[-1], disk[-1] = level_v, level_m, level_d
            else:
                times.append(t)
                vcpus.append(level_v)
                memory.append(level_m)
                disk.append(level_d)
        self._times = times
        # _levels[k][i]: usage of resource k over [times[i], times[i+1]).
        self._levels = [level_arrays.to_array(values)
                        for values in (vcpus, memory, disk)]
        self._build_extras()
        # Made on first need: a node's timeline is rebuilt at each change,
        # and most are then asked only short spans (the planner) or only
        # "from now on" (the scheduler).  _ends: the instants at which
        # usage drops.
        self._ends = None
        self._tree = None
        self._after = None
        self._built = True

    def _build_extras(self) -> None:
        columns = self._slots
        self._columns, self._extra = level_arrays.extra_levels(
            self._times, columns.ids, columns.starts, columns.ends,
            columns.extras_by_id())

    def peak_extras(self, start: float, end: float,
                    exclude: Iterable[int] = (),
                    keys: Optional[frozenset] = None) -> dict:
        """Highest usage at any instant of [start, end) of each class
        beyond `Resources` the node's slots hold (or of `keys`): {(provider,
        class): amount}, zeros and the `exclude`d slots left out.
        """
        excluded = exclude and {i for i in exclude if i in self._slots}
        if excluded:
            return self.copy(excluded).peak_extras(start, end, keys=keys)
        if not self._slots.extras or end <= start:
            return {}
        if not self._built:
            self._build()
        lo, hi = self._steps(start, end)
        if hi < lo:
            return {}
        found = {key: max(values[lo:hi + 1])
                 for key, values in zip(self._columns, self._extra)
                 if keys is None or key in keys}
        return {key: n for key, n in found.items() if n}

    def peak_after(self, t: float) -> tuple:
        """Highest usage at any instant from t on, per resource, as a
        (vcpus, memory_mb, disk_gb) tuple: the scheduler's question for
        a server that has no end.
        """
        if not self._slots.ids:
            return ZERO
        if not self._built:
            self._build()
        if not self._times:
            return ZERO
        i = bisect.bisect_right(self._times, t) - 1
        if i < 0:
            i = 0
        after = self._after
        if after is None:
            after = self._after = [level_arrays.suffix_peaks(values)
                                   for values in self._levels]
        # The first of the suffix peaks at or after step i is the highest
        # usage from there on.
        (steps_v, peaks_v), (steps_m, peaks_m), (steps_d, peaks_d) = after
        left = bisect.bisect_left
        return (peaks_v[left(steps_v, i)], peaks_m[left(steps_m, i)],
                peaks_d[left(steps_d, i)])

    def next_change(self, t: float) -> float:
        """The first instant after t at which the usage changes (inf: it
        never does again).
        """
        if not self._slots.ids:
            return float('inf')
        if not self._built:
            self._build()
        i = bisect.bisect_right(self._times, t)
        return self._times[i] if i < len(self._times) else float('inf')

    def peak(self, start: float, end: float,
             exclude: Iterable[int] = ()) -> Resources:
        """Highest usage at any instant of [start, end), per resource.

        Allocations listed in `exclude` (ids) are left out, so a
        reservation can be checked against everything but itself.
        """
        # (Not set.intersection(dict): that walks the whole dict.)
        excluded = exclude and {i for i in exclude if i in self._slots}
        if excluded:
            # Rare (re-binding a slot): a throw-away timeline is simplest.
            return self.copy(excluded).peak(start, end)
        if not self._slots.ids or end <= start:
            return ZERO
        if not self._built:
            self._build()
        lo, hi = self._steps(start, end)
        if hi < lo:
            return ZERO
        if hi - lo < LONG_SPAN:
            return Resources(*(max(values[lo:hi + 1])
                               for values in self._levels))
        trees = self._tree
        if trees is None:
            # O(log n) range maxima for O(n / BLOCK) memory.
            trees = self._tree = [level_arrays.block_tree(values)
                                  for values in self._levels]
        return Resources(*(level_arrays.tree_max(tree, lo, hi)
                           for tree in trees))

    def earliest_fit(self, start: float, duration: float, room: Resources,
                     horizon: float,
                     extra_room: Optional[dict] = None) -> Optional[float]:
        """The earliest t in [start, horizon] at which the usage over
        [t, t + duration) stays within `room` per resource, and within
        `extra_room` ({(provider, class): amount}) for those classes, or
        None.

        After a window that fails, the next starts where the last step
        above `room` in it ends, since any start before still covers that
        step; the steps after it are known to be within `room`, so each
        step is looked at about once.
        """
        if min(room) < 0 or start > horizon or (
                extra_room and min(extra_room.values()) < 0):
            return None
        if not self._slots.ids:
            return start
        if not self._built:
            self._build()
        times = self._times
        levels = tuple(zip(self._levels, room))
        if extra_room:
            levels += tuple((values, extra_room[key]) for key, values in
                            zip(self._columns, self._extra)
                            if key in extra_room)
        right, left = bisect.bisect_right, bisect.bisect_left
        t = start
        known = -1   # the steps from t's to this one are within `room`
        while t <= horizon:
            lo = max(right(times, t) - 1, known + 1, 0)
            hi = left(times, t + duration) - 1
            last = -1
            if hi >= lo:
                for values, limit in levels:
                    if max(values[lo:hi + 1]) > limit:
                        k = hi
                        while values[k] <= limit:
                            k -= 1
                        if k > last:
                            last = k
                            lo = k + 1   # the other resources: after it
                            if lo > hi:
                                break
            if last < 0:
                return t
            # The last step has no usage: a step above `room` has a next.
            t = times[last + 1]
            known = hi
        return None

    def next_drop(self, t: float) -> float:
        """The first instant from t on at which the usage drops (an
        slot ends), or FOREVER: only such instants are worth trying
        as a start.
        """
        if not self._slots.ids:
            return FOREVER
        if not self._built:
            self._build()
        ends = self._ends
        if ends is None:
            columns = self._slots
            ends = self._ends = array.array('d', sorted({
                end for start, end in zip(columns.starts, columns.ends)
                if end > start}))
        i = bisect.bisect_left(ends, t)
        return ends[i] if i < len(ends) else FOREVER

    def peak_holds_until(self, start: float, end: float) -> float:
        """The instant T such that every interval of the same length that
        starts in [start, T) has, per resource, a peak at least that of
        [start, end): the end of the last step of [start, end) at its peak
        (the earliest over every class; FOREVER if the peak is zero).
        An interval that starts before T still covers that step.
        """
        if not self._slots.ids or end <= start:
            return FOREVER
        if not self._built:
            self._build()
        lo, hi = self._steps(start, end)
        until = FOREVER
        for values, top in self._tops(self.peak(start, end),
                                      self.peak_extras(start, end)):
            if top > 0:
                # The last step at the peak: a search from the right, in C.
                last = hi - values[hi:lo - 1 if lo else None:-1].index(top)
                until = min(until, self._times[last + 1])
        return until

    def next_rise(self, t: float, peak: Resources,
                  extras: Optional[dict] = None) -> float:
        """The first instant from t on at which the usage goes above
        `peak` (and `extras`, as `peak_extras`, if given), or FOREVER.
        """
        if not self._slots.ids:
            return FOREVER
        if not self._built:
            self._build()
        times = self._times
        first = bisect.bisect_left(times, t)
        found = len(times)
        for values, top in self._tops(peak, extras):
            for k in range(first, found):
                if values[k] > top:
                    found = k
                    break
        return times[found] if found < len(times) else FOREVER

    def _tops(self, peak: Resources, extras: Optional[dict]) -> list:
        """[(level array, its top in `peak`, or in `extras` if given)]."""
        return list(zip(self._levels, peak)) + [
            (values, extras.get(key, 0)) for key, values in zip(
                self._columns, self._extra) if extras is not None]

    def meeting(self, start: float, end: float) -> list:
        """The slots whose interval meets [start, end), by start."""
        columns, node = self._slots, self.node
        return sorted((columns.slot(i, node) for i, (s, e) in enumerate(
            zip(columns.starts, columns.ends))
            if s < end and e > start and e > s),
            key=lambda a: (a.start, a.id))

    def levels(self, start: float, end: float) -> list:
        """[(t, usage)]: the usage from `start` on, and at each instant of
        (start, end) at which it changes.
        """
        if not self._slots.ids or end <= start:
            return [(start, ZERO)]
        if not self._built:
            self._build()
        lo, hi = self._steps(start, end)
        if hi < lo:
            return [(start, ZERO)]
        times = self._times
        vcpus, memory, disk = self._levels
        first = (Resources(vcpus[lo], memory[lo], disk[lo])
                 if times[lo] <= start else ZERO)
        found = [(start, first)]
        for i in range(lo, hi + 1):
            if times[i] > start:
                found.append((times[i],
                              Resources(vcpus[i], memory[i], disk[i])))
        return found

    def _steps(self, start: float, end: float) -> tuple:
        """(lo, hi): the indexes of the first and last steps that meet
        [start, end) (hi < lo: none).
        """
        times = self._times
        return (max(bisect.bisect_right(times, start) - 1, 0),
                bisect.bisect_left(times, end) - 1)
