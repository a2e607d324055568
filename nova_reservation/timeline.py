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
[start, end)" with two bisections and a sparse-table range maximum, so a
query costs O(log n) whatever the number of slots (spans of few steps are
scanned instead), and "the peak from t on" with one bisection into suffix
maxima.
"""

import bisect
from typing import Iterable, Optional

from nova_reservation.capacity import FOREVER
from nova_reservation.capacity import Resources
from nova_reservation.capacity import Slot
from nova_reservation.capacity import ZERO

# Queries that span more steps than this use a sparse table (built on the
# first such query); shorter ones are scanned, in C, faster than a table
# is built.
LONG_SPAN = 128


class Timeline:
    """The promised usage of one node over time."""

    def __init__(self, slots: Iterable[Slot] = ()) -> None:
        self._slots = {a.id: a for a in slots}
        self._built = False

    def __len__(self) -> int:
        return len(self._slots)

    def copy(self, exclude: Iterable[int] = ()) -> 'Timeline':
        excluded = set(exclude)
        if excluded or not self._built:
            return Timeline(a for a in self._slots.values()
                            if a.id not in excluded)
        # A built copy: a change to one node's slots (each lease written)
        # then costs list copies and the change, not a sort of them all.
        other = Timeline(())
        other._slots = dict(self._slots)
        other._times = list(self._times)
        other._levels = [list(values) for values in self._levels]
        other._ends = self._ends
        other._tables = other._after = None
        other._built = True
        return other

    def add(self, slot: Slot) -> None:
        old = self._slots.get(slot.id)
        if old is not None:
            self.remove(old.id)
        self._slots[slot.id] = slot
        if self._built:
            self._change(slot, 1)

    def remove(self, slot_id: int) -> None:
        slot = self._slots.pop(slot_id, None)
        if slot is not None and self._built:
            self._change(slot, -1)

    def _change(self, slot: Slot, sign: int) -> None:
        """Add (`sign` 1) or take out (-1) a slot's usage over its
        interval, in place of a build: at most two new steps.
        """
        if slot.end <= slot.start:
            return
        i = self._step_at(slot.start)
        j = self._step_at(slot.end)
        for values, amount in zip(self._levels, slot.resources):
            if amount:
                amount *= sign
                for k in range(i, j):
                    values[k] += amount
        self._ends = None
        self._tables = self._after = None

    def _step_at(self, t: float) -> int:
        """The index of the step that starts at t, made if there is none
        (with the usage of the step it splits).
        """
        times = self._times
        i = bisect.bisect_left(times, t)
        if i == len(times) or times[i] != t:
            times.insert(i, t)
            for values in self._levels:
                values.insert(i, values[i - 1] if i else 0)
        return i

    def _build(self) -> None:
        # Plain numbers, not Resources: a node's timeline is rebuilt at
        # each change of its slots.
        steps = []
        for a in self._slots.values():
            if a.end > a.start:
                v, m, d = a.resources
                steps.append((a.start, v, m, d))
                steps.append((a.end, -v, -m, -d))
        steps.sort(key=_first)
        times: list = []
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
        # The instants at which usage drops.
        self._ends = sorted({a.end for a in self._slots.values()
                             if a.end > a.start})
        # _levels[k][i]: usage of resource k over [times[i], times[i+1]).
        self._levels = [vcpus, memory, disk]
        # Made on first need: a node's timeline is rebuilt at each change,
        # and most are then asked only short spans (the planner) or only
        # "from now on" (the scheduler).
        self._tables = None
        self._after = None
        self._built = True

    def peak_after(self, t: float) -> tuple:
        """Highest usage at any instant from t on, per resource, as a
        (vcpus, memory_mb, disk_gb) tuple: the scheduler's question for
        a server that has no end.
        """
        if not self._slots:
            return ZERO
        if not self._built:
            self._build()
        i = bisect.bisect_right(self._times, t) - 1
        if i < 0:
            i = 0
        after = self._after
        if after is None:
            # after[k][i]: the highest usage of resource k from times[i] on.
            after = self._after = [_suffix_max(values)
                                   for values in self._levels]
        return after[0][i], after[1][i], after[2][i]

    def next_change(self, t: float) -> float:
        """The first instant after t at which the usage changes (inf: it
        never does again).
        """
        if not self._slots:
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
        if not self._slots or end <= start:
            return ZERO
        if not self._built:
            self._build()
        lo, hi = self._steps(start, end)
        if hi < lo:
            return ZERO
        if hi - lo < LONG_SPAN:
            return Resources(*(max(values[lo:hi + 1])
                               for values in self._levels))
        tables = self._tables
        if tables is None:
            # O(1) range maxima for O(n log n) memory.
            tables = self._tables = [_sparse_table(values)
                                     for values in self._levels]
        return Resources(*(_range_max(table, lo, hi) for table in tables))

    def earliest_fit(self, start: float, duration: float, room: Resources,
                     horizon: float) -> Optional[float]:
        """The earliest t in [start, horizon] at which the usage over
        [t, t + duration) stays within `room` per resource, or None.

        After a window that fails, the next starts where the last step
        above `room` in it ends, since any start before still covers that
        step; the steps after it are known to be within `room`, so each
        step is looked at about once.
        """
        if min(room) < 0 or start > horizon:
            return None
        if not self._slots:
            return start
        if not self._built:
            self._build()
        times = self._times
        levels = tuple(zip(self._levels, room))
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
        if not self._slots:
            return FOREVER
        if not self._built:
            self._build()
        ends = self._ends
        if ends is None:
            ends = self._ends = sorted({a.end for a in self._slots.values()
                                        if a.end > a.start})
        i = bisect.bisect_left(ends, t)
        return ends[i] if i < len(ends) else FOREVER

    def peak_holds_until(self, start: float, end: float) -> float:
        """The instant T such that every interval of the same length that
        starts in [start, T) has, per resource, a peak at least that of
        [start, end): the end of the last step of [start, end) at its peak
        (the earliest over the resources; FOREVER if the peak is zero).
        An interval that starts before T still covers that step.
        """
        if not self._slots or end <= start:
            return FOREVER
        if not self._built:
            self._build()
        lo, hi = self._steps(start, end)
        until = FOREVER
        for values, top in zip(self._levels, self.peak(start, end)):
            if top > 0:
                # The last step at the peak: a search from the right, in C.
                last = hi - values[hi:lo - 1 if lo else None:-1].index(top)
                until = min(until, self._times[last + 1])
        return until

    def next_rise(self, t: float, peak: Resources) -> float:
        """The first instant from t on at which the usage goes above
        `peak` in some resource, or FOREVER.
        """
        if not self._slots:
            return FOREVER
        if not self._built:
            self._build()
        times = self._times
        first = bisect.bisect_left(times, t)
        found = len(times)
        for values, top in zip(self._levels, peak):
            for k in range(first, found):
                if values[k] > top:
                    found = k
                    break
        return times[found] if found < len(times) else FOREVER

    def meeting(self, start: float, end: float) -> list:
        """The slots whose interval meets [start, end), by start."""
        return sorted((a for a in self._slots.values()
                       if a.start < end and a.end > start and
                       a.end > a.start), key=lambda a: (a.start, a.id))

    def levels(self, start: float, end: float) -> list:
        """[(t, usage)]: the usage from `start` on, and at each instant of
        (start, end) at which it changes.
        """
        if not self._slots or end <= start:
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


def _first(step: tuple) -> float:
    return step[0]


def _suffix_max(values: list) -> list:
    out = values[:]
    for i in range(len(out) - 2, -1, -1):
        if out[i + 1] > out[i]:
            out[i] = out[i + 1]
    return out


def _sparse_table(values: list) -> list:
    table = [values]
    span = 1
    while 2 * span <= len(values):
        prev = table[-1]
        table.append([max(prev[i], prev[i + span])
                      for i in range(len(values) - 2 * span + 1)])
        span *= 2
    return table


def _range_max(table: list, lo: int, hi: int) -> float:
    """Maximum of values[lo..hi] (inclusive) in O(1)."""
    k = (hi - lo + 1).bit_length() - 1
    row = table[k]
    return max(row[lo], row[hi - (1 << k) + 1])
