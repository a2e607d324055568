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

"""Where slots fit: the nodes for a reservation's slots over an
interval, whole nodes, units, and how many slots the nodes hold; pure.

Times are float seconds since the epoch (UTC).  A node's promised usage
over time is its `timeline.Timeline`.
"""

import heapq
import math
from typing import Iterable, Optional, Sequence
from typing import TYPE_CHECKING

from nova_reservation.capacity.amounts import extra_count
from nova_reservation.capacity.amounts import extra_room
from nova_reservation.capacity.amounts import FOREVER
from nova_reservation.capacity.amounts import Host
from nova_reservation.capacity.amounts import INSTANT
from nova_reservation.capacity.amounts import NO_EXTRAS
from nova_reservation.capacity.amounts import Placed
from nova_reservation.capacity.amounts import Resources
from nova_reservation.capacity.amounts import ZERO

if TYPE_CHECKING:   # the timeline module imports the amounts
    from nova_reservation.capacity.timeline import Timeline


def fits(host: Host, timeline: Optional['Timeline'], need: Resources,
         start: float, end: float, exclude: Iterable[int] = (),
         extras: tuple = NO_EXTRAS) -> bool:
    """Whether `host` holds `need` and `extras` over [start, end) beside
    its base and the slots of `timeline` (but those of `exclude`).
    """
    peak = timeline.peak(start, end, exclude) if timeline else ZERO
    if not (host.base + peak + need).fits_in(host.capacity):
        return False
    return not extras or extra_count(_extra_room(
        host, timeline, start, end, exclude, extras), extras) >= 1


def fits_for_good(host: Host, timeline: Optional['Timeline'],
                  need: Resources, now: float,
                  extras: tuple = NO_EXTRAS) -> bool:
    """Whether an ordinary server (no end) of `need` and `extras` fits on
    `host` from `now` on beside what the ledger promised, as the filter
    judges it: its extras only where some of the class is promised (the
    rest is Placement's to judge).
    """
    promised = timeline.peak_extras(now, FOREVER) if timeline and extras \
        else {}
    return fits(host, timeline, need, now, FOREVER, extras=tuple(
        (key, n) for key, n in extras if promised.get(key)))


def _extra_room(host: Host, timeline: Optional['Timeline'], start: float,
                end: float, exclude: Iterable[int] = (),
                extras: tuple = NO_EXTRAS) -> dict:
    """`extra_room` over [start, end), of the classes of `extras` only
    (the node's others are not looked at: a node may have many).
    """
    keys = frozenset(key for key, _ in extras)
    return extra_room(host, timeline.peak_extras(start, end, exclude, keys)
                      if timeline else {}, keys)


def held_until(host: Host, timeline: Optional['Timeline'],
               uses: Sequence[Resources], now: float,
               extras: Sequence[tuple] = ()) -> list:
    """For servers outside the ledger that yield to it (preemptible), or
    slots that would run on (an extension), in their order of precedence
    on `host` (the first stays longest): the instant from which the node
    no longer holds each with those before it, the ledger and `host.base`
    (now: it does not now; FOREVER: never).  `extras`: what each of `uses`
    holds beyond the three, if any (as `uses`).
    """
    found = []
    total = host.base
    held: dict = {}
    room = extra_room(host, {}) if extras else {}
    for i, use in enumerate(uses):
        total = total + use
        for key, n in (extras[i] if extras else ()):
            held[key] = held.get(key, 0) + n
        limit = host.capacity - total
        # Only the classes the slots hold can run out for them.
        more = {key: room.get(key, 0) - n for key, n in held.items()}
        tops = None
        if more:
            tops = dict.fromkeys(timeline.peak_extras(now, FOREVER)
                                 if timeline else (), FOREVER)
            tops.update(more)
        if min(limit) < 0 or min(more.values(), default=0) < 0:
            found.append(now)
        elif timeline is None:
            found.append(FOREVER)
        elif not timeline.peak(now, now + INSTANT).fits_in(limit) or any(
                n > more[key] for key, n in timeline.peak_extras(
                    now, now + INSTANT).items() if key in more):
            found.append(now)
        else:
            found.append(timeline.next_rise(now, limit, tops))
    return found


