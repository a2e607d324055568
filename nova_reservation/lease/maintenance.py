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

"""Maintenance windows: a lease of one maintenance reservation holds the
nodes it names whole over its interval.

Before it is written, the slots that other leases hold on those nodes
then move to other nodes that fit, as relocation moves slots off failed
nodes: future ones, and those of running leases too (a server in such a
slot follows it: the engine live-migrates it before the window starts).
Where one can not move (no other node has room, a running host
reservation, or another window holds the node), the window is refused,
naming each such lease and why, and nothing moves: the operator learns
it before any lease changes, and picks another time or frees room.
"""

from typing import Optional

from nova_reservation.capacity.epoch import when_text
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import maintenance as db_maintenance
from nova_reservation.exception import InvalidParam
from nova_reservation.exception import NoCapacity
from nova_reservation.exception import WindowBlocked
from nova_reservation.lease import kinds
from nova_reservation.lease import relocation
from nova_reservation.lease.request import interval
from nova_reservation.lease import schedule
from nova_reservation.lease import write

# Tries of moving the leases off and writing the window, while other
# leases take the nodes meanwhile.
TRIES = 3


def window_of(requests: list) -> Optional[object]:
    """The maintenance reservation's request of a lease, or None."""
    for req in requests:
        if kinds.of(req.resource_type).window:
            return req
    return None


def create(writer: write.Writer, values: dict, req) -> dict:
    """Write the window of `values` (the lease row's) and `req`, once the
    other leases' slots in its way moved: {lease id: slots moved};
    WindowBlocked.
    """
    start, end = interval(values)
    for attempt in range(TRIES):
        moved = clear(writer, req, start, end, writer.clock())
        try:
            writer.create(values, [req], schedule.lease_events(
                values, db_api.utcnow()))
            return moved
        except NoCapacity:
            if attempt == TRIES - 1:
                raise   # A lease took a node again meanwhile, each time.
    return {}


def clear(writer: write.Writer, req, start: float, end: float,
          now: float) -> dict:
    """Move off `req`'s nodes the other leases' slots that meet [start,
    end): {lease id: slots moved}; InvalidParam if a node is unknown,
    WindowBlocked, with nothing moved, if a lease can not move.
    """
    writer.ledger.refresh()
    shared, reservable = writer.pools(start=start)
    known = {h.node for h in shared} | {h.node for h, _ in reservable}
    for i, name in enumerate(req.hosts):
        if name not in known:
            raise InvalidParam('reservations[0].hosts[%d]' % i,
                               'no compute node named %s' % name)
    view = writer.ledger.view
    stuck, moving = {}, {}
    for node in req.hosts:
        for slot in view.slots_on(node):
            if not (slot.start < end and slot.end > start):
                continue
            info = view.reservation(slot.reservation_id)
            if info is None:
                continue
            if kinds.of(info.resource_type).window:
                stuck.setdefault(info.lease_id, 'its maintenance window '
                                 'holds node %s then' % node)
            elif slot.start <= now and not movable_now(info, slot):
                stuck.setdefault(info.lease_id, unmovable_now(info, slot,
                                                              node))
            else:
                # A running slot that moves holds its new node from now
                # on, while its server still runs on the old one (whose
                # usage Nova counts) until the engine moves it: counted on
                # both meanwhile, never on neither; the window holds the
                # old node whole from its start only, by which time the
                # server left (or the window lists it).
                moving[info.lease_id] = moving.get(info.lease_id, 0) + 1
    if not stuck and moving:
        _, degraded = relocation.relocate(writer, req.hosts, now,
                                          (start, end), all_or_none=True,
                                          running=True)
        for lease_id in degraded:
            stuck[lease_id] = ('no other node has room for its slots on %s '
                               'from %s to %s UTC' % (
                                   ', '.join(req.hosts), when_text(start),
                                   when_text(end)))
    if stuck:
        raise WindowBlocked(
            'The maintenance window from %s to %s UTC can not hold node(s) '
            '%s: %s' % (when_text(start), when_text(end),
                        ', '.join(req.hosts), '; '.join(
                            'lease %s: %s' % item
                            for item in sorted(stuck.items()))),
            leases=[{'lease_id': lease_id, 'reason': why}
                    for lease_id, why in sorted(stuck.items())])
    return moving


def movable_now(info, slot) -> bool:
    """Whether a slot of a running lease moves to another node: a slot of
    servers (capacity, or a server's own) does, with its server if it
    holds one, which the engine live-migrates there before the window
    starts; a host reservation's (its aggregate, its servers bound to the
    host) does not, nor a slot a boot is claiming now (its server lands
    on the old node).
    """
    return info.resource_type in kinds.SHARED_POOL and not (
        slot.instance_uuid or '').startswith(db_ledger.CLAIM_PREFIX)


def unmovable_now(info, slot, node: str) -> str:
    """Why the running lease's slot on `node` does not move."""
    if info.resource_type in kinds.SHARED_POOL:
        return ('a server is booting into its slot on node %s now; try '
                'again once it runs' % node)
    return ('it runs on node %s now and a running host reservation is '
            'not moved' % node)


def set_unmoved(reservation_id: str, unmoved: list) -> bool:
    """Record the servers a window could not move off its nodes
    ([{server_id, node, reason}]); whether that changed the record.
    """
    return db_maintenance.set_unmoved(db_api.Context(), reservation_id,
                                      unmoved)


def keeps_dates(lease, values: dict) -> None:
    """WindowBlocked if `values` change the dates of `lease` (its row) and it
    is a window: its nodes were cleared for its dates only.
    """
    if all(values.get(f, getattr(lease, f)) == getattr(lease, f)
           for f in ('start_at', 'end_at')):
        return
    if any(kinds.of(r.resource_type).window for r in db_leases.reservations(
            db_api.Context(), lease.id)):
        raise WindowBlocked(
            'lease %s is a maintenance window: its dates do not '
            'change; delete it and make another' % lease.id)


def check_alone(body: dict, requests: list) -> None:
    """A maintenance window's lease holds that one reservation, over one
    interval that it takes as asked (it neither recurs nor waits).
    """
    if window_of(requests) is None:
        return
    if len(requests) > 1:
        raise InvalidParam('reservations', 'a lease with a maintenance '
                           'reservation holds no other reservation')
    for field in ('recurrence', 'if_busy', 'flexible_start', 'on_end'):
        if field in body and body[field] not in ('refuse', False, 'delete',
                                                 'none'):
            raise InvalidParam(field, 'is not supported with a maintenance '
                               'reservation')
