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

"""The event queue: each lease's events, claimed by one engine at a time.

An event is UNDONE until an engine claims it (IN_PROGRESS, with a claim
that expires), then DONE or ERROR.  A lease's events run in the order in
which they were meant to run (`scheduled_at`), one at a time.
"""

import datetime
from typing import Iterable, Optional

from oslo_db import api as oslo_db_api
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models
from nova_reservation import status

UNDONE, IN_PROGRESS, DONE, ERROR = (status.UNDONE, status.IN_PROGRESS,
                                    status.DONE, status.ERROR)


@api.writer
def add(ctx, lease_id: str, events: Iterable[dict]) -> None:
    """New events of a lease (`events`: event_type and due_at of each)."""
    for e in events:
        ctx.session.add(models.Event(
            uuid=uuidutils.generate_uuid(), lease_id=lease_id, status=UNDONE,
            attempts=0, runs=0, scheduled_at=e['due_at'],
            created_at=api.utcnow(), **e))


@api.writer
def drop(ctx, lease_id: str) -> None:
    """The lease's events go (it is gone, or starts again with new ones)."""
    ctx.session.execute(sa.delete(models.Event).where(
        models.Event.lease_id == lease_id))


@api.writer
def move(ctx, lease_id: str, due: dict) -> None:
    """The lease's events that have not run fall due anew ({event type:
    when}; a type not in `due` stays as it is).
    """
    for e in api.rows(ctx, sa.select(models.Event).where(
            models.Event.lease_id == lease_id,
            models.Event.status == UNDONE)):
        if due.get(e.event_type) is not None:
            e.due_at = e.scheduled_at = due[e.event_type]


@api.reader
def of_lease(ctx, lease_id: str) -> list:
    return api.rows(ctx, sa.select(models.Event).where(
        models.Event.lease_id == lease_id).order_by(
        models.Event.due_at, models.Event.id))


@api.reader
def next_due(ctx) -> Optional[datetime.datetime]:
    """When an engine next has an event to take: the earliest due of those
    not taken, or the earliest expiry of a claim (its engine may have
    died).  An event another engine is running is not due till then.
    """
    t = models.Event
    times = ctx.session.execute(sa.select(
        sa.select(sa.func.min(t.due_at)).where(
            t.status == UNDONE).scalar_subquery(),
        sa.select(sa.func.min(t.claim_expires)).where(
            t.status == IN_PROGRESS).scalar_subquery())).one()
    return min((when for when in times if when is not None), default=None)


@api.reader
def due(ctx, now: datetime.datetime, limit: int = 100) -> list:
    """Events that are due, and those whose claim has expired."""
    t = models.Event
    return api.rows(ctx, sa.select(t).where(
        sa.or_(sa.and_(t.status == UNDONE, t.due_at <= now),
               sa.and_(t.status == IN_PROGRESS,
                       t.claim_expires <= now))).order_by(
        t.due_at, t.id).limit(limit))


def _order(event) -> tuple:
    """A lease's events run in this order: when each was meant to run."""
    return (event.scheduled_at or event.due_at, event.id)


@api.reader
def waiting(ctx, events: Iterable[models.Event]) -> set:
    """The ids of those `events` that must wait: their lease has an earlier
    event that is not finished (a lease's events run one at a time, in
    order, whatever the number of engines).
    """
    events = list(events)
    if not events:
        return set()
    t = models.Event
    found = ctx.session.execute(sa.select(
        t.id, t.lease_id, t.scheduled_at, t.due_at).where(
        t.lease_id.in_({e.lease_id for e in events}),
        t.status.in_(status.UNFINISHED))).all()
    first: dict = {}
    for e in found:
        if e.lease_id not in first or _order(e) < first[e.lease_id]:
            first[e.lease_id] = _order(e)
    return {e.id for e in events
            if e.lease_id in first and first[e.lease_id] < _order(e)}


@api.writer
def start_after_earlier(ctx, events: Iterable[models.Event]) -> None:
    """An event claimed at a time before its lease's previous event
    finished (its engine's pass began before another engine finished that
    one) is recorded as started when that one finished.
    """
    events = [e for e in events if e.started_at is not None]
    if not events:
        return
    t = models.Event
    found = ctx.session.execute(sa.select(
        t.lease_id, t.id, t.scheduled_at, t.due_at, t.finished_at).where(
        t.lease_id.in_({e.lease_id for e in events}), t.status == DONE,
        t.finished_at > min(e.started_at for e in events))).all()
    for e in events:
        latest = max((f.finished_at for f in found
                      if f.lease_id == e.lease_id and _order(f) < _order(e)),
                     default=None)
        if latest is not None and latest > e.started_at:
            ctx.session.execute(sa.update(t).where(t.id == e.id).values(
                started_at=latest))


# Engines that claim at the same moment may deadlock on the index: the
# loser tries again at once.  Outermost only.
@oslo_db_api.wrap_db_retry(max_retries=5, retry_on_deadlock=True,
                           retry_interval=0.01, max_retry_interval=0.1)
