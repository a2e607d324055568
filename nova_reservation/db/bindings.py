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
"""The bindings of servers to leases: which lease and reservation each
server of a lease belongs to, and its state (`status.BINDING`), written
only where the binding's moves allow it.
"""

from typing import Iterable, Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import events
from nova_reservation.db import leases
from nova_reservation.db import ledger
from nova_reservation.db import models
from nova_reservation.lease import resource_types
from nova_reservation import status


@api.writer
def pass_on(ctx, instance_uuid: str, lease_id: str,
            reservation_id: str) -> None:
    """A server of a recurring lease goes on to its next occurrence,
    reserved until it starts, holding a slot of it (not one that failed or
    ended: the binding's moves allow it no more).
    """
    b = models.ServerBinding
    if ctx.session.execute(sa.update(b).where(
            b.instance_uuid == instance_uuid,
            b.state.in_(status.BINDING.sources(status.RESERVED))).values(
            lease_id=lease_id, reservation_id=reservation_id,
            state=status.RESERVED)).rowcount == 1:
        ledger.take_slots(ctx, reservation_id, [instance_uuid])


@api.writer
def bind_servers(ctx, lease_id: str, reservation_id: str,
                 instance_uuids: Iterable[str],
                 lease_status: Optional[str] = None,
                 state: str = status.BOOTING,
                 claim: Optional[str] = None, bind_event: bool = False,
                 take_slots: bool = True,
                 project_id: Optional[str] = None) -> bool:
    """Record the servers of a lease in binding `state`, each holding one
    of its free slots (with `take_slots`; not for whole hosts; a server
    that holds one already keeps it) until the engine ties it to the one
    on its node (a `bind_event` due now has it do that).

    With `lease_status`, the lease moves there from CREATING; if it is not
    CREATING any more (deleted meanwhile), nothing is written and the
    answer is False.  `project_id`: the servers' project, if it is not
    the lease's (a shared reservation's).
    """
    instance_uuids = list(instance_uuids)
    # A waiting lease keeps the reason it waits.
    if lease_status and not leases.set_status(ctx, [lease_id], lease_status,
                                              only_from=(status.CREATING,),
                                              keep_reason=True):
        return False
    if lease_status:
        # A recurring lease's later occurrences wait for their turn.
        leases.set_status(ctx, leases.later_occurrences(ctx, lease_id),
                          status.PENDING_APPROVAL
                          if lease_status == status.PENDING_APPROVAL
                          else status.PENDING, only_from=(status.CREATING,),
                          keep_reason=True)
    b = models.ServerBinding
    known = dict(ctx.session.execute(sa.select(b.instance_uuid, b.state).where(
        b.instance_uuid.in_(instance_uuids))).all())
    # Bound already (a retry): only where the binding's moves allow it.
    movable = [u for u in instance_uuids
               if u not in known or status.BINDING.can(known[u], state)]
    if take_slots:
        ledger.take_slots(ctx, reservation_id, movable, claim)
    for uuid in movable:
        if uuid not in known:
            ctx.session.add(models.ServerBinding(
                instance_uuid=uuid, lease_id=lease_id,
                reservation_id=reservation_id, state=state,
                project_id=project_id))
        else:
            ctx.session.execute(sa.update(b).where(
                b.instance_uuid == uuid).values(
                lease_id=lease_id, reservation_id=reservation_id,
                state=state))
    if bind_event:
        events.add(ctx, lease_id, [dict(event_type='bind',
                                        due_at=api.utcnow())])
    return True


@api.reader
def of_lease(ctx, lease_id: str) -> list:
    b = models.ServerBinding
    return api.rows(ctx, sa.select(b).where(b.lease_id == lease_id).order_by(
        b.instance_uuid))


@api.reader
def of_reservation(ctx, reservation_id: str) -> list:
    """The bindings of the servers of a reservation that have not ended."""
    b = models.ServerBinding
    return api.rows(ctx, sa.select(b).where(
        b.reservation_id == reservation_id,
        b.state != status.ENDED).order_by(b.instance_uuid))


@api.reader
def of_servers(ctx, instance_uuids: Iterable[str]) -> list:
    """The bindings of those servers that have one."""
    b = models.ServerBinding
    return api.rows(ctx, sa.select(b).where(
        b.instance_uuid.in_(list(instance_uuids))).order_by(b.instance_uuid))


@api.reader
def bound_servers(ctx) -> dict:
    """{server uuid: lease id} of every server the store ties to a lease
    that is not over: by its binding, or by the slot it holds.
    """
    b = models.ServerBinding
    found = dict(ctx.session.execute(sa.select(
        b.instance_uuid, b.lease_id).where(
        b.state.notin_((status.ENDED, status.FAILED)))).all())
    found.update(ledger.bound_servers(ctx))
    return found


@api.writer
def set_binding(ctx, instance_uuid: str, **values) -> bool:
    """Change a server's binding; a new `state` only where the move is
    allowed.  Whether it changed.
    """
    b = models.ServerBinding
    where = [b.instance_uuid == instance_uuid]
    if 'state' in values:
        where.append(b.state.in_(status.BINDING.sources(values['state'])))
    return ctx.session.execute(sa.update(b).where(*where).values(
        **values)).rowcount == 1


@api.writer
def servers_gone(ctx, instance_uuids: Iterable[str]) -> list:
    """The servers no longer exist: their bindings end, and the slots they
    held are free for another boot.  Returns the server leases left with
    none of their servers, which the caller takes down.
    """
    uuids = list(instance_uuids)
    b, r, t, e = (models.ServerBinding, models.Reservation, models.Lease,
                  models.Event)
    ending = api.rows(ctx, sa.select(b).where(
        b.instance_uuid.in_(uuids), b.state != status.ENDED))
    ledger.free_servers(ctx, uuids)
    if not ending:
        return []
    for binding in ending:
        binding.state = status.ENDED
    ctx.session.flush()
    theirs = {x.lease_id for x in ending}
    left = set(ctx.session.execute(sa.select(b.lease_id).where(
        b.lease_id.in_(theirs), b.state != status.ENDED)).scalars())
    # Not those that are ending: their end event deletes the servers.
    in_end = sa.select(e.lease_id).where(
        e.event_type == 'end', e.status == status.IN_PROGRESS)
    return sorted(set(ctx.session.execute(sa.select(t.id).join(
        r, r.lease_id == t.id).where(
        t.id.in_(theirs - left), r.resource_type == resource_types.SERVER,
        t.status.in_((status.PENDING, status.PENDING_APPROVAL,
                      status.ACTIVE)),
        t.id.notin_(in_end))).scalars()))


@api.writer
def server_failed(ctx, instance_uuid: str, lease_id: str,
                  reason: str) -> None:
    """A server of a lease failed (to boot): its binding fails, its slot is
    free for another boot, and the lease is degraded, with the reason.
    """
    set_binding(ctx, instance_uuid, state=status.FAILED)
    s = models.Slot
    held = [s.instance_uuid == instance_uuid, s.deleted == sa.false()]
    if ctx.session.execute(sa.select(s.id).where(*held)).first():
        ctx.session.execute(sa.update(s).where(*held).values(
            instance_uuid=None, generation=ledger.bump(ctx)))
    leases.mark_degraded(ctx, [lease_id], reason)
