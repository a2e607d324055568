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
(`nova_reservation.passes` says why and when they count).

The schedulers decide one after the other: each decision first updates
the row `LOCK` of the locks table, which a second writer on the same
database waits for, and a writer on another Galera node loses to at
certification (then `api.writer` runs the decision again).
"""

import datetime
from typing import Callable, Iterable

from oslo_db import exception as db_exception
import sqlalchemy as sa

from nova_reservation import capacity
from nova_reservation.db import api
from nova_reservation.db import models

LOCK = 'passes'
# Passes older than this are deleted by the next decision: a boot claims
# long before (`boot_settle_timeout`), and Placement's count has it.
KEPT = datetime.timedelta(minutes=10)

P = models.Pass


def take_lock(ctx, name: str) -> None:
    """Take the lock `name` for the rest of `ctx`'s transaction."""
    lock = models.Lock
    if ctx.session.execute(sa.update(lock).where(lock.name == name).values(
            taken=lock.taken + 1)).rowcount:
        return
    try:
        with ctx.session.begin_nested():
            ctx.session.execute(sa.insert(lock).values(name=name, taken=1))
    except db_exception.DBDuplicateEntry:
        # Another writer made the row at once: wait for it as usual.
        ctx.session.execute(sa.update(lock).where(lock.name == name).values(
            taken=lock.taken + 1))


def need_of(row: models.Pass) -> capacity.Resources:
    return capacity.Resources(row.vcpus, row.memory_mb, row.disk_gb)


@api.writer
def decide(ctx, instance_uuid: str, nodes: Iterable[str],
           since: datetime.datetime, need: capacity.Resources,
           judge: Callable[[list, datetime.datetime], tuple]) -> tuple:
    """One decision on which of `nodes` the boot of `instance_uuid` may
    go to, under the lock: `judge(passes, now)` is given the other boots'
    passes on `nodes` made since `since` and answers (admitted nodes,
    final); when final, the boot's passes on the admitted nodes (taking
    `need` each) replace any it had.  Gives judge's answer.
    """
    take_lock(ctx, LOCK)
    now = api.utcnow()
    nodes = sorted(set(nodes))
    others = list(ctx.session.execute(sa.select(P).where(
        P.node.in_(nodes), P.created_at >= since,
        P.instance_uuid != instance_uuid)).scalars())
    admitted, final = judge(others, now)
    if final:
        ctx.session.execute(sa.delete(P).where(sa.or_(
            P.created_at < now - KEPT, P.instance_uuid == instance_uuid)))
        if admitted:
            ctx.session.execute(sa.insert(P), [
                dict(instance_uuid=instance_uuid, node=node,
                     vcpus=need.vcpus, memory_mb=need.memory_mb,
                     disk_gb=need.disk_gb, created_at=now)
                for node in sorted(admitted)])
    return admitted, final
