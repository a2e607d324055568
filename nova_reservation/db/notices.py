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

"""The notice outbox: notifications stored with the outcome they tell,
sent after the commit, and dropped once sent.

A notice is claimed by the engine that stored it; when that engine dies
before sending, the claim expires and another engine sends it.
"""

import datetime
from typing import Iterable, Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models


@api.writer
def add(ctx, notices: Iterable[dict], now: datetime.datetime) -> None:
    """Store notices (`notices`: models.Notice's columns but created_at)."""
    notices = [dict(n, created_at=now) for n in notices]
    if notices:
        ctx.session.execute(models.Notice.__table__.insert(), notices)


@api.reader
def next_unsent(ctx) -> Optional[datetime.datetime]:
    """When the earliest claim on a notice expires (any engine may send it
    then).
    """
    return ctx.session.execute(sa.select(sa.func.min(
        models.Notice.claim_expires))).scalar()


@api.writer
def claim_unsent(ctx, engine_id: str, now: datetime.datetime, ttl: float,
                 limit: int = 50) -> list:
    """Take notices whose sender's claim expired (it died or lost the
    store before it could send them), oldest first.
    """
    t = models.Notice
    taken = []
    for notice in api.rows(ctx, sa.select(t).where(
            t.claim_expires <= now).order_by(t.created_at, t.id).limit(
            limit)):
        if ctx.session.execute(sa.update(t).where(
                t.id == notice.id,
                t.claim_expires == notice.claim_expires).values(
                claimed_by=engine_id, claim_expires=now +
                datetime.timedelta(seconds=ttl))).rowcount == 1:
            taken.append(notice)
    return taken


@api.writer
def forget(ctx, notice_ids: Iterable[str]) -> None:
    """Notices sent: drop them."""
    ctx.session.execute(sa.delete(models.Notice).where(
        models.Notice.id.in_(list(notice_ids))))


@api.reader
def unsent(ctx) -> list:
    return api.rows(ctx, sa.select(models.Notice).order_by(
        models.Notice.created_at))