def claim_due(ctx, engine_id: str, now: datetime.datetime, ttl: float,
              limit: int) -> Optional[list]:
    """Take up to `limit` due events in one atomic UPDATE, so that engines
    that wake together do not race for the same rows; None where the
    database can not (SQLite): claim them one by one then.
    """
    if api.get_engine().dialect.name != 'mysql':
        return None
    claim = '%s/%s' % (engine_id, uuidutils.generate_uuid()[:8])
    _claim_due(ctx, claim, now, ttl, limit)
    return _claimed(ctx, claim)


@api.writer
def _claim_due(ctx, claim, now, ttl, limit) -> None:
    ctx.session.execute(sa.text(
        'UPDATE rsv_events SET status = :busy, claimed_by = :claim, '
        'claim_expires = :expires, updated_at = :now, '
        'started_at = COALESCE(started_at, :now) '
        'WHERE status = :undone AND due_at <= :now '
        'ORDER BY due_at, id LIMIT :limit'), dict(
        busy=IN_PROGRESS, claim=claim, undone=UNDONE, now=now,
        expires=now + datetime.timedelta(seconds=ttl), limit=limit))


@api.reader
def _claimed(ctx, claim: str) -> list:
    t = models.Event
    return api.rows(ctx, sa.select(t).where(
        t.claimed_by == claim, t.status == IN_PROGRESS))


@api.writer
def claim(ctx, event: models.Event, engine_id: str,
          now: datetime.datetime, ttl: float) -> bool:
    """Take an event atomically: of several engines, exactly one wins."""
    t = models.Event
    return ctx.session.execute(sa.update(t).where(
        t.id == event.id,
        sa.or_(sa.and_(t.status == UNDONE, t.due_at <= now),
               sa.and_(t.status == IN_PROGRESS,
                       t.claim_expires <= now))).values(
        status=IN_PROGRESS, claimed_by=engine_id, updated_at=now,
        started_at=sa.func.coalesce(t.started_at, now),
        claim_expires=now + datetime.timedelta(seconds=ttl))
    ).rowcount == 1


@api.writer
def claims_of(ctx, event_ids: Iterable[int]) -> dict:
    """{event id: its claim} of the events in progress, locked until the
    transaction ends (an outcome is written by its claim's holder only).
    """
    t = models.Event
    return dict(ctx.session.execute(sa.select(t.id, t.claimed_by).where(
        t.id.in_(list(event_ids)),
        t.status == IN_PROGRESS).with_for_update()).all())


@api.writer
def finish(ctx, event_ids: Iterable[int], new: str,
           error: Optional[str], now: datetime.datetime) -> None:
    """The events are over: DONE or ERROR."""
    t = models.Event
    ctx.session.execute(sa.update(t).where(
        t.id.in_(list(event_ids)),
        t.status.in_(status.EVENT.sources(new))).values(
        status=new, last_error=error, updated_at=now, finished_at=now,
        runs=t.runs + int(new == DONE)))


@api.writer
def put_back(ctx, event_ids: Iterable[int], due_at: datetime.datetime,
             now: datetime.datetime, error: Optional[str] = None,
             failed: bool = False, waited: bool = False) -> None:
    """The events run again at `due_at`: after a failure (`failed`, a
    retry), or unrun (`waited`: an earlier event of the lease was not
    finished, so they have not started).
    """
    t = models.Event
    values = dict(status=UNDONE, claimed_by=None, claim_expires=None,
                  due_at=due_at, updated_at=now)
    if failed:
        values.update(attempts=t.attempts + 1, last_error=error)
    if waited:
        values.update(started_at=sa.case(
            (t.runs + t.attempts == 0, None), else_=t.started_at))
    ctx.session.execute(sa.update(t).where(
        t.id.in_(list(event_ids)),
        t.status.in_(status.EVENT.sources(UNDONE))).values(**values))


@api.writer
def retry(ctx, lease_id: str, event_id: int) -> bool:
    """An event in ERROR is due again now; whether it was in ERROR."""
    t = models.Event
    now = api.utcnow()
    return ctx.session.execute(sa.update(t).where(
        t.id == event_id, t.lease_id == lease_id, t.status == ERROR).values(
        status=UNDONE, attempts=0, claimed_by=None, claim_expires=None,
        due_at=now, updated_at=now)).rowcount == 1


@api.reader
def started(ctx, lease_id: str) -> bool:
    """Whether the lease's start is done."""
    t = models.Event
    return ctx.session.execute(sa.select(t.id).where(
        t.lease_id == lease_id, t.event_type == 'start',
        t.status == DONE).limit(1)).first() is not None


@api.reader
def failed_deletions(ctx) -> list:
    """The end events in ERROR of leases being deleted."""
    e, t = models.Event, models.Lease
    return api.rows(ctx, sa.select(e).join(t, e.lease_id == t.id).where(
        t.status == status.DELETING, e.event_type == 'end',
        e.status == ERROR))