def plan(hosts: Sequence[Host], timelines: dict, need: Resources,
         count: int, start: float, end: float,
         affinity: Optional[bool] = None,
         extras: tuple = NO_EXTRAS) -> Optional[list]:
    """Choose a node for each of `count` slots of `need` (and `extras`)
    over [start, end).

    Returns the list of nodes (one per slot) or None if they do not all fit.
    Slots go to the node with the most free room (spread, like Nova's
    default weighing).  `affinity` True puts every slot on one node, False
    each on a node of its own.
    """
    free = {}
    # {node: how many slots of `extras` it holds}, for those that have any.
    left: dict = {}
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
            if extras:
                k = extra_count(_extra_room(h, timeline, start, end,
                                            extras=extras), extras)
                if k < 1:
                    continue
                left[h.node] = k
            free[h.node] = Resources(room_v, room_m, room_d)
    if not free:
        return None
    # Best first: the most room left, then the last name
    # (negated, for min() and a heap: O(n + count log n)).
    order = {n: i for i, n in enumerate(sorted(free))}

    def key(n):
        score = _score(free[n], need)
        if extras:
            score = min(score, left[n])
        return (-score, -order[n], n)
    if affinity:
        whole = need.scaled(count)
        nodes = [n for n in free if whole.fits_in(free[n]) and
                 left.get(n, count) >= count]
        return [min(map(key, nodes))[-1]] * count if nodes else None
    heap = [key(n) for n in free]
    heapq.heapify(heap)
    chosen = []
    for _ in range(count):
        if not heap:
            return None
        best = heapq.heappop(heap)[-1]
        free[best] = free[best] - need
        if extras:
            left[best] -= 1
        chosen.append(best)
        if affinity is not False and need.fits_in(free[best]) and (
                left.get(best, 1) >= 1):
            heapq.heappush(heap, key(best))
    return chosen


def plan_hosts(hosts: Sequence[Host], timelines: dict, start: float,
               end: float, min_count: int,
               max_count: int) -> Optional[list]:
    """Whole nodes free over [start, end).

    As many as `max_count`, at least `min_count`, else None.
    """
    free = sorted(h.node for h in hosts
                  if fits(h, timelines.get(h.node), h.capacity, start, end,
                          extras=h.extra_capacity))
    return free[:max_count] if len(free) >= min_count else None


def plan_whole(hosts: Sequence[Host], timelines: dict, start: float,
               end: float) -> Optional[list]:
    """Each of `hosts` whole (all of its capacity) over [start, end), or
    None if the ledger promised any of them to a lease then.  The servers
    outside the ledger (`base`) do not count: they leave before.
    """
    if all(fits(Host(h.node, h.capacity,
                     extra_capacity=h.extra_capacity),
                timelines.get(h.node), h.capacity, start, end,
                extras=h.extra_capacity) for h in hosts):
        return [Placed(h.node, h.capacity, h.extra_capacity)
                for h in hosts]
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


def how_many(room: Resources, need: Resources) -> int:
    """How many slots of `need` the room holds (0 if none)."""
    if not any(need) or not need.fits_in(room):
        return 0
    return int(_score(room, need))


def free_counts(hosts: Sequence[Host], timelines: dict, need: Resources,
                start: float, end: float,
                extras: tuple = NO_EXTRAS) -> list:
    """[(t, count)]: how many slots of `need` (and `extras`) the nodes
    hold from each t on (until the next t, or `end`), each node's room
    counted on its own (slots are not split across nodes).  Merged where
    the count does not change.
    """
    deltas: dict = {}
    for h in hosts:
        timeline = timelines.get(h.node)
        steps = (timeline.levels(start, end) if timeline is not None
                 else [(start, ZERO)])
        before = 0
        for i, (t, usage) in enumerate(steps):
            room = h.capacity - h.base - usage
            if extras:
                # The usage of a step holds until the next; a slot of no
                # vCPU, RAM or disk (bare metal) counts by its extras.
                until = steps[i + 1][0] if i + 1 < len(steps) else end
                count = int(min(
                    _score(room, need) if need.fits_in(room) else 0,
                    extra_count(_extra_room(h, timeline, t, until,
                                            extras=extras), extras)))
            else:
                count = how_many(room, need)
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
