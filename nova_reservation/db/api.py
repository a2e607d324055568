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

CONF = conf.CONF
# Pool settings of [api_database] that the store's own engine keeps.
STORE_DB_OPTIONS = ('max_pool_size', 'max_overflow', 'pool_timeout',
                    'connection_recycle_time', 'mysql_sql_mode',
                    'max_retries', 'retry_interval')

# Event and binding states.
UNDONE, IN_PROGRESS, DONE, ERROR = 'UNDONE', 'IN_PROGRESS', 'DONE', 'ERROR'


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


def _bump(session, expected: Optional[int] = None) -> int:
    """Advance the ledger generation; with `expected`, only from there."""
    table = models.LedgerState.__table__
    stmt = table.update().where(table.c.id == 1).values(
        generation=table.c.generation + 1)
    if expected is not None:
        stmt = stmt.where(table.c.generation == expected)
    if session.execute(stmt).rowcount != 1:
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

    All or nothing, and only if the ledger is still at
    `expected_generation`.  `reservations`: ``[(reservation, [slot, ...])]``.
    """
    with _writer() as session:
        gen = _bump(session, expected_generation)
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
    one lease can not lose each other.  `growth`: {reservation id: (new
    amount, [new slot, ...])}.
    """
    with _writer() as session:
        gen = _bump(session, expected_generation)
        t = models.Lease
        done = session.execute(sa.update(t).where(
            t.id == lease_id, t.version == version,
            t.status != 'DELETED').values(
            version=t.version + 1, updated_at=utcnow(),
            **values)).rowcount
        if done != 1:
            raise LeaseChanged()
        res_ids = sa.select(models.Reservation.id).where(
            models.Reservation.lease_id == lease_id).scalar_subquery()
        session.execute(sa.update(models.Allocation).where(
            models.Allocation.reservation_id.in_(res_ids),
            models.Allocation.deleted == sa.false()).values(
            start_at=start_at, end_at=end_at, generation=gen))
        for rid, (amount, slots) in growth.items():
            session.execute(sa.update(models.Reservation).where(
                models.Reservation.id == rid).values(
                amount=amount, generation=gen, updated_at=utcnow()))
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
        _release(session, lease_id)
        now = utcnow()
        session.add(models.Event(lease_id=lease_id, event_type='end',
                                 due_at=now, scheduled_at=now, runs=0,
                                 status=UNDONE, attempts=0))
        session.execute(sa.update(models.Lease).where(
            models.Lease.id == lease_id).values(
            status='DELETING', updated_at=utcnow(),
            version=models.Lease.version + 1))


def discard_lease(lease_id: str) -> None:
    """Remove a lease whose boot Nova refused: it made nothing, so it goes
    at once, with its capacity.
    """
    with _writer() as session:
        _release(session, lease_id)
        session.execute(sa.delete(models.ServerBinding).where(
            models.ServerBinding.lease_id == lease_id))
        session.execute(sa.update(models.Lease).where(
            models.Lease.id == lease_id).values(
            status='DELETED', updated_at=utcnow()))


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
                 bind_event: bool = False, take_slots: bool = True) -> None:
    """Record the servers of a lease, each holding one of its free slots
    (with `take_slots`; not for whole hosts) until the engine ties it to
    the one on its node (a `bind_event` due now has it do that).
    """
    instance_uuids = list(instance_uuids)
    with _writer() as session:
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
        if lease_status:
            # Only from CREATING: a lease deleted meanwhile stays deleted.
            session.execute(sa.update(models.Lease).where(
                models.Lease.id == lease_id,
                models.Lease.status == 'CREATING').values(
                status=lease_status, updated_at=utcnow()))


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


def set_binding(instance_uuid: str, **values) -> None:
    with _writer() as session:
        session.execute(sa.update(models.ServerBinding).where(
            models.ServerBinding.instance_uuid == instance_uuid).values(
            **values))


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
            started_at=sa.func.coalesce(t.started_at, utcnow()),
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
        for (status, error), group in _grouped(
                [o for o in mine if o.status != UNDONE],
                lambda o: (o.status, o.error)).items():
            session.execute(t.update().where(
                t.c.id.in_([o.event_id for o in group])).values(
                status=status, last_error=error, updated_at=now,
                finished_at=now, runs=t.c.runs + int(status == DONE)))
        for (due_at, failed, error), group in _grouped(
                [o for o in mine if o.status == UNDONE],
                lambda o: (o.due_at, o.failed, o.error)).items():
            values = dict(status=UNDONE, claimed_by=None,
                          claim_expires=None, due_at=due_at, updated_at=now)
            if failed:
                values.update(attempts=t.c.attempts + 1, last_error=error)
            session.execute(t.update().where(
                t.c.id.in_([o.event_id for o in group])).values(**values))
        leases = models.Lease.__table__
        for (status, error), group in _grouped(
                [o for o in mine if o.lease_status],
                lambda o: (o.lease_status, o.error)).items():
            session.execute(leases.update().where(
                leases.c.id.in_([o.lease_id for o in group]),
                leases.c.status != 'DELETED').values(
                status=status, status_reason=error, updated_at=now))
        over = [o.lease_id for o in mine
                if o.lease_status in ('TERMINATED', 'DELETED')]
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
    """An admin's retry of an event in ERROR: due again now, and the lease
    back to what it was waiting for.
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
        session.execute(sa.update(models.Lease).where(
            models.Lease.id == lease_id,
            models.Lease.status == 'ERROR').values(
            status='PENDING', status_reason=None, updated_at=now))
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


def list_leases(project_id: Optional[str] = None) -> list:
    """Leases that are not deleted, of one project or of all."""
    query = sa.select(models.Lease).where(models.Lease.status != 'DELETED')
    if project_id is not None:
        query = query.where(models.Lease.project_id == project_id)
    return _select(query.order_by(models.Lease.created_at))


def claim_slots(reservation_id: str, count: int, token: str) -> bool:
    """Hold `count` free slots of a reservation for a boot, atomically;
    False (nothing held) if there are not that many.
    """
    with _writer() as session:
        free = session.execute(sa.select(models.Allocation.id).where(
            models.Allocation.reservation_id == reservation_id,
            models.Allocation.instance_uuid.is_(None),
            models.Allocation.deleted == sa.false()).order_by(
            models.Allocation.id).limit(count)).scalars().all()
        if len(free) < count:
            return False
        gen = _bump(session)
        for slot_id in free:
            if not session.execute(sa.update(models.Allocation).where(
                    models.Allocation.id == slot_id,
                    models.Allocation.instance_uuid.is_(None)).values(
                    instance_uuid=token, generation=gen)).rowcount:
                raise LedgerConflict()   # rolls back the others
        return True


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
        gen = _bump(session, expected_generation)
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
