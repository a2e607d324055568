"""Reads and writes of the store.

The tables live in Nova's API database and go through Nova's own engine
facade for it, so that nova-api, nova-scheduler and the engine share one
configuration (``[api_database] connection``) and Nova's test fixtures
cover them too.
"""

import datetime
from typing import Iterable, NamedTuple, Optional

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import uuidutils

from nova.db.api import api as nova_api_db
import sqlalchemy as sa

from nova_reservation import conf
from nova_reservation.db import models
from nova_reservation import status

CONF = conf.CONF
# Pool settings of [api_database] that the store's own engine keeps.
STORE_DB_OPTIONS = ('max_pool_size', 'max_overflow', 'pool_timeout',
                    'connection_recycle_time', 'mysql_sql_mode',
                    'max_retries', 'retry_interval')

# What `claim_slots` holds slots with, until the boot's servers exist.
CLAIM_PREFIX = 'boot-'
# Event states, as the engine and tests name them.
UNDONE, IN_PROGRESS, DONE, ERROR = (status.UNDONE, status.IN_PROGRESS,
                                    status.DONE, status.ERROR)


class LedgerConflict(Exception):
    """The ledger changed since it was read: re-read and try again."""


class _Scope:
    """A transaction scope for the engine facade (one per call)."""


# Per engine of Nova's API database: the store's own context manager on
# it, or None to share Nova's.
_STORES = {}


def _context_manager():
    """The store's transactions: Nova's API database, in full UTF-8.

    Nova's connection string usually asks for ``charset=utf8``, which on
    MySQL/MariaDB is three bytes a character and can not carry every name
    (an emoji, some scripts); the store's tables are utf8mb4.  There the
    store opens its own connections to the same database with
    ``charset=utf8mb4``, leaving Nova's own as they are.
    """
    nova_engine = nova_api_db.get_engine()
    key = id(nova_engine)
    if key not in _STORES:
        url = nova_engine.url
        store = None
        if url.get_backend_name() == 'mysql' and \
                url.query.get('charset') != 'utf8mb4':
            store = enginefacade.transaction_context()
            options = {k: v for k, v in CONF.api_database.items()
                       if k in STORE_DB_OPTIONS}
            options['connection'] = url.update_query_dict(
                {'charset': 'utf8mb4'}).render_as_string(
                    hide_password=False)
            store.configure(**options)
        _STORES[key] = store
    return _STORES[key] or nova_api_db.context_manager


def get_engine() -> sa.engine.Engine:
    return _context_manager().writer.get_engine()


def _writer():
    return _context_manager().writer.using(_Scope())


def _reader():
    return _context_manager().reader.using(_Scope())


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _get(model, key):
    with _reader() as session:
        row = session.get(model, key)
        session.expunge_all()
        return row


def _select(query, first: bool = False):
    """Run a SELECT of model rows and return them detached."""
    with _reader() as session:
        result = session.execute(query).scalars()
        rows = result.first() if first else result.all()
        session.expunge_all()
        return rows


def _bump(session, planned: Optional[int] = None,
          nodes: Iterable[str] = ()) -> int:
    """Advance the ledger generation, the first write of every ledger
    transaction: its row lock makes writers take turns.

    With `planned` (the generation a plan was made on), only if no slot on
    `nodes` was written since: a plan is only stale where it adds to a
    node, so writers on different nodes never make each other plan again
    (as Placement's generations are per provider).
    """
    table = models.LedgerState.__table__
    session.execute(table.update().where(table.c.id == 1).values(
        generation=table.c.generation + 1))
    nodes = sorted(set(nodes))
    if planned is not None and nodes:
        a = models.Allocation
        if session.execute(sa.select(a.id).where(
                a.node.in_(nodes), a.generation > planned).limit(1)).first():
            raise LedgerConflict()
    return session.execute(sa.select(table.c.generation).where(
        table.c.id == 1)).scalar_one()


# ----------------------------------------------------------------- ledger

def ledger_changes(epoch: Optional[str], since: int) -> tuple:
    """(epoch, generation, reservations, allocations) changed after
    generation `since` of store `epoch` (all of them for another epoch),
    read in one snapshot.

    """
    with _reader() as session:
        state = session.execute(sa.select(models.LedgerState).where(
            models.LedgerState.id == 1)).scalar_one()
        gen = state.generation
        if state.epoch != epoch:
            since = -1
        elif gen == since:
            return epoch, gen, [], []
        res = session.execute(sa.select(models.Reservation).where(
            models.Reservation.generation > since)).scalars().all()
        allocs = session.execute(sa.select(models.Allocation).where(
            models.Allocation.generation > since)).scalars().all()
        session.expunge_all()
        return state.epoch, gen, res, allocs


