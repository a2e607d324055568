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

"""An in-process copy of the capacity ledger, refreshed incrementally.

nova-scheduler asks the ledger once per host per request, and nova-api
once per lease; neither may read the whole ledger each time.  The copy
reads only the rows written since the generation it holds (one cheap query
when nothing changed) and keeps one `capacity.Timeline` per node.
"""

import calendar
import collections
import dataclasses
import datetime
import threading
from typing import Optional

from nova_reservation import capacity
from nova_reservation.db import api as db_api

# The scheduler hint in which the boot hook gives the ids of the slots a
# boot holds: the filter lets each server of the boot use any of them.
SLOTS_HINT = 'reservation_slots'


def to_epoch(value: datetime.datetime) -> float:
    """Seconds since the epoch of a naive UTC datetime."""
    return calendar.timegm(value.timetuple()) + value.microsecond / 1e6


def from_epoch(value: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(
        value, datetime.timezone.utc).replace(tzinfo=None)


@dataclasses.dataclass(frozen=True)
class ReservationInfo:
    id: str
    lease_id: str
    project_id: str
    resource_type: str


class Ledger:
    """The ledger as of `generation`: reservations, slots, timelines."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self.epoch = None
        self.generation = -1
        self.reservations: dict = {}
        self.allocations: dict = {}
        self.timelines: dict = {}
        self.slots_by_reservation = collections.defaultdict(set)
        # {instance_uuid: resources}: the lease servers, whose usage the
        # ledger already holds over their lease (and which hold nothing
        # outside it: shelved before, gone after).
        self.bound: dict = {}

    def refresh(self) -> int:
        """Apply what changed in the store since the last refresh."""
        with self._lock:
            epoch, gen, reservations, allocations = db_api.ledger_changes(
                self.epoch, self.generation)
            if epoch != self.epoch:
                self._clear()   # Another store: start again from nothing.
                self.epoch = epoch
            for r in reservations:
                if r.deleted:
                    self.reservations.pop(r.id, None)
                else:
                    self.reservations[r.id] = ReservationInfo(
                        r.id, r.lease_id, r.project_id, r.resource_type)
            for row in allocations:
                self._apply(row)
            self.generation = gen
            return gen

    def _apply(self, row) -> None:
        old = self.allocations.pop(row.id, None)
        if old is not None:
            self.timelines[old.node].remove(old.id)
            if not len(self.timelines[old.node]):
                del self.timelines[old.node]
            self.slots_by_reservation[old.reservation_id].discard(old.id)
            if old.instance_uuid:
                self.bound.pop(old.instance_uuid, None)
        if row.deleted:
            return
        alloc = capacity.Allocation(
            id=row.id, reservation_id=row.reservation_id, node=row.node,
            start=to_epoch(row.start_at), end=to_epoch(row.end_at),
            resources=capacity.Resources(row.vcpus, row.memory_mb,
                                         row.disk_gb),
            instance_uuid=row.instance_uuid)
        self.allocations[alloc.id] = alloc
        self.timelines.setdefault(alloc.node, capacity.Timeline()).add(alloc)
        self.slots_by_reservation[alloc.reservation_id].add(alloc.id)
        if alloc.instance_uuid:
            self.bound[alloc.instance_uuid] = alloc.resources

    def slots(self, reservation_id: str) -> list:
        return [self.allocations[i]
                for i in self.slots_by_reservation.get(reservation_id, ())]

    def reservation(self, reservation_id: str) -> Optional[ReservationInfo]:
        return self.reservations.get(reservation_id)
