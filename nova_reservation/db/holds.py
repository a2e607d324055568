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

"""Holds: the slots that a lease change adds, held under a name of their
own while the change is checked against the boots in flight, then spent
by the change or dropped.
"""

from typing import Iterable, Optional

from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import ledger
from nova_reservation.db import models
from nova_reservation import exception


def hold_id(now: float) -> str:
    """A new hold's id: when it was made (seconds, hex), then a random
    part, so that one left behind is known by its age (`hold_made`).
    """
    return '%s%08x%s' % (ledger.HOLD_PREFIX, int(now),
                         uuidutils.generate_uuid(dashed=False)[:23])


def hold_made(name: str) -> float:
    """When the hold `name` (`hold_id`) was made (0: unknown)."""
    try:
        return float(int(name[len(ledger.HOLD_PREFIX):][:8], 16))
    except ValueError:
        return 0.0


@api.writer
def hold(ctx, planned: int, name: str, slots: Iterable[tuple]) -> None:
    """Slots that a lease change adds, held as `name` while the change is
    checked against the boots in flight (`slots`: (reservation id,
    columns) pairs), if their nodes are as they were at generation
    `planned` (else exception.LedgerConflict).
    """
    slots = list(slots)
    gen = ledger.bump(ctx, planned, [values['node'] for _, values in slots])
    for reservation_id, values in slots:
        ledger.add_slots(ctx, gen, reservation_id,
                         [dict(values, instance_uuid=name)])


@api.writer
def drop_hold(ctx, name: str) -> int:
    """The slots held as `name` go; how many there were."""
    gen = ledger.bump(ctx)
    return ctx.session.execute(sa.update(models.Slot).where(
        models.Slot.instance_uuid == name,
        models.Slot.deleted == sa.false()).values(
        deleted=True, generation=gen)).rowcount


@api.writer
def spend_hold(ctx, hold: Optional[tuple]) -> None:
    """The held slots of a change being written go (`hold`: (its name,
    slot count), or None); LedgerConflict if some were taken back meanwhile
    (left behind for too long), so that the change is planned again.
    """
    if hold is not None and drop_hold(ctx, hold[0]) != hold[1]:
        raise exception.LedgerConflict()
