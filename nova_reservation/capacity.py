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

"""Capacity math of the ledger: pure functions and values, no I/O.

Times are float seconds since the epoch (UTC).  A host's promised usage over
time is a step function built from its slots; `Timeline` answers "the
peak usage over [start, end)" with two bisections and a sparse-table range
maximum, so a query costs O(log n) whatever the number of slots
(spans of few steps are scanned instead), and "the peak from t on" with one
bisection into suffix maxima.
"""

import bisect
import dataclasses
import heapq
import math
from typing import Callable, Iterable, NamedTuple, Optional, Sequence

# An open-ended interval (an ordinary server has no end) runs to here.
FOREVER = float(2 ** 40)
# Queries that span more steps than this use a sparse table (built on the
# first such query); shorter ones are scanned, in C, faster than a table
# is built.
LONG_SPAN = 128
# The ledger's resolution (its times are to the microsecond): a start
# just after another.
INSTANT = 1e-6


class Resources(NamedTuple):
    vcpus: float = 0
    memory_mb: float = 0
    disk_gb: float = 0

    def __add__(self, other: 'Resources') -> 'Resources':  # type: ignore
        return Resources(self.vcpus + other.vcpus,
                         self.memory_mb + other.memory_mb,
                         self.disk_gb + other.disk_gb)

    def __sub__(self, other: 'Resources') -> 'Resources':
        return Resources(self.vcpus - other.vcpus,
                         self.memory_mb - other.memory_mb,
                         self.disk_gb - other.disk_gb)

    def scaled(self, factor: float) -> 'Resources':
        return Resources(self.vcpus * factor, self.memory_mb * factor,
                         self.disk_gb * factor)

    def fits_in(self, limit: 'Resources') -> bool:
        return (self.vcpus <= limit.vcpus and
                self.memory_mb <= limit.memory_mb and
                self.disk_gb <= limit.disk_gb)

    def describe(self) -> str:
        return '%g vCPU, %g MB RAM, %g GB disk' % self


ZERO = Resources()


@dataclasses.dataclass(frozen=True, slots=True)
class Slot:
    """One row of the ledger: a slot promised on a node over [start, end)."""
    id: int
    reservation_id: str
    node: str
    start: float
    end: float
    resources: Resources
    instance_uuid: Optional[str] = None


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


@dataclasses.dataclass(frozen=True)
class Host:
    """A node as the ledger sees it.

    `capacity` is what may be promised at all ((total - reserved) x
    allocation ratio); `base` is what servers outside the ledger use now,
    taken to stay for good since an ordinary server has no end.
    """
    node: str
    capacity: Resources
    base: Resources = ZERO


def fits(host: Host, timeline: Optional[Timeline], need: Resources,
         start: float, end: float, exclude: Iterable[int] = ()) -> bool:
    peak = timeline.peak(start, end, exclude) if timeline else ZERO
    return (host.base + peak + need).fits_in(host.capacity)


def held_until(host: Host, timeline: Optional[Timeline],
               uses: Sequence[Resources], now: float) -> list:
    """For servers outside the ledger that yield to it (preemptible), in
    their order of precedence on `host` (the first stays longest): the
    instant from which the node no longer holds each with those before it,
    the ledger and `host.base` (now: it does not now; FOREVER: never).
    """
    found = []
    total = host.base
    for use in uses:
        total = total + use
        limit = host.capacity - total
        if min(limit) < 0:
            found.append(now)
        elif timeline is None:
            found.append(FOREVER)
        elif not timeline.peak(now, now + INSTANT).fits_in(limit):
            found.append(now)
        else:
            found.append(timeline.next_rise(now, limit))
    return found


def used_share(reserved: float, used: float) -> float:
    """The share of what is reserved that is used (1: nothing reserved)."""
    return min(used / reserved, 1.0) if reserved > 0 else 1.0