def create_lease(expected_generation: int, lease: dict,
                 reservations: Iterable[tuple],
                 events: Iterable[dict]) -> None:
    """Write a lease, its reservations and their slots, and its events.

    All or nothing, and only if the nodes of its slots are as they were at
    `expected_generation`.  `reservations`: ``[(reservation, [slot,
    ...])]``.
    """
    with _writer() as session:
        gen = _bump(session, expected_generation, (
            a['node'] for _, slots in reservations for a in slots))
        session.add(models.Lease(version=0, degraded=False, **lease))
        session.flush()
        for reservation, slots in reservations:
            session.add(models.Reservation(generation=gen, deleted=False,
                                           **reservation))
            session.flush()
            for a in slots:
                session.add(models.Allocation(
                    generation=gen, deleted=False,
                    reservation_id=reservation['id'], **a))
        for e in events:
            session.add(models.Event(lease_id=lease['id'], status=UNDONE,
                                     attempts=0, runs=0,
                                     scheduled_at=e['due_at'], **e))


class LeaseChanged(Exception):
    """The lease changed since it was read: nothing was written."""


def change_lease(expected_generation: int, lease_id: str, version: int,
                 values: dict, start_at: datetime.datetime,
                 end_at: datetime.datetime, growth: dict) -> None:
    """Apply a change to a lease, its slots and its events, all or nothing.

    Conditional twice: on the ledger generation the change was planned on,
    and on the lease `version` it was asked against, so that two changes of
    one lease can not lose each other.  `growth`: {reservation id: (its
    new sizes, as columns, [new slot, ...])}.
    """
    with _writer() as session:
        res_ids = sa.select(models.Reservation.id).where(
            models.Reservation.lease_id == lease_id).scalar_subquery()
        own = session.execute(sa.select(models.Allocation.node).where(
            models.Allocation.reservation_id.in_(res_ids),
            models.Allocation.deleted == sa.false())).scalars().all()
        gen = _bump(session, expected_generation, own + [
            a['node'] for _, slots in growth.values() for a in slots])
        t = models.Lease
        done = session.execute(sa.update(t).where(
            t.id == lease_id, t.version == version,
            t.status != 'DELETED').values(
            version=t.version + 1, updated_at=utcnow(),
            **values)).rowcount
        if done != 1:
            raise LeaseChanged()
        session.execute(sa.update(models.Allocation).where(
            models.Allocation.reservation_id.in_(res_ids),
            models.Allocation.deleted == sa.false()).values(
            start_at=start_at, end_at=end_at, generation=gen))
        for rid, (sizes, slots) in growth.items():
            session.execute(sa.update(models.Reservation).where(
                models.Reservation.id == rid).values(
                generation=gen, updated_at=utcnow(), **sizes))
            for a in slots:
                session.add(models.Allocation(generation=gen, deleted=False,
                                              reservation_id=rid, **a))
        lease = session.get(models.Lease, lease_id)
        for e in session.execute(sa.select(models.Event).where(
                models.Event.lease_id == lease_id,
                models.Event.status == UNDONE)).scalars():
            due = event_time(e.event_type, lease)
            if due is not None:
                e.due_at = e.scheduled_at = due


def event_time(event_type: str, lease) -> Optional[datetime.datetime]:
    """When an event of the lease falls due (None: whenever it is)."""
    if event_type == 'start':
        return lease.start_at
    if event_type == 'end':
        return lease.end_at
    if event_type == 'before_end' and lease.before_end_minutes:
        return lease.end_at - datetime.timedelta(
            minutes=lease.before_end_minutes)
    if event_type == 'before_start' and CONF.reservation.before_start_offset:
        return lease.start_at - datetime.timedelta(
            minutes=CONF.reservation.before_start_offset)
    return None


def begin_delete(lease_id: str) -> None:
    """Take a lease down, in whatever state it is.

    Its capacity goes back to the ledger now, and an end event due now has
    the engine remove what it made (servers, aggregates, flavors).
    """
    with _writer() as session:
        if not _set_lease_status(session, [lease_id], status.DELETING,
                                 version=models.Lease.version + 1):
            return   # Being deleted already, or gone.
        _release(session, lease_id)
        now = utcnow()
        session.add(models.Event(lease_id=lease_id, event_type='end',
                                 due_at=now, scheduled_at=now, runs=0,
                                 status=UNDONE, attempts=0))


def discard_lease(lease_id: str) -> bool:
    """Remove a lease still CREATING whose boot made nothing (Nova refused
    it, or its nova-api died first): it goes at once, with its capacity.
    Whether it did (it may have been bound or deleted meanwhile).
    """
    with _writer() as session:
        if not _set_lease_status(session, [lease_id], status.DELETED,
                                 only_from=(status.CREATING,)):
            return False
        _release(session, lease_id)
        session.execute(sa.delete(models.ServerBinding).where(
            models.ServerBinding.lease_id == lease_id))
        return True


