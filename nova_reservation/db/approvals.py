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

"""Leases waiting for approval (PENDING_APPROVAL): approved, rejected or
expired, each by one conditional write, so that of two decisions at once
(two admins, an admin and an engine, two engines) exactly one is made.
"""

import datetime
from typing import Callable, Iterable, Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import events
from nova_reservation.db import leases
from nova_reservation.db import ledger
from nova_reservation.db import models
from nova_reservation import status


@api.reader
def awaiting(ctx, created_before: Optional[datetime.datetime] = None
             ) -> list:
    """The leases waiting for approval (made before `created_before`, if
    given), oldest first.
    """
    t = models.Lease
    query = sa.select(t).where(t.status == status.PENDING_APPROVAL)
    if created_before is not None:
        query = query.where(t.created_at < created_before)
    return api.rows(ctx, query.order_by(t.created_at, t.id))


@api.writer
def approve(ctx, lease_ids: Iterable[str], reason: str,
            also: Optional[Callable] = None) -> bool:
    """The leases (a lease and the later occurrences of its series) are
    approved: PENDING, like any lease.  Whether the first still waited
    (else nothing is written); `also(ctx)`: more in the same transaction.
    """
    lease_ids = list(lease_ids)
    if not leases.set_status(ctx, lease_ids[:1], status.PENDING, reason,
                             only_from=(status.PENDING_APPROVAL,),
                             version=models.Lease.version + 1):
        return False
    leases.set_status(ctx, lease_ids[1:], status.PENDING, reason,
                      only_from=(status.PENDING_APPROVAL,),
                      version=models.Lease.version + 1)
    if also:
        also(ctx)
    return True


@api.writer
def reject(ctx, lease_ids: Iterable[str], reason: str,
           keep_event: Optional[int] = None,
           also: Optional[Callable] = None) -> bool:
    """The leases waiting for approval are rejected: their capacity goes
    back to the ledger now, and an end event due now has the engine
    remove what was made for them (their servers are deleted, whatever
    their on_end).  Whether the first still waited (else nothing is
    written).  `keep_event`: the event being run that rejects them (it
    is finished with this write); `also(ctx)`: more in the same
    transaction.
    """
    lease_ids = list(lease_ids)
    first = True
    for lease_id in lease_ids:
        moved = leases.set_status(ctx, [lease_id], status.DELETING, reason,
                                  only_from=(status.PENDING_APPROVAL,),
                                  on_end='delete',
                                  version=models.Lease.version + 1)
        if first and not moved:
            return False
        first = False
        if not moved:
            continue
        ledger.release(ctx, lease_id)
        e = models.Event
        ctx.session.execute(sa.delete(e).where(
            e.lease_id == lease_id, e.id != (keep_event or -1)))
        events.add(ctx, lease_id, [dict(event_type='end',
                                        due_at=api.utcnow())])
    if also:
        also(ctx)
    return True
