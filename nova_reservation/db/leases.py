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

"""Leases and their reservations (the bindings of their servers are
`bindings`'s).

A status is written only where `nova_reservation.status` allows the move,
so that a late or repeated write changes nothing.  The functions that
change capacity write the ledger (`ledger`) and the events (`events`) in
the same transaction.
"""

import datetime
from typing import Callable, Iterable, NamedTuple, Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import events
from nova_reservation.db import holds
from nova_reservation.db import ledger
from nova_reservation.db import models
from nova_reservation.exception import LeaseChanged
from nova_reservation import status


class Details(NamedTuple):
    """A lease with its reservations, bindings and events."""
    lease: models.Lease
    reservations: list
    bindings: list
    events: list


# ----------------------------------------------------------------- leases

@api.reader
def get(ctx, lease_id: str) -> Optional[models.Lease]:
    return ctx.session.get(models.Lease, lease_id)


@api.reader
def trust_in_use(ctx, trust_id: str, besides: str) -> bool:
    """Whether a lease other than `besides` that is not over (an
    occurrence of the same series) holds trust `trust_id`.
    """
    t = models.Lease
    return ctx.session.query(t.id).filter(
        t.trust_id == trust_id, t.id != besides,
        t.status.notin_((status.REFUSED, status.TERMINATED,
                         status.DELETED))).first() is not None


@api.reader
def trusts(ctx) -> dict:
    """{trust id: whether a lease that is not over holds it} of the
    trusts of every lease.
    """
    t = models.Lease
    found: dict = {}
    for trust_id, state in ctx.session.query(t.trust_id, t.status).filter(
            t.trust_id.isnot(None)):
        found[trust_id] = found.get(trust_id, False) or state not in (
            status.REFUSED, status.TERMINATED, status.DELETED)
    return found


@api.reader
def get_many(ctx, lease_ids: Iterable[str]) -> dict:
    """{lease id: lease} of those that exist."""
    t = models.Lease
    return {x.id: x for x in api.rows(ctx, sa.select(t).where(
        t.id.in_(sorted(set(lease_ids)))))}


@api.reader
def get_all(ctx, project_id: Optional[str] = None) -> list:
    """Leases that are not deleted, of one project or of all."""
    t = models.Lease
    query = sa.select(t).where(t.status != status.DELETED)
    if project_id is not None:
        query = query.where(t.project_id == project_id)
    return api.rows(ctx, query.order_by(t.created_at, t.id))


@api.reader
def in_state(ctx, state: str, before: datetime.datetime) -> list:
    """Leases in `state` since before `before` (created or last changed).
    """
    t = models.Lease
    return api.rows(ctx, sa.select(t).where(
        t.status == state,
        sa.func.coalesce(t.updated_at, t.created_at) < before).order_by(
        t.created_at))


@api.reader
def series(ctx, series_ids: Iterable[str]) -> dict:
    """{series id: [its occurrences that are not deleted, in order]}."""
    t = models.Lease
    found: dict = {}
    for row in api.rows(ctx, sa.select(t).where(
            t.series_id.in_(sorted(set(series_ids))),
            t.status != status.DELETED).order_by(t.occurrence)):
        found.setdefault(row.series_id, []).append(row)
    return found


@api.reader
def occurrence(ctx, lease, later: bool) -> Optional[models.Lease]:
    """The next occurrence of `lease` in its series (`later`), or the one
    before, leaving out those being deleted; None if there is none.
    """
    if lease.series_id is None:
        return None
    t = models.Lease
    return api.row(ctx, sa.select(t).where(
        t.series_id == lease.series_id,
        t.occurrence > lease.occurrence if later
        else t.occurrence < lease.occurrence,
        t.status.notin_((status.DELETING, status.DELETED))).order_by(
        t.occurrence if later else t.occurrence.desc()).limit(1))


@api.reader
def of_token(ctx, project_id: str, token: str) -> Optional[models.Lease]:
    """The project's lease made with that client token, or None."""
    t = models.Lease
    return api.row(ctx, sa.select(t).where(t.project_id == project_id,
                                           t.client_token == token))


@api.reader
def running(ctx, now: datetime.datetime) -> list:
    """The leases that are ACTIVE and not over at `now`."""
    t = models.Lease
    return api.rows(ctx, sa.select(t).where(
        t.status == status.ACTIVE, t.start_at <= now,
        t.end_at > now).order_by(t.start_at, t.id))


@api.writer
def set_idle(ctx, lease_id: str, since: Optional[datetime.datetime]
             ) -> None:
    """The lease is idle since `since` (kept if it already was), or busy
    again (None: the next idle stretch is told anew).
    """
    t = models.Lease
    if since is None:
        ctx.session.execute(sa.update(t).where(
            t.id == lease_id, t.idle_since.isnot(None)).values(
            idle_since=None, idle_told=None))
    else:
        ctx.session.execute(sa.update(t).where(
            t.id == lease_id, t.idle_since.is_(None)).values(
            idle_since=since))