def _set_lease_status(session, lease_ids: list, new: str,
                      reason: Optional[str] = None, only_from=None,
                      **values) -> int:
    """Move leases to `new` where the move is allowed (and, with
    `only_from`, from those states only); how many moved.
    """
    t = models.Lease
    sources = set(status.LEASE.sources(new))
    if only_from is not None:
        sources &= set(only_from)
    return session.execute(sa.update(t).where(
        t.id.in_(lease_ids), t.status.in_(sorted(sources))).values(
        status=new, updated_at=utcnow(), status_reason=reason,
        **values)).rowcount


def _release(session, lease_id: str) -> None:
    """Give the lease's capacity back to the ledger and drop its events."""
    gen = _bump(session)
    res_ids = sa.select(models.Reservation.id).where(
        models.Reservation.lease_id == lease_id).scalar_subquery()
    session.execute(sa.update(models.Allocation).where(
        models.Allocation.reservation_id.in_(res_ids)).values(
        deleted=True, generation=gen))
    session.execute(sa.update(models.Reservation).where(
        models.Reservation.lease_id == lease_id).values(
        deleted=True, status='deleted', generation=gen))
    session.execute(sa.delete(models.Event).where(
        models.Event.lease_id == lease_id))


def bind_slot(reservation_id: str, instance_uuid: str,
              node: Optional[str], host: Optional[str]
              ) -> Optional[models.Allocation]:
    """Tie a server to the slot of its reservation on the node it runs on.

    A server already holds a slot from the boot (see `bind_servers`); when
    Nova put it on another node of the reservation (multi-create), it swaps
    slots with the sibling that holds the slot there.  Returns the server's
    slot, or None if it has none.
    """
    with _writer() as session:
        rows = session.execute(sa.select(models.Allocation).where(
            models.Allocation.reservation_id == reservation_id,
            models.Allocation.deleted == sa.false()).order_by(
            models.Allocation.id)).scalars().all()
        mine = next((a for a in rows if a.instance_uuid == instance_uuid),
                    None)
        there = next((a for a in rows if a.node == node and a is not mine
                      and a.instance_uuid is None), None) or next(
            (a for a in rows if a.node == node and a is not mine), None)
        if mine is None:
            mine, there = there, None
            if mine is None or mine.instance_uuid is not None:
                return None
        if mine.node != node and there is not None:
            there.instance_uuid, mine.instance_uuid = (
                mine.instance_uuid, there.instance_uuid)
            mine = there
        gen = _bump(session)
        mine.instance_uuid = instance_uuid
        if host and mine.node == node:
            mine.host = host
        for a in rows:
            if a in session.dirty:
                a.generation = gen
        session.flush()
        session.expunge_all()
        return mine


def _unbind_slots(session, lease_ids: list) -> None:
    """The leases are over: servers they leave running are ordinary
    ones.
    """
    res_ids = sa.select(models.Reservation.id).where(
        models.Reservation.lease_id.in_(lease_ids)).scalar_subquery()
    bound = [models.Allocation.reservation_id.in_(res_ids),
             models.Allocation.instance_uuid.isnot(None)]
    if session.execute(sa.select(models.Allocation.id).where(
            *bound).limit(1)).first() is None:
        return   # Nothing to change: no ledger write (it serialises).
    gen = _bump(session)
    session.execute(sa.update(models.Allocation).where(*bound).values(
        instance_uuid=None, generation=gen))


# ----------------------------------------------------------------- leases

def get_lease(lease_id: str) -> Optional[models.Lease]:
    return _get(models.Lease, lease_id)


def get_reservation(reservation_id: str) -> Optional[models.Reservation]:
    return _get(models.Reservation, reservation_id)


def reservations_of(lease_id: str) -> list:
    return _select(sa.select(models.Reservation).where(
        models.Reservation.lease_id == lease_id))


def allocations_of(reservation_id: str, deleted: bool = False) -> list:
    """The reservation's slots (with `deleted`, the released ones too)."""
    query = sa.select(models.Allocation).where(
        models.Allocation.reservation_id == reservation_id)
    if not deleted:
        query = query.where(models.Allocation.deleted == sa.false())
    return _select(query)


