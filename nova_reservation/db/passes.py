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

"""Passes: the promised nodes that a scheduler let an ordinary boot onto
(`nova_reservation.filters.passes` says why and when they count).

A scheduler decides on the passes it read (and on what Placement says of
them, asked without any lock held), then records its own under a lock:
the write first updates the row `LOCK` of the locks table, which a second
writer on the same database waits for, and a writer on another Galera
node loses to at certification (then `api.writer` runs it again); it
writes only if the other passes are still those it decided on.
"""

import datetime
from typing import Iterable, Set

from oslo_db import exception as db_exception
import sqlalchemy as sa

from nova_reservation import capacity
from nova_reservation.db import api
from nova_reservation.db import ledger
from nova_reservation.db import models

LOCK = 'passes'
# Passes older than this are deleted by the next decision: a boot claims
# long before (`boot_settle_timeout`), and Placement's count has it.
KEPT = datetime.timedelta(minutes=10)

P = models.Pass


def take_lock(ctx, name: str) -> None:
    """Take the lock `name` for the rest of `ctx`'s transaction."""
    lock = models.Lock
    bump = sa.update(lock).where(lock.name == name).values(
        taken=lock.taken + 1)
    if ctx.session.execute(bump).rowcount:
        return
    try:
        with ctx.session.begin_nested():
            ctx.session.execute(sa.insert(lock).values(name=name, taken=1))
    except db_exception.DBDuplicateEntry:
        # Another writer made the row at once: wait for it as usual.
        ctx.session.execute(bump)


def need_of(row: models.Pass) -> capacity.Resources:
    return capacity.Resources(row.vcpus, row.memory_mb, row.disk_gb)


def extras_of(row: models.Pass) -> tuple:
    """What the pass's boot takes beyond `need_of` (`capacity.extras`)."""
    return ledger.extras_value(row.extras)


def _of_others(query, instance_uuid: str, nodes: Iterable[str],
               since: datetime.datetime):
    return query.where(P.node.in_(sorted(set(nodes))),
                       P.created_at >= since,
                       P.instance_uuid != instance_uuid)


def others(ctx, instance_uuid: str, nodes: Iterable[str],
           since: datetime.datetime) -> list:
    """The other boots' passes on `nodes` made since `since`."""
    return api.rows(ctx, _of_others(sa.select(P), instance_uuid, nodes,
                                    since))


@api.writer
def record(ctx, instance_uuid: str, nodes: Iterable[str],
           since: datetime.datetime, need: capacity.Resources,
           extras: tuple, seen: Set[int], admitted: Iterable[str]) -> bool:
    """Under the lock, the boot's passes on the `admitted` nodes (taking
    `need` and `extras` each) in place of any it had, if the other passes
    on `nodes` since `since` are still those `seen` (their ids) when the
    decision was made; whether they were (if not, nothing is written: decide
    again).
    """
    take_lock(ctx, LOCK)
    found = set(ctx.session.execute(_of_others(
        sa.select(P.id), instance_uuid, nodes, since)).scalars())
    if found != set(seen):
        return False
    now = api.utcnow()
    ctx.session.execute(sa.delete(P).where(sa.or_(
        P.created_at < now - KEPT, P.instance_uuid == instance_uuid)))
    rows = [dict(instance_uuid=instance_uuid, node=node, vcpus=need.vcpus,
                 memory_mb=need.memory_mb, disk_gb=need.disk_gb,
                 extras=ledger.extras_column(extras), created_at=now)
            for node in sorted(admitted)]
    if rows:
        ctx.session.execute(sa.insert(P), rows)
    return True