@api.writer
def tell_idle(ctx, lease_id: str, since: datetime.datetime) -> bool:
    """Take the telling of the idle stretch that began at `since`: once,
    whichever engine gets there first (the caller's release of unused
    capacity and its notice join this transaction).
    """
    t = models.Lease
    return ctx.session.execute(sa.update(t).where(
        t.id == lease_id, t.idle_since == since,
        sa.or_(t.idle_told.is_(None), t.idle_told != since)).values(
        idle_told=since)).rowcount == 1


@api.reader
def details(ctx, lease_ids: Iterable[str]) -> dict:
    """{lease id: Details} of the leases that exist, read in one snapshot
    with one query per table whatever their number.
    """
    found = {x.id: Details(x, [], [], [])
             for x in get_many(ctx, lease_ids).values()}
    if not found:
        return {}
    for field, model, order in (
            ('reservations', models.Reservation, (models.Reservation.id,)),
            ('bindings', models.ServerBinding,
             (models.ServerBinding.instance_uuid,)),
            ('events', models.Event, (models.Event.due_at, models.Event.id))):
        for x in api.rows(ctx, sa.select(model).where(
                model.lease_id.in_(list(found))).order_by(*order)):
            getattr(found[x.lease_id], field).append(x)
    return found


@api.writer
def set_status(ctx, lease_ids: Iterable[str], new: str,
               reason: Optional[str] = None,
               only_from: Optional[Iterable[str]] = None,
               keep_reason: bool = False, **values) -> int:
    """Move leases to `new` where the move is allowed (and, with
    `only_from`, from those states only), with `reason` (or the one they
    have, with `keep_reason`); how many moved.
    """
    t = models.Lease
    sources = set(status.LEASE.sources(new))
    if only_from is not None:
        sources &= set(only_from)
    if not keep_reason:
        values['status_reason'] = reason
    return ctx.session.execute(sa.update(t).where(
        t.id.in_(list(lease_ids)), t.status.in_(sorted(sources))).values(
        status=new, updated_at=api.utcnow(), **values)).rowcount


@api.writer
def mark_degraded(ctx, lease_ids: Iterable[str],
                  reason: Optional[str] = None) -> None:
    """The leases can not be all they promised (a node or a server
    failed); they go on with what they have.
    """
    t = models.Lease
    values = dict(degraded=True, updated_at=api.utcnow(),
                  version=t.version + 1)
    if reason:
        values['status_reason'] = reason[:1000]
    ctx.session.execute(sa.update(t).where(
        t.id.in_(list(lease_ids)), t.status.in_(status.LIVE)).values(
        **values))


@api.writer
def create(ctx, planned: Optional[int], lease: dict,
           reservations: Iterable[tuple],
           lease_events: Iterable[dict]) -> None:
    """Write a lease, its reservations and their slots, and its events.

    All or nothing, and only if the nodes of its slots are as they were at
    generation `planned` (else exception.LedgerConflict).  `reservations`:
    ``[(reservation columns, [slot columns, ...])]``.
    """
    create_many(ctx, planned, [(lease, reservations, lease_events)])


@api.writer
def create_many(ctx, planned: Optional[int], leases: Iterable[tuple]
                ) -> None:
    """Write leases (the occurrences of a recurring one) as `create`
    does, all or nothing: `leases` is ``[(lease columns, reservations,
    [event columns])]``.
    """
    leases = [(lease, list(reservations), lease_events)
              for lease, reservations, lease_events in leases]
    gen = ledger.bump(ctx, planned, (
        s['node'] for _, reservations, _ in leases
        for _, slots in reservations for s in slots))
    for lease, reservations, lease_events in leases:
        ctx.session.add(models.Lease(version=0, degraded=False, **lease))
        ctx.session.flush()
        for values, slots in reservations:
            ctx.session.add(models.Reservation(generation=gen,
                                               deleted=False, **values))
            ctx.session.flush()
            ledger.add_slots(ctx, gen, values['id'], slots)
        events.add(ctx, lease['id'], lease_events)


@api.writer
def change(ctx, planned: Optional[int], lease_id: str, version: int,
           values: dict, growth: dict, due: dict,
           hold: Optional[tuple] = None, replaced: Iterable[str] = (),
           also: Optional[Callable] = None) -> None:
    """Apply a change to a lease, its slots and its events, all or nothing.

    Conditional twice: on the ledger generation the change was planned on
    (exception.LedgerConflict), and on the lease `version` it was asked
    against (LeaseChanged), so that two changes of one lease can not lose
    each other.  `growth`: {reservation id: (its new sizes, as columns,
    [new slot, ...])}; `due`: {event type: when} of its events.

    `hold`: (hold, slot count) of the slots held for this change
    (`ledger.hold`), which cover whatever it adds: they go
    (`holds.spend_hold`), and the change needs no plan (`planned` None).
    `replaced`: reservations whose slots in `growth` replace all they had.
    `also(ctx)`: more to write in the same transaction.
    """
    holds.spend_hold(ctx, hold)
    own = [r.id for r in reservations(ctx, lease_id)]
    gen = ledger.bump(ctx, planned, ledger.nodes_of(ctx, own) + [
        s['node'] for _, slots in growth.values() for s in slots])
    t = models.Lease
    if ctx.session.execute(sa.update(t).where(
            t.id == lease_id, t.version == version,
            t.status != status.DELETED).values(
            version=t.version + 1, updated_at=api.utcnow(),
            **values)).rowcount != 1:
        raise LeaseChanged()
    lease = get(ctx, lease_id)
    ledger.set_times(ctx, gen, own, lease.start_at, lease.end_at)
    for rid in replaced:
        ledger.drop_slots(ctx, gen, rid)
    for rid, (sizes, slots) in growth.items():
        ctx.session.execute(sa.update(models.Reservation).where(
            models.Reservation.id == rid).values(
            generation=gen, updated_at=api.utcnow(), **sizes))
        ledger.add_slots(ctx, gen, rid, slots)
    events.move(ctx, lease_id, due)
    if also:
        also(ctx)