def bind_servers(lease_id: str, reservation_id: str,
                 instance_uuids: Iterable[str],
                 lease_status: Optional[str] = None,
                 token: Optional[str] = None,
                 bind_event: bool = False, take_slots: bool = True) -> bool:
    """Record the servers of a lease, each holding one of its free slots
    (with `take_slots`; not for whole hosts) until the engine ties it to
    the one on its node (a `bind_event` due now has it do that).

    With `lease_status`, the lease moves there from CREATING; if it is not
    CREATING any more (deleted meanwhile), nothing is written and the
    answer is False.
    """
    instance_uuids = list(instance_uuids)
    with _writer() as session:
        if lease_status and not _set_lease_status(
                session, [lease_id], lease_status,
                only_from=(status.CREATING,)):
            return False
        gen = _bump(session)
        # The slots the boot holds (`token`), or else free ones.
        slots = session.execute(sa.select(models.Allocation).where(
            models.Allocation.reservation_id == reservation_id,
            models.Allocation.instance_uuid == token if token else
            models.Allocation.instance_uuid.is_(None),
            models.Allocation.deleted == sa.false()).order_by(
            models.Allocation.id)).scalars().all() if take_slots else []
        for uuid, slot in zip(instance_uuids, slots):
            slot.instance_uuid = uuid
            slot.generation = gen
        for slot in slots[len(instance_uuids):]:
            slot.instance_uuid = None   # fewer servers than held
            slot.generation = gen
        for uuid in instance_uuids:
            session.merge(models.ServerBinding(
                instance_uuid=uuid, lease_id=lease_id,
                reservation_id=reservation_id, state='BOOTING'))
        if bind_event:
            now = utcnow()
            session.add(models.Event(lease_id=lease_id, event_type='bind',
                                     due_at=now, scheduled_at=now, runs=0,
                                     status=UNDONE, attempts=0))
        return True


class LeaseDetails(NamedTuple):
    lease: Optional[models.Lease]
    reservations: list
    bindings: list
    events: list


def leases_details(lease_ids: Iterable[str]) -> dict:
    """{lease id: LeaseDetails} of the leases that exist, read in one
    snapshot with one query per table whatever their number.
    """
    lease_ids = sorted(set(lease_ids))
    if not lease_ids:
        return {}
    with _reader() as session:
        found = {lease.id: LeaseDetails(lease, [], [], [])
                 for lease in session.execute(sa.select(models.Lease).where(
                     models.Lease.id.in_(lease_ids))).scalars()}
        for field, model, order in (
                ('reservations', models.Reservation,
                 (models.Reservation.id,)),
                ('bindings', models.ServerBinding,
                 (models.ServerBinding.instance_uuid,)),
                ('events', models.Event,
                 (models.Event.due_at, models.Event.id))):
            for row in session.execute(sa.select(model).where(
                    model.lease_id.in_(list(found))).order_by(
                    *order)).scalars():
                getattr(found[row.lease_id], field).append(row)
        session.expunge_all()
        return found


def lease_details(lease_id: str) -> LeaseDetails:
    """The lease with its reservations, bindings and events (lease None
    if there is no such lease).
    """
    return leases_details([lease_id]).get(
        lease_id, LeaseDetails(None, [], [], []))


def bindings_of(lease_id: str) -> list:
    return _select(sa.select(models.ServerBinding).where(
        models.ServerBinding.lease_id == lease_id).order_by(
        models.ServerBinding.instance_uuid))


def bindings_for(instance_uuids: Iterable[str]) -> dict:
    """{instance_uuid: (binding, lease)} for the servers that have one."""
    uuids = list(instance_uuids)
    if not uuids:
        return {}
    with _reader() as session:
        rows = session.execute(
            sa.select(models.ServerBinding, models.Lease).join(
                models.Lease,
                models.Lease.id == models.ServerBinding.lease_id).where(
                models.ServerBinding.instance_uuid.in_(uuids))).all()
        session.expunge_all()
        return {b.instance_uuid: (b, lease) for b, lease in rows}


def servers_gone(instance_uuids: Iterable[str]) -> list:
    """The servers no longer exist: their bindings end, and the slots they
    held are free for another boot (a server lease's slot, which no other
    server may take, goes).  Returns the server leases left with none of
    their servers, which the caller takes down.
    """
    uuids = list(instance_uuids)
    if not uuids:
        return []
    b, a, r = models.ServerBinding, models.Allocation, models.Reservation
    with _writer() as session:
        bindings = session.execute(sa.select(b).where(
            b.instance_uuid.in_(uuids), b.state != status.ENDED)
        ).scalars().all()
        slots = session.execute(sa.select(a, r.resource_type).join(
            r, r.id == a.reservation_id).where(
            a.instance_uuid.in_(uuids), a.deleted == sa.false())).all()
        if not bindings and not slots:
            return []
        gen = _bump(session)
        for slot, kind in slots:
            slot.generation = gen
            if kind == 'server':
                slot.deleted = True
            else:
                slot.instance_uuid = None
        for binding in bindings:
            binding.state = status.ENDED
        session.flush()
        leases = {x.lease_id for x in bindings}
        left = set(session.execute(sa.select(b.lease_id).where(
            b.lease_id.in_(leases), b.state != status.ENDED)).scalars())
        # Not those that are ending: their end event deletes the servers.
        t, e = models.Lease, models.Event
        ending = sa.select(e.lease_id).where(
            e.event_type == 'end', e.status == IN_PROGRESS)
        emptied = session.execute(sa.select(t.id).join(
            r, r.lease_id == t.id).where(
            t.id.in_(leases - left), r.resource_type == 'server',
            t.status.in_((status.PENDING, status.ACTIVE)),
            t.id.notin_(ending))).scalars().all()
        return sorted(set(emptied))


