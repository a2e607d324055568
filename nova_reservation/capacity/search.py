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

"""When slots fit: the earliest and latest starts, and the start windows,
of what a placement callback holds over the nodes' timelines; pure.
"""

from typing import Callable, Optional, Sequence

from nova_reservation.capacity.amounts import extra_room
from nova_reservation.capacity.amounts import FOREVER
from nova_reservation.capacity.amounts import Host
from nova_reservation.capacity.amounts import INSTANT
from nova_reservation.capacity.amounts import NO_EXTRAS
from nova_reservation.capacity.amounts import Resources


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
        rise = min((tl.next_rise(t + duration, tl.peak(t, t + duration),
                                 tl.peak_extras(t, t + duration))
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
                 start: float, duration: float, horizon: float,
                 extras: tuple = NO_EXTRAS) -> Optional[float]:
    """The earliest t in [start, horizon] at which some node holds `need`
    and `extras` over [t, t + duration), or None: `earliest_start` for
    one slot (or slots that stay together), node by node.
    """
    best = None
    for h in hosts:
        room = h.capacity - h.base - need
        # What the timeline may use of each class the slots hold.
        more = None
        if extras:
            free = extra_room(h, {})
            more = {key: free.get(key, 0) - n for key, n in extras}
        timeline = timelines.get(h.node)
        if timeline is None:
            t = start if min(room) >= 0 and start <= horizon and min(
                (more or {}).values(), default=0) >= 0 else None
        else:
            t = timeline.earliest_fit(start, duration, room, horizon, more)
        if t is not None and (best is None or t < best):
            best = horizon = t
    return best
