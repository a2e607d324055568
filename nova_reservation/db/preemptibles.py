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

"""Preemptible servers: written by the boot hook, then the engine's.

An engine acts on a server only under a claim (one conditional UPDATE), so
that several engines never move or shelve one server twice; a claim whose
engine died expires, and another engine looks again where it is.
"""

import datetime
from typing import Iterable, Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models
from nova_reservation.db import notices as db_notices
from nova_reservation import status

P = models.Preemptible


@api.writer
def add(ctx, instance_uuids: Iterable[str], project_id: str,
        on_preempt: str) -> None:
    now = api.utcnow()
    rows = [dict(instance_uuid=u, project_id=project_id,
                 on_preempt=on_preempt, state=status.RUNNING,
                 created_at=now) for u in instance_uuids]
    if rows:
        ctx.session.execute(P.__table__.insert(), rows)


@api.reader
def get_all(ctx) -> list:
    """Every preemptible server, oldest first (which yields last)."""
    return api.rows(ctx, sa.select(P).order_by(P.created_at,
                                               P.instance_uuid))


@api.reader
def uuids(ctx, among: Iterable[str]) -> set:
    """Those of the servers that are preemptible.  (All of them are read:
    a few beside every server of a cloud, which `among` may be.)
    """
    among = set(among)
    if not among:
        return set()
    return among.intersection(ctx.session.execute(
        sa.select(P.instance_uuid)).scalars())


@api.writer
def forget(ctx, instance_uuids: Iterable[str]) -> None:
    """The servers are gone."""
    ctx.session.execute(sa.delete(P).where(
        P.instance_uuid.in_(list(instance_uuids))))


@api.writer
def claim(ctx, row, new_state: str, engine_id: str,
          now: datetime.datetime, ttl: float) -> bool:
    """Take the server to act on it, moving it to `new_state`, unless
    another engine holds it (or it moved since `row` was read).
    """
    return ctx.session.execute(sa.update(P).where(
        P.instance_uuid == row.instance_uuid,
        P.state == row.state,
        P.state.in_(status.PREEMPTIBLE.sources(new_state)),
        sa.or_(P.claim_expires.is_(None), P.claim_expires <= now,
               P.claimed_by == engine_id)).values(
        state=new_state, claimed_by=engine_id,
        claim_expires=now + datetime.timedelta(seconds=ttl),
        updated_at=now)).rowcount == 1


@api.writer
def release(ctx, instance_uuid: str, engine_id: str, new_state: str,
            **values) -> bool:
    """The engine is done with the server, which is now in `new_state`."""
    return ctx.session.execute(sa.update(P).where(
        P.instance_uuid == instance_uuid, P.claimed_by == engine_id,
        P.state.in_(status.PREEMPTIBLE.sources(new_state))).values(
        state=new_state, claimed_by=None, claim_expires=None,
        updated_at=api.utcnow(), **values)).rowcount == 1


@api.writer
def asked(ctx, instance_uuid: str, engine_id: str, action: str) -> None:
    """The step of its eviction that the engine asked Nova for."""
    ctx.session.execute(sa.update(P).where(
        P.instance_uuid == instance_uuid,
        P.claimed_by == engine_id).values(action=action,
                                          updated_at=api.utcnow()))


@api.writer
def seen(ctx, instance_uuid: str, node: Optional[str],
         deadline: Optional[datetime.datetime]) -> None:
    """Where the engine saw a running server, and until when it stays."""
    ctx.session.execute(sa.update(P).where(
        P.instance_uuid == instance_uuid,
        P.state == status.RUNNING).values(node=node, deadline=deadline,
                                          updated_at=api.utcnow()))


@api.writer
def warn(ctx, instance_uuid: str, deadline: datetime.datetime,
         notice: dict, now: datetime.datetime) -> bool:
    """Record that the owner is told of `deadline`, with the notice that
    tells it (sent after the commit), whichever engine gets there first:
    once, and again only for a sooner deadline or once the one told has
    passed (a later one is no news: the metadata keeps it).
    """
    told = ctx.session.execute(sa.update(P).where(
        P.instance_uuid == instance_uuid,
        sa.or_(P.warned_for.is_(None), P.warned_for > deadline,
               P.warned_for <= now)).values(
        warned_for=deadline)).rowcount == 1
    if told:
        db_notices.add(ctx, [notice], now)
    return told