def server_failed(instance_uuid: str, lease_id: str, reason: str) -> None:
    """A server of a lease failed (to boot): its binding fails, its slot is
    free for another boot, and the lease is degraded, with the reason.
    """
    a = models.Allocation
    with _writer() as session:
        session.execute(sa.update(models.ServerBinding).where(
            models.ServerBinding.instance_uuid == instance_uuid,
            models.ServerBinding.state.in_(
                status.BINDING.sources(status.FAILED))).values(
            state=status.FAILED))
        held = [a.instance_uuid == instance_uuid, a.deleted == sa.false()]
        if session.execute(sa.select(a.id).where(*held)).first():
            session.execute(sa.update(a).where(*held).values(
                instance_uuid=None, generation=_bump(session)))
        session.execute(sa.update(models.Lease).where(
            models.Lease.id == lease_id,
            models.Lease.status.in_(status.LIVE)).values(
            degraded=True, status_reason=reason[:1000],
            updated_at=utcnow()))


def set_binding(instance_uuid: str, **values) -> bool:
    """Change a server's binding; a new `state` only where the move is
    allowed.  Whether it changed.
    """
    t = models.ServerBinding
    where = [t.instance_uuid == instance_uuid]
    if 'state' in values:
        where.append(t.state.in_(status.BINDING.sources(values['state'])))
    with _writer() as session:
        return session.execute(sa.update(t).where(*where).values(
            **values)).rowcount == 1


# ----------------------------------------------------------------- events

def next_due() -> Optional[datetime.datetime]:
    """When the earliest event that is not finished falls due."""
    with _reader() as session:
        return session.execute(sa.select(sa.func.min(models.Event.due_at))
                               .where(models.Event.status.in_(
                                   (UNDONE, IN_PROGRESS)))).scalar()


def due_events(now: datetime.datetime, limit: int = 100) -> list:
    """Events that are due, and those whose claim has expired."""
    return _select(sa.select(models.Event).where(
        sa.or_(sa.and_(models.Event.status == UNDONE,
                       models.Event.due_at <= now),
               sa.and_(models.Event.status == IN_PROGRESS,
                       models.Event.claim_expires <= now))).order_by(
        models.Event.due_at, models.Event.id).limit(limit))


def _order(event) -> tuple:
    """A lease's events run in this order: when each was meant to run."""
    return (event.scheduled_at or event.due_at, event.id)


def waiting_events(events: Iterable[models.Event]) -> set:
    """The ids of those `events` that must wait: their lease has an earlier
    event that is not finished (a lease's events run one at a time, in
    order, whatever the number of engines).
    """
    events = list(events)
    if not events:
        return set()
    t = models.Event
    with _reader() as session:
        rows = session.execute(sa.select(
            t.id, t.lease_id, t.scheduled_at, t.due_at).where(
            t.lease_id.in_({e.lease_id for e in events}),
            t.status.in_(status.UNFINISHED))).all()
    first = {}
    for row in rows:
        if row.lease_id not in first or _order(row) < first[row.lease_id]:
            first[row.lease_id] = _order(row)
    return {e.id for e in events
            if e.lease_id in first and first[e.lease_id] < _order(e)}


# Engines that claim at the same moment may deadlock on the index: the
# loser tries again at once.
@oslo_db_api.wrap_db_retry(max_retries=5, retry_on_deadlock=True,
                           retry_interval=0.01, max_retry_interval=0.1)
def claim_due(worker: str, now: datetime.datetime, ttl: float,
              limit: int) -> Optional[list]:
    """Take up to `limit` due events in one atomic UPDATE, so that engines
    that wake together do not race for the same rows; None where the
    database can not (SQLite): claim them one by one then.
    """
    engine = get_engine()
    if engine.dialect.name != 'mysql':
        return None
    token = '%s/%s' % (worker, uuidutils.generate_uuid()[:8])
    with _writer() as session:
        session.execute(sa.text(
            'UPDATE rsv_events SET status = :busy, claimed_by = :token, '
            'claim_expires = :expires, updated_at = :now, '
            'started_at = COALESCE(started_at, :now) '
            'WHERE status = :undone AND due_at <= :now '
            'ORDER BY due_at, id LIMIT :limit'), dict(
            busy=IN_PROGRESS, token=token, undone=UNDONE, now=now,
            expires=now + datetime.timedelta(seconds=ttl), limit=limit))
    return _select(sa.select(models.Event).where(
        models.Event.claimed_by == token,
        models.Event.status == IN_PROGRESS))


