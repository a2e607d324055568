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

Times are float seconds since the epoch (UTC).  A node's promised usage
over time is its `timeline.Timeline`; this module says what fits where and
when on nodes and their timelines.
"""

import dataclasses
import heapq
import math
from typing import Callable, Iterable, Mapping, NamedTuple, Optional
from typing import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # the timeline module imports this one
    from nova_reservation.timeline import Timeline

# An open-ended interval (an ordinary server has no end) runs to here.
FOREVER = float(2 ** 40)
# The ledger's resolution (its times are to the microsecond): a start
# just after another.
INSTANT = 1e-6
# The Placement resource classes a slot holds, in the order of `Resources`.
RESOURCE_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


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
    # Its traits in Placement (its root provider's).
    traits: frozenset = frozenset()
    # Placement's bounds on one allocation of each class: (min_unit,
    # max_unit, step_size), each a Resources; None: none.
    units: Optional[tuple] = None


class Need(NamedTuple):
    """What one server of a reservation asks for: the resources of its
    slot, and `traits` in Placement's syntax (``X`` its node must have,
    ``!X`` it must not).
    """
    resources: Resources
    traits: tuple = ()


def has_traits(host: Host, traits: Iterable[str]) -> bool:
    """Whether Placement would give `host` to a request of `traits`."""
    return all((t[1:] not in host.traits) if t.startswith('!')
               else (t in host.traits) for t in traits)


def takes(host: Host, need: Resources) -> bool:
    """Whether Placement would allocate `need` (one server's) from `host`
    in one piece, room aside: each class asked for at least its min_unit,
    at most its max_unit, a whole number of its step_size.
    """
    if host.units is None:
        return True
    return all(not n or (low <= n <= high and n % step == 0)
               for n, low, high, step in zip(need, *host.units))


def may_hold(host: Host, need: Need) -> bool:
    """Whether `host` may hold slots of `need`, room aside."""
    return has_traits(host, need.traits) and takes(host, need.resources)


def assures(held: Iterable[str], asked: Iterable[str]) -> bool:
    """Whether every node of a reservation placed for traits `held` has
    what a server asking for traits `asked` needs.
    """
    return set(asked) <= set(held)


def fits(host: Host, timeline: Optional['Timeline'], need: Resources,
         start: float, end: float, exclude: Iterable[int] = ()) -> bool:
    peak = timeline.peak(start, end, exclude) if timeline else ZERO
    return (host.base + peak + need).fits_in(host.capacity)


def held_until(host: Host, timeline: Optional['Timeline'],
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


def plan_whole(hosts: Sequence[Host], timelines: dict, start: float,
               end: float) -> Optional[list]:
    """Each of `hosts` whole (all of its capacity) over [start, end), or
    None if the ledger promised any of them to a lease then.  The servers
    outside the ledger (`base`) do not count: they leave before.
    """
    if all(fits(Host(h.node, h.capacity), timelines.get(h.node), h.capacity,
                start, end) for h in hosts):
        return [(h.node, h.capacity) for h in hosts]
    return None


def plan_units(units: Sequence[Host], timelines: dict, start: float,
               end: float, required: Sequence[str],
               count: int) -> Optional[list]:
    """`count` of the one-slot `units` (floating IP addresses) free over
    [start, end), the `required` ones among them, else None.  The others
    are taken in the order of `units`.
    """
    free = {h.node for h in units
            if fits(h, timelines.get(h.node), h.capacity, start, end)}
    if not set(required) <= free or len(set(required)) > count:
        return None
    chosen = list(dict.fromkeys(required))
    chosen += [h.node for h in units
               if h.node in free and h.node not in chosen]
    return chosen[:count] if len(chosen) >= count else None


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


def counted(asked: Mapping[str, float]) -> Resources:
    """What a server takes of the classes the ledger counts, from what it
    asks Placement for ({resource class: amount}).
    """
    return Resources(*(asked.get(rc, 0) for rc in RESOURCE_CLASSES))


def need_of(asked: Mapping[str, float],
            conditions: Sequence[str] = ()) -> Resources:
    """What a server takes, or `Uncounted` naming what a slot of the ledger
    cannot hold: a resource class it does not count, or `conditions` the
    ledger does not check when it places a slot (devices, providers other
    than the node's).
    """
    beyond = ['%s:%g' % (rc, n) for rc, n in sorted(asked.items())
              if rc not in RESOURCE_CLASSES and n]
    beyond.extend(conditions)
    if beyond:
        raise Uncounted('asks for %s, which a lease cannot hold (a slot '
                        'holds %s)' % (', '.join(beyond),
                                       ', '.join(RESOURCE_CLASSES)))
    return counted(asked)


class Uncounted(ValueError):
    """A server asks for what a lease's slot cannot hold (the message
    follows the thing asked for, a flavor: "flavor 7 asks for ...").
    """