def plan(hosts: Sequence[Host], timelines: dict, need: Resources,
         count: int, start: float, end: float,
         affinity: Optional[bool] = None) -> Optional[list]:
    """Choose a node for each of `count` slots of `need` over [start, end).

    Returns the list of nodes (one per slot) or None if they do not all fit.
    Slots go to the node with the most free room (spread, like Nova's
    default weighing).  `affinity` True puts every slot on one node, False
    each on a node of its own.
    """
    free = {}
    need_v, need_m, need_d = need
    for h in hosts:
        # The room left over [start, end), in plain numbers: this runs
        # for every node.
        timeline = timelines.get(h.node)
        peak_v, peak_m, peak_d = (timeline.peak(start, end) if timeline
                                  else ZERO)
        (cap_v, cap_m, cap_d), (base_v, base_m, base_d) = h.capacity, h.base
        room_v = cap_v - base_v - peak_v
        room_m = cap_m - base_m - peak_m
        room_d = cap_d - base_d - peak_d
        if need_v <= room_v and need_m <= room_m and need_d <= room_d:
            free[h.node] = Resources(room_v, room_m, room_d)
    if not free:
        return None
    # Best first: the most room left, then the last name
    # (negated, for min() and a heap: O(n + count log n)).
    order = {n: i for i, n in enumerate(sorted(free))}

    def key(n):
        return (-_score(free[n], need), -order[n], n)
    if affinity:
        whole = need.scaled(count)
        nodes = [n for n in free if whole.fits_in(free[n])]
        return [min(map(key, nodes))[-1]] * count if nodes else None
    heap = [key(n) for n in free]
    heapq.heapify(heap)
    chosen = []
    for _ in range(count):
        if not heap:
            return None
        best = heapq.heappop(heap)[-1]
        free[best] = free[best] - need
        chosen.append(best)
        if affinity is not False and need.fits_in(free[best]):
            heapq.heappush(heap, key(best))
    return chosen


def plan_hosts(hosts: Sequence[Host], timelines: dict, start: float,
               end: float, min_count: int,
               max_count: int) -> Optional[list]:
    """Whole nodes free over [start, end).

    As many as `max_count`, at least `min_count`, else None.
    """
    free = sorted(h.node for h in hosts
                  if fits(h, timelines.get(h.node), h.capacity, start, end))
    return free[:max_count] if len(free) >= min_count else None


def _score(room: Resources, need: Resources) -> float:
    """How many more slots of `need` the room holds (for spreading).

    Written out for three resources: `plan` asks it of every node that
    fits (a resource the slot needs none of never limits).
    """
    v, m, d = need
    return min(room[0] / v if v > 0 else math.inf,
               room[1] / m if m > 0 else math.inf,
               room[2] / d if d > 0 else math.inf)


def earliest_start(timelines: dict, start: float, duration: float,
                   horizon: float,
                   place: Callable[[float, float], Optional[list]]
                   ) -> Optional[float]:
    """The earliest t in [start, horizon] at which `place(t, t + duration)`
    finds room, or None; `place` must only gain from lower usage (as
    `plan` and `plan_hosts` do).

    Only `start` and the instants where usage drops are worth trying, and
    after a try that fails, none before the end of the steps that made it
    fail: each try jumps past every node's peak.  O(k m log n) for k tries
    on m nodes of n change points, plus the tries themselves.
    """
    timelines = list(timelines.values())
    t = start
    while t <= horizon:
        if place(t, t + duration) is not None:
            return t
        # `place` only gains from lower peaks, and every start before
        # `skip` meets peaks at least as high on every node: they fail too.
        skip = min((tl.peak_holds_until(t, t + duration)
                    for tl in timelines), default=FOREVER)
        t = min((tl.next_drop(skip) for tl in timelines), default=FOREVER)
    return None