def claim_event(event: models.Event, worker: str, now: datetime.datetime,
                ttl: float) -> bool:
    """Take an event atomically: of several engines, exactly one wins."""
    with _writer() as session:
        t = models.Event
        return session.execute(sa.update(t).where(
            t.id == event.id,
            sa.or_(sa.and_(t.status == UNDONE, t.due_at <= now),
                   sa.and_(t.status == IN_PROGRESS,
                           t.claim_expires <= now))).values(
            status=IN_PROGRESS, claimed_by=worker, updated_at=now,
            started_at=sa.func.coalesce(t.started_at, now),
            claim_expires=now + datetime.timedelta(seconds=ttl))
        ).rowcount == 1


class Outcome(NamedTuple):
    """What running an event came to, as `record_events` writes it.

    `status`: DONE or ERROR (the event is over), or UNDONE: run it again
    at `due_at` (a retry after a failure when `failed`).  `lease_status`:
    the lease's new status, if any (TERMINATED and DELETED also unbind its
    slots).  `notice`: models.Notice's columns but created_at.
    """
    event_id: int
    holder: str
    status: str
    lease_id: Optional[str] = None
    lease_status: Optional[str] = None
    error: Optional[str] = None
    due_at: Optional[datetime.datetime] = None
    failed: bool = False
    notice: Optional[dict] = None
    # Handed back unrun (an earlier event of its lease is not finished):
    # it has not started.
    waited: bool = False


def _grouped(outcomes, key) -> dict:
    groups: dict = {}
    for o in outcomes:
        groups.setdefault(key(o), []).append(o)
    return groups


@oslo_db_api.wrap_db_retry(max_retries=5, retry_on_deadlock=True,
                           retry_interval=0.01, max_retry_interval=0.1)
def record_events(outcomes: list) -> set:
    """Write the outcomes of events with their leases' statuses and
    notices, all in one transaction; return the ids of the events written.
    An event its holder lost (another engine took it over) is left alone.

    Outcomes alike are written by one statement, so that a pass of many
    events costs a few statements and one commit.
    """
    if not outcomes:
        return set()
    t = models.Event.__table__
    now = utcnow()
    with _writer() as session:
        holders = dict(session.execute(
            sa.select(t.c.id, t.c.claimed_by).where(
                t.c.id.in_([o.event_id for o in outcomes]),
                t.c.status == IN_PROGRESS).with_for_update()).all())
        mine = [o for o in outcomes if holders.get(o.event_id) == o.holder]
        for (new, error), group in _grouped(
                [o for o in mine if o.status != UNDONE],
                lambda o: (o.status, o.error)).items():
            session.execute(t.update().where(
                t.c.id.in_([o.event_id for o in group])).values(
                status=new, last_error=error, updated_at=now,
                finished_at=now, runs=t.c.runs + int(new == DONE)))
        for (due_at, failed, error, waited), group in _grouped(
                [o for o in mine if o.status == UNDONE],
                lambda o: (o.due_at, o.failed, o.error, o.waited)).items():
            values = dict(status=UNDONE, claimed_by=None,
                          claim_expires=None, due_at=due_at, updated_at=now)
            if failed:
                values.update(attempts=t.c.attempts + 1, last_error=error)
            if waited:
                values.update(started_at=sa.case(
                    (t.c.runs + t.c.attempts == 0, None),
                    else_=t.c.started_at))
            session.execute(t.update().where(
                t.c.id.in_([o.event_id for o in group])).values(**values))
        for (new, error), group in _grouped(
                [o for o in mine if o.lease_status],
                lambda o: (o.lease_status, o.error)).items():
            _set_lease_status(session, [o.lease_id for o in group], new,
                              error)
        over = [o.lease_id for o in mine
                if o.lease_status in (status.TERMINATED, status.DELETED)]
        if over:
            _unbind_slots(session, over)
        notices = [dict(o.notice, created_at=now) for o in mine if o.notice]
        if notices:
            session.execute(models.Notice.__table__.insert(), notices)
        return {o.event_id for o in mine}


