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

"""The reservations other projects may use: those shared with a project,
and the open ones an ordinary boot may go into (their columns are
written with the lease's changes, `leases.change`).
"""

import datetime
from typing import Iterable

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models
from nova_reservation.lease import shares
from nova_reservation import status


@api.reader
def shared_with(ctx, project_id: str) -> list:
    """Leases not deleted of other projects, with a reservation shared
    with `project_id`.
    """
    r, t = models.Reservation, models.Lease
    # '!' escapes LIKE's wildcards (a backslash means more to MySQL).
    pattern = '%%"%s"%%' % project_id.replace('!', '!!').replace(
        '%', '!%').replace('_', '!_')
    found = {x.lease_id for x in api.rows(ctx, sa.select(r).where(
        r.shared_with.like(pattern, escape='!'),
        r.deleted == sa.false()))
        if project_id in shares.projects(x.shared_with)}
    return api.rows(ctx, sa.select(t).where(
        t.id.in_(sorted(found)), t.status != status.DELETED,
        t.project_id != project_id).order_by(t.created_at, t.id))


@api.reader
def open_reservations(ctx, project_id: str, kinds: Iterable[str],
                      now: datetime.datetime) -> list:
    """[(reservation, lease)] of the open reservations of `kinds` that
    `project_id` may use (its own, and those shared with it) whose lease
    runs at `now`.
    """
    r, t = models.Reservation, models.Lease
    found = []
    for res, lease in ctx.session.execute(sa.select(r, t).join(
            t, t.id == r.lease_id).where(
            r.matching == shares.OPEN, r.deleted == sa.false(),
            r.resource_type.in_(sorted(kinds)),
            t.status.in_((status.PENDING, status.ACTIVE)),
            t.start_at <= now, t.end_at > now).order_by(r.id)):
        if shares.row_may_use(res, project_id):
            found.append((res, lease))
    return found