def latest_start(timelines: dict, start: float, duration: float,
                 horizon: float,
                 place: Callable[[float, float], Optional[list]]) -> float:
    """Given that `place(start, start + duration)` finds room, the latest
    t in [start, horizon] such that every start in [start, t] does.

    Every start in [t, t'] fits if `place(t, t' + duration)` does (it
    only gains from lower usage): the whole span to the horizon is tried
    first, then spans from one duration on, twice as long each time,
    while they fit.  Else a later start can only fail once its end passes
    an instant where some node's usage goes above that node's peak so
    far, so only those are tried (as `earliest_start` tries only the
    drops).
    """
    timelines = list(timelines.values())
    t = start   # every start in [start, t] fits
    step = max(horizon - start, duration)
    while t < horizon:
        ahead = min(t + step, horizon)
        if place(t, ahead + duration) is not None:
            t, step = ahead, step * 2
            continue
        step = duration
        rise = min((tl.next_rise(t + duration, tl.peak(t, t + duration))
                    for tl in timelines), default=FOREVER)
        t = max(t, rise - duration)   # covers no more than t did
        if t >= horizon:
            break
        if place(t + INSTANT, t + INSTANT + duration) is None:
            return t
        t += INSTANT
    return horizon


def windows(timelines: dict, start: float, end: float, duration: float,
            place: Callable[[float, float], Optional[list]],
            limit: int) -> list:
    """The start windows in [start, end], at most `limit`, in which
    `place(t, t + duration)` finds room: [(earliest, latest)], in time
    order; the first earliest is `earliest_start`'s answer.
    """
    found: list = []
    t = start
    while len(found) < limit:
        first = earliest_start(timelines, t, duration, end, place)
        if first is None:
            break
        last = latest_start(timelines, first, duration, end, place)
        found.append((first, last))
        if last >= end:
            break
        t = last + INSTANT
    return found


def earliest_fit(hosts: Sequence[Host], timelines: dict, need: Resources,
                 start: float, duration: float,
                 horizon: float) -> Optional[float]:
    """The earliest t in [start, horizon] at which some node holds `need`
    over [t, t + duration), or None: `earliest_start` for one slot (or
    slots that stay together), node by node.
    """
    best = None
    for h in hosts:
        room = h.capacity - h.base - need
        timeline = timelines.get(h.node)
        if timeline is None:
            t = start if min(room) >= 0 and start <= horizon else None
        else:
            t = timeline.earliest_fit(start, duration, room, horizon)
        if t is not None and (best is None or t < best):
            best = horizon = t
    return best


def how_many(room: Resources, need: Resources) -> int:
    """How many slots of `need` the room holds (0 if none)."""
    if not any(need) or not need.fits_in(room):
        return 0
    return int(_score(room, need))


def free_counts(hosts: Sequence[Host], timelines: dict, need: Resources,
                start: float, end: float) -> list:
    """[(t, count)]: how many slots of `need` the nodes hold from each t
    on (until the next t, or `end`), each node's room counted on its own
    (slots are not split across nodes).  Merged where the count does
    not change.
    """
    deltas: dict = {}
    for h in hosts:
        timeline = timelines.get(h.node)
        steps = (timeline.levels(start, end) if timeline is not None
                 else [(start, ZERO)])
        before = 0
        for t, usage in steps:
            count = how_many(h.capacity - h.base - usage, need)
            if count != before:
                deltas[t] = deltas.get(t, 0) + count - before
                before = count
    found = [(start, 0)]
    total = 0
    for t in sorted(deltas):
        total += deltas[t]
        if t == found[-1][0]:
            found[-1] = (t, total)
        elif total != found[-1][1]:
            found.append((t, total))
    return found


def need_of_flavor(flavor) -> Resources:
    """What a server of `flavor` takes, as Placement counts it."""
    swap_gb = math.ceil((flavor.swap or 0) / 1024)
    return Resources(flavor.vcpus, flavor.memory_mb,
                     flavor.root_gb + flavor.ephemeral_gb + swap_gb)