def claim_unsent(worker: str, now: datetime.datetime, ttl: float,
                 limit: int = 50) -> list:
    """Take notices whose sender's claim expired (it died or lost the
    store before it could send them), oldest first, as dicts of
    id, lease_id, event_type and payload.
    """
    t = models.Notice
    stale = _select(sa.select(t).where(t.claim_expires <= now).order_by(
        t.created_at, t.id).limit(limit))
    taken = []
    with _writer() as session:
        for notice in stale:
            if session.execute(sa.update(t).where(
                    t.id == notice.id,
                    t.claim_expires == notice.claim_expires).values(
                    claimed_by=worker, claim_expires=now +
                    datetime.timedelta(seconds=ttl))).rowcount == 1:
                taken.append(dict(
                    id=notice.id, lease_id=notice.lease_id,
                    event_type=notice.event_type, payload=notice.payload))
    return taken


def forget_notices(notice_ids: Iterable[str]) -> None:
    """Notices sent: drop them."""
    with _writer() as session:
        session.execute(sa.delete(models.Notice).where(
            models.Notice.id.in_(list(notice_ids))))


def unsent_notices() -> list:
    return _select(sa.select(models.Notice).order_by(
        models.Notice.created_at))


def retry_event(lease_id: str, event_id: int) -> bool:
    """An admin's retry of an event in ERROR: due again now, and a lease in
    ERROR back to where it was: ACTIVE once it has started, else PENDING.
    """
    with _writer() as session:
        t = models.Event
        now = utcnow()
        if session.execute(sa.update(t).where(
                t.id == event_id, t.lease_id == lease_id,
                t.status == ERROR).values(
                status=UNDONE, attempts=0, claimed_by=None,
                claim_expires=None, due_at=now,
                updated_at=now)).rowcount != 1:
            return False
        started = session.execute(sa.select(t.id).where(
            t.lease_id == lease_id, t.event_type == 'start',
            t.status == DONE).limit(1)).first() is not None
        session.execute(sa.update(models.Lease).where(
            models.Lease.id == lease_id,
            models.Lease.status == status.ERROR).values(
            status=status.ACTIVE if started else status.PENDING,
            status_reason=None, updated_at=now))
        return True


def events_of(lease_id: str) -> list:
    return _select(sa.select(models.Event).where(
        models.Event.lease_id == lease_id).order_by(
        models.Event.due_at, models.Event.id))


def slot_of(reservation_id: str,
            instance_uuid: str) -> Optional[models.Allocation]:
    return _select(sa.select(models.Allocation).where(
        models.Allocation.reservation_id == reservation_id,
        models.Allocation.instance_uuid == instance_uuid,
        models.Allocation.deleted == sa.false()), first=True)


def set_slot_host(slot_id: int, host: str) -> None:
    with _writer() as session:
        session.execute(sa.update(models.Allocation).where(
            models.Allocation.id == slot_id).values(host=host))


def leases_in(state: str, before: datetime.datetime) -> list:
    """Leases in `state` since before `before` (created or last changed).
    """
    t = models.Lease
    return _select(sa.select(t).where(
        t.status == state,
        sa.func.coalesce(t.updated_at, t.created_at) < before).order_by(
        t.created_at))


def bound_servers() -> dict:
    """{server uuid: lease id} of every server the store ties to a lease
    that is not over: by its binding, or by the slot it holds.
    """
    b, a, r = models.ServerBinding, models.Allocation, models.Reservation
    with _reader() as session:
        found = dict(session.execute(sa.select(
            b.instance_uuid, b.lease_id).where(
            b.state.notin_((status.ENDED, status.FAILED)))).all())
        found.update(session.execute(sa.select(
            a.instance_uuid, r.lease_id).join(
            r, r.id == a.reservation_id).where(
            a.instance_uuid.isnot(None), a.deleted == sa.false(),
            a.instance_uuid.notlike(CLAIM_PREFIX + '%'))).all())
        return found


def claims() -> set:
    """The tokens of the boots that hold slots now (`claim_slots`)."""
    a = models.Allocation
    with _reader() as session:
        return set(session.execute(sa.select(a.instance_uuid).where(
            a.instance_uuid.like(CLAIM_PREFIX + '%'),
            a.deleted == sa.false()).distinct()).scalars())


def failed_deletions() -> list:
    """(lease id, event id) of the deletions whose end event failed."""
    e, t = models.Event, models.Lease
    with _reader() as session:
        return session.execute(sa.select(t.id, e.id).join(
            e, e.lease_id == t.id).where(
            t.status == status.DELETING, e.event_type == 'end',
            e.status == ERROR)).all()


def list_leases(project_id: Optional[str] = None) -> list:
    """Leases that are not deleted, of one project or of all."""
    query = sa.select(models.Lease).where(models.Lease.status != 'DELETED')
    if project_id is not None:
        query = query.where(models.Lease.project_id == project_id)
    return _select(query.order_by(models.Lease.created_at))


