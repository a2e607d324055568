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

"""What the ledger's copies read: the rows written after a generation
(`db.ledger.bump`), streamed, so that a copy that reads the whole ledger
(a million rows) never holds all its rows at once.
"""

import contextlib
import datetime
from typing import Iterable, Iterator, NamedTuple, Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models

# Rows read at a time.
BATCH = 5000


class ReservationRow(NamedTuple):
    """The columns of a reservation that the ledger's copies keep."""
    id: str
    lease_id: str
    project_id: str
    resource_type: str
    deleted: bool
    shared_with: Optional[str]


class SlotRow(NamedTuple):
    """The columns of a slot that the ledger's copies keep."""
    id: int
    reservation_id: str
    node: str
    start_at: datetime.datetime
    end_at: datetime.datetime
    vcpus: int
    memory_mb: int
    disk_gb: int
    instance_uuid: Optional[str]
    deleted: bool
    extras: Optional[str] = None


class Changes(NamedTuple):
    """What changed in the ledger after a generation."""
    epoch: str
    generation: int
    reservations: Iterable   # ReservationRow, read once
    slots: Iterable          # SlotRow, read once, after them


@contextlib.contextmanager
def read(ctx, epoch: Optional[str], since: int) -> Iterator[Changes]:
    """The reservations and slots written after generation `since` of
    store `epoch` (all of them for another epoch), read in one snapshot:
    a context in which their rows are read, `BATCH` at a time.
    """
    with api.reading(ctx):
        state = api.row(ctx, sa.select(models.LedgerState).where(
            models.LedgerState.id == 1))
        if state.epoch != epoch:
            since = -1
        elif state.generation == since:
            yield Changes(epoch, since, [], [])
            return
        r, s = models.Reservation, models.Slot
        yield Changes(
            state.epoch, state.generation,
            _streamed(ctx, ReservationRow, sa.select(
                *(getattr(r, c) for c in ReservationRow._fields)).where(
                    r.generation > since)),
            _streamed(ctx, SlotRow, sa.select(
                *(getattr(s, c) for c in SlotRow._fields)).where(
                    s.generation > since)))


def _streamed(ctx, row_type, query) -> Iterator:
    """The rows of `query` as `row_type`, fetched in batches when first
    iterated (one query streams at a time on a connection).
    """
    result = ctx.session.execute(
        query, execution_options={'yield_per': BATCH})
    # Plain tuples: a row's attributes cost a microsecond each otherwise.
    for batch in result.tuples().partitions():
        yield from map(row_type._make, batch)


@api.reader
def generation(ctx) -> int:
    """The ledger's generation now."""
    return api.row(ctx, sa.select(models.LedgerState).where(
        models.LedgerState.id == 1)).generation
