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
"""Leases that wait for room (``if_busy: wait``): their tries, the slots
held while one is placed, and the end of the wait, placed or refused.
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
def waiting_due(ctx, now: datetime.datetime) -> list:
    """The WAITING leases due for a try at `now`, oldest first."""
    t = models.Lease
    return api.rows(ctx, sa.select(t).where(
        t.status == status.WAITING, t.next_try_at <= now).order_by(
        t.next_try_at, t.created_at, t.id))


@api.writer
def take_try(ctx, lease, next_try_at: datetime.datetime) -> bool:
    """Count a try of a waiting lease and set its next one; whether this
    caller got the try (several engines try each lease once).
    """
    t = models.Lease
    return ctx.session.execute(sa.update(t).where(
        t.id == lease.id, t.status == status.WAITING,
        t.tries == lease.tries, t.next_try_at == lease.next_try_at).values(
        tries=t.tries + 1, next_try_at=next_try_at,
        updated_at=api.utcnow())).rowcount == 1


@api.writer
def hold_waiting(ctx, planned: int, lease_id: str, slots: dict) -> None:
    """The slots ({reservation id: [slot columns]}) of a waiting lease
    being placed, if the nodes are as at generation `planned`
    (exception.LedgerConflict) and it still waits (else nothing).
    """
    lease = leases.get(ctx, lease_id)
    if lease is None or lease.status != status.WAITING:
        return
    gen = ledger.bump(ctx, planned, (s['node'] for rows in slots.values()
                                     for s in rows))
    for rid, rows in slots.items():
        # What a try cut off before its end held goes first.
        ledger.drop_slots(ctx, gen, rid)
        ledger.add_slots(ctx, gen, rid, rows)


@api.writer
def unhold_waiting(ctx, lease_id: str) -> None:
    """The slots `hold_waiting` wrote go: the lease waits on."""
    gen = ledger.bump(ctx)
    for res in leases.reservations(ctx, lease_id):
        ledger.drop_slots(ctx, gen, res.id)


@api.writer
def placed(ctx, lease_id: str, dates: dict, reservation_ids: list,
           lease_events: Iterable[dict],
           also: Optional[Callable] = None) -> bool:
    """A waiting lease whose slots are held is PENDING at its `dates`
    ({start_at, end_at}) with its events, and each of its servers holds a
    slot of its server reservation (`reservation_ids`); whether it still
    waited.  `also(ctx)`: more to write in the same transaction.
    """
    if not leases.set_status(ctx, [lease_id], status.PENDING,
                             only_from=(status.WAITING,), next_try_at=None,
                             version=models.Lease.version + 1, **dates):
        return False
    b = models.ServerBinding
    uuids = list(ctx.session.execute(sa.select(b.instance_uuid).where(
        b.lease_id == lease_id).order_by(b.instance_uuid)).scalars())
    for rid in reservation_ids:
        ledger.take_slots(ctx, rid, uuids)
    events.add(ctx, lease_id, lease_events)
    if also:
        also(ctx)
    return True


@api.writer
def refuse(ctx, lease_id: str, reason: str,
           also: Optional[Callable] = None) -> bool:
    """A waiting lease is REFUSED (`reason`); whether it was waiting.  Its
    reservations go, and an end event due now has the engine remove what
    was made for it (servers, private flavors, server groups).
    `also(ctx)`: more to write in the same transaction.
    """
    if not leases.set_status(ctx, [lease_id], status.REFUSED, reason=reason,
                             only_from=(status.WAITING,), next_try_at=None,
                             version=models.Lease.version + 1):
        return False
    ledger.release(ctx, lease_id)
    events.add(ctx, lease_id, [dict(event_type='end', due_at=api.utcnow())])
    if also:
        also(ctx)
    return True