# ---------------------------------------------------------- waiting leases


@api.writer
def begin_delete(ctx, lease_id: str) -> bool:
    """Take a lease down, in whatever state it is; whether it was not
    being deleted already.

    Its capacity goes back to the ledger now, and an end event due now has
    the engine remove what it made (servers, aggregates, flavors).
    """
    if not set_status(ctx, [lease_id], status.DELETING,
                      version=models.Lease.version + 1):
        return False
    ledger.release(ctx, lease_id)
    events.drop(ctx, lease_id)
    events.add(ctx, lease_id, [dict(event_type='end', due_at=api.utcnow())])
    return True


@api.writer
def discard(ctx, lease_id: str) -> bool:
    """Remove a lease still CREATING whose boot made nothing (Nova refused
    it, or its nova-api died first): it goes at once, with its capacity,
    and so do the later occurrences of a recurring one.  Whether it did
    (it may have been bound or deleted meanwhile).
    """
    if not set_status(ctx, [lease_id], status.DELETED,
                      only_from=(status.CREATING,)):
        return False
    gone = [lease_id] + [i for i in later_occurrences(ctx, lease_id)
                         if set_status(ctx, [i], status.DELETED,
                                       only_from=(status.CREATING,))]
    for i in gone:
        ledger.release(ctx, i)
        events.drop(ctx, i)
    ctx.session.execute(sa.delete(models.ServerBinding).where(
        models.ServerBinding.lease_id.in_(gone)))
    return True


def later_occurrences(ctx, lease_id: str) -> list:
    """The ids of the other occurrences of the series `lease_id` heads."""
    return [x.id for x in series(ctx, [lease_id]).get(lease_id, [])
            if x.id != lease_id]


@api.writer
def retry_event(ctx, lease_id: str, event_id: int) -> bool:
    """An admin's retry of an event in ERROR: due again now, and a lease in
    ERROR back to where it was: ACTIVE once it has started, else PENDING.
    Whether the event was in ERROR.
    """
    if not events.retry(ctx, lease_id, event_id):
        return False
    set_status(ctx, [lease_id], status.ACTIVE if events.started(
        ctx, lease_id) else status.PENDING, only_from=(status.ERROR,))
    return True


# ----------------------------------------------------------- reservations

@api.reader
def reservation(ctx, reservation_id: str) -> Optional[models.Reservation]:
    return ctx.session.get(models.Reservation, reservation_id)


@api.reader
def reservations(ctx, lease_id: str) -> list:
    return api.rows(ctx, sa.select(models.Reservation).where(
        models.Reservation.lease_id == lease_id).order_by(
        models.Reservation.id))


@api.reader
def reservation_of_flavor(ctx, flavor_id: str
                          ) -> Optional[models.Reservation]:
    """The capacity reservation whose private flavor this is."""
    r = models.Reservation
    return api.row(ctx, sa.select(r).where(
        r.private_flavor_id == flavor_id, r.deleted == sa.false()))


def reservations_on(ctx, node: str, after: datetime.datetime) -> list:
    """The reservations with a slot on `node` that ends after `after`."""
    return reservations_by_node(ctx, after, [node]).get(node, [])


@api.reader
def reservations_by_node(ctx, after: datetime.datetime,
                         nodes: Optional[Iterable[str]] = None) -> dict:
    """{node: the reservations with a slot on it that ends after `after`,
    by lease and id} of `nodes`, or of every node (None).
    """
    s = models.Slot
    query = sa.select(s.node, s.reservation_id).where(
        s.deleted == sa.false(), s.end_at > after).distinct()
    if nodes is not None:
        query = query.where(s.node.in_(sorted(set(nodes))))
    held_on: dict = {}
    for node, reservation_id in ctx.session.execute(query):
        held_on.setdefault(reservation_id, []).append(node)
    r = models.Reservation
    found: dict = {}
    for res in api.rows(ctx, sa.select(r).where(r.id.in_(sorted(
            held_on))).order_by(r.lease_id, r.id)):
        for node in held_on[res.id]:
            found.setdefault(node, []).append(res)
    return found


@api.writer
def set_reservation(ctx, reservation_id: str, **values) -> None:
    ctx.session.execute(sa.update(models.Reservation).where(
        models.Reservation.id == reservation_id).values(**values))


# --------------------------------------------------------------- bindings
