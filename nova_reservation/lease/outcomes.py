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

"""What running an event came to, and how a pass's outcomes are written:
the events, their leases' statuses, the slots of the leases that are over
and the notices that tell them, in one transaction.

The lease's moves from one status to the next as its events run are the
lease domain's: the engine runs the events and hands their outcomes here.
"""

import datetime
from typing import Callable, NamedTuple, Optional

from oslo_db import api as oslo_db_api

from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import notices as db_notices
from nova_reservation import status


class Writes:
    """The store writes an action asks for: made with its event's outcome,
    in the same transaction, and only if the event is still this engine's
    (an engine that lost its claim changes nothing).
    """

    def __init__(self) -> None:
        self.calls: list = []

    def add(self, write: Callable, *args, **kwargs) -> None:
        """`write(ctx, *args, **kwargs)`, a write of the lease domain
        (`lease.bindings`, say; the store's own, asked by a kind).
        """
        self.calls.append((write, args, kwargs))


class Outcome(NamedTuple):
    """What running an event came to.

    `status`: DONE or ERROR (the event is over), or UNDONE: run it again
    at `due_at` (a retry after a failure when `failed`).  `claim`: the
    event's claim when it ran; the outcome is written only if the event
    still has that claim.  `lease_status`: the lease's new status, if any
    (TERMINATED and DELETED also unbind its slots).  `notice`:
    models.Notice's columns but created_at.
    """
    event_id: int
    claim: str
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
    # The action's store writes (Writes.calls).
    writes: tuple = ()


def _grouped(outcomes, key) -> dict:
    groups: dict = {}
    for o in outcomes:
        groups.setdefault(key(o), []).append(o)
    return groups


# Engines that write at the same moment may deadlock: the loser writes
# again.
@oslo_db_api.wrap_db_retry(max_retries=5, retry_on_deadlock=True,
                           retry_interval=0.01, max_retry_interval=0.1)
def record(ctx, outcomes: list) -> set:
    """Write `outcomes` all in one transaction; the ids of the events
    written (an event whose claim another engine took over is left alone).

    Outcomes alike are written by one statement, so that a pass of many
    events costs a few statements and one commit.
    """
    if not outcomes:
        return set()
    return _record(ctx, outcomes)


@db_api.writer
def _record(ctx, outcomes: list) -> set:
    now = db_api.utcnow()
    claims = db_events.claims_of(ctx, (o.event_id for o in outcomes))
    mine = [o for o in outcomes if claims.get(o.event_id) == o.claim]
    for o in mine:
        for write, args, kwargs in o.writes:
            write(ctx, *args, **kwargs)
    for (new, error), group in _grouped(
            [o for o in mine if o.status != status.UNDONE],
            lambda o: (o.status, o.error)).items():
        db_events.finish(ctx, (o.event_id for o in group), new, error, now)
    for (due_at, failed, error, waited), group in _grouped(
            [o for o in mine if o.status == status.UNDONE],
            lambda o: (o.due_at, o.failed, o.error, o.waited)).items():
        db_events.put_back(ctx, (o.event_id for o in group), due_at, now,
                           error=error, failed=failed, waited=waited)
    for (new, error), group in _grouped(
            [o for o in mine if o.lease_status],
            lambda o: (o.lease_status, o.error)).items():
        db_leases.set_status(ctx, (o.lease_id for o in group), new, error)
    over = [o.lease_id for o in mine
            if o.lease_status in (status.TERMINATED, status.DELETED)]
    if over:
        db_ledger.unbind(ctx, over)
    db_notices.add(ctx, (o.notice for o in mine if o.notice), now)
    return {o.event_id for o in mine}
