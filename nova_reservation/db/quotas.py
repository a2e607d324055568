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

"""Reservation quotas in the store: the projects' own limits, and what
each holds on the ledger (`lease.quotas` judges a write against them).
"""

import datetime
from typing import Mapping, Optional

import sqlalchemy as sa

from nova_reservation.capacity import epoch
from nova_reservation.db import api
from nova_reservation.db import ledger
from nova_reservation.db import models
from nova_reservation import status


@api.reader
def overrides(ctx, project_id: str) -> dict:
    """{limit: most} set for the project by an admin."""
    q = models.Quota
    return {name: most for name, most in ctx.session.execute(
        sa.select(q.name, q.most).where(q.project_id == project_id))}


@api.writer
def set_overrides(ctx, project_id: str, values: dict) -> None:
    """Set a project's own limits ({limit: most}; None: back to the tag's
    or the default).
    """
    q = models.Quota
    for name, most in values.items():
        ctx.session.execute(sa.delete(q).where(q.project_id == project_id,
                                               q.name == name))
        if most is not None:
            ctx.session.add(models.Quota(project_id=project_id, name=name,
                                         most=most,
                                         updated_at=api.utcnow()))


def _month_start(now: datetime.datetime) -> datetime.datetime:
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


@api.reader
def pieces(ctx, project_id: str, counted: Mapping[str, int],
           now: Optional[datetime.datetime] = None) -> tuple:
    """(held, spent): what the project holds, as (start, end, vcpus, memory_mb,
    hosts, extras) over seconds since the epoch (a quota's pieces,
    `lease.quotas.Piece`), from the slots of its leases: those on the ledger
    from `now` on, and in this month's figures what its leases that ran held
    before now (up to their end, or to when they were taken down).  Slots held
    for a change that is not written yet do not count: the change's own write
    does.  `counted`: {kind of reservation the quotas count: hosts each of
    its slots counts}.
    """
    now = now or api.utcnow()
    s, r, t = models.Slot, models.Reservation, models.Lease
    rows = ctx.session.execute(sa.select(
        s.start_at, s.end_at, s.vcpus, s.memory_mb, s.extras, s.deleted,
        r.resource_type, t.updated_at, t.status).join(
        r, r.id == s.reservation_id).join(t, t.id == r.lease_id).where(
        t.project_id == project_id, r.resource_type.in_(sorted(counted)),
        s.end_at > _month_start(now),
        sa.or_(s.instance_uuid.is_(None),
               s.instance_uuid.notlike(ledger.HOLD_PREFIX + '%')),
        sa.or_(s.deleted == sa.false(), s.start_at < now)))
    held, spent = [], []
    clock = epoch.to_epoch(now)
    for start_at, end_at, vcpus, memory_mb, extras, deleted, kind, \
            updated_at, state in rows:
        start, end = epoch.to_epoch(start_at), epoch.to_epoch(
            end_at)
        amounts = (vcpus, memory_mb, counted[kind],
                   ledger.extras_value(extras))
        if not deleted:
            if end > clock:
                held.append((max(start, clock), end) + amounts)
            if start < clock:
                spent.append((start, min(end, clock)) + amounts)
            continue
        # Released: what it held until it was taken down.
        if state in (status.REFUSED, status.WAITING):
            continue
        stop = min(end, clock, epoch.to_epoch(updated_at)
                   if updated_at else clock)
        if start < stop:
            spent.append((start, stop) + amounts)
    return held, spent