@oslo_db_api.wrap_db_retry(max_retries=5, retry_on_deadlock=True,
                           retry_interval=0.01, max_retry_interval=0.1)
def claim_slots(reservation_id: str, count: int, token: str) -> list:
    """Hold `count` free slots of a reservation for a boot, atomically;
    their ids, or [] (nothing held) if there are not that many.
    """
    t = models.Allocation
    try:
        with _writer() as session:
            # The ledger row first: boots into one reservation take turns,
            # and each reads the slots as the one before left them.
            gen = _bump(session)
            free = session.execute(sa.select(t.id).where(
                t.reservation_id == reservation_id,
                t.instance_uuid.is_(None), t.deleted == sa.false()).order_by(
                t.id).limit(count).with_for_update()).scalars().all()
            if len(free) < count:
                raise _TooFew()   # rolls the bump back
            session.execute(sa.update(t).where(t.id.in_(free)).values(
                instance_uuid=token, generation=gen))
            return free
    except _TooFew:
        return []


class _TooFew(Exception):
    pass


def release_claim(token: str) -> None:
    with _writer() as session:
        gen = _bump(session)
        session.execute(sa.update(models.Allocation).where(
            models.Allocation.instance_uuid == token).values(
            instance_uuid=None, generation=gen))


def reservation_of_flavor(flavor_id: str) -> Optional[models.Reservation]:
    """The virtual:instance reservation whose private flavor this is."""
    return _select(sa.select(models.Reservation).where(
        models.Reservation.flavor_id == flavor_id,
        models.Reservation.resource_type == 'virtual:instance',
        models.Reservation.deleted == sa.false()), first=True)


def set_reservation(reservation_id: str, **values) -> None:
    with _writer() as session:
        session.execute(sa.update(models.Reservation).where(
            models.Reservation.id == reservation_id).values(**values))


def move_slots(expected_generation: int, moves: dict,
               degraded: Iterable[str]) -> None:
    """Put slots on other nodes ({slot id: (node, resources)}) and mark
    leases degraded, if the ledger is still at `expected_generation`.
    """
    with _writer() as session:
        gen = _bump(session, expected_generation,
                    (node for node, _ in moves.values()))
        for slot_id, (node, res) in moves.items():
            session.execute(sa.update(models.Allocation).where(
                models.Allocation.id == slot_id).values(
                node=node, host=None, vcpus=res.vcpus,
                memory_mb=res.memory_mb, disk_gb=res.disk_gb,
                generation=gen))
        degraded = list(degraded)
        if degraded:
            session.execute(sa.update(models.Lease).where(
                models.Lease.id.in_(degraded)).values(
                degraded=True, updated_at=utcnow(),
                version=models.Lease.version + 1))


def lease_servers(instance_uuids: Iterable[str]) -> set:
    """Those of the servers that belong to a lease that is not over."""
    uuids = list(instance_uuids)
    if not uuids:
        return set()
    with _reader() as session:
        return set(session.execute(
            sa.select(models.ServerBinding.instance_uuid).where(
                models.ServerBinding.instance_uuid.in_(uuids),
                models.ServerBinding.state != 'ENDED')).scalars())


# ------------------------------------------------------------------ hosts

def list_hosts() -> list:
    return _select(sa.select(models.Host).order_by(models.Host.id))


def get_host(host_id: int) -> Optional[models.Host]:
    return _get(models.Host, host_id)


def create_host(**values) -> models.Host:
    with _writer() as session:
        host = models.Host(created_at=utcnow(), reservable=True, **values)
        session.add(host)
        session.flush()
        session.expunge_all()
        return host


def update_host(host_id: int, **values) -> None:
    with _writer() as session:
        session.execute(sa.update(models.Host).where(
            models.Host.id == host_id).values(updated_at=utcnow(),
                                              **values))


def delete_host(host_id: int) -> None:
    with _writer() as session:
        session.execute(sa.delete(models.Host).where(
            models.Host.id == host_id))


def reservations_on_node(node: str) -> list:
    """The reservations with a slot on `node`.

    ``[{reservation_id, lease_id, start_at, end_at}]``
    """
    with _reader() as session:
        rows = session.execute(
            sa.select(models.Allocation.reservation_id,
                      models.Reservation.lease_id,
                      sa.func.min(models.Allocation.start_at),
                      sa.func.max(models.Allocation.end_at)).join(
                models.Reservation,
                models.Reservation.id == models.Allocation.reservation_id
            ).where(models.Allocation.node == node,
                    models.Allocation.deleted == sa.false()).group_by(
                models.Allocation.reservation_id,
                models.Reservation.lease_id)).all()
        return [dict(reservation_id=r[0], lease_id=r[1], start_at=r[2],
                     end_at=r[3]) for r in rows]
