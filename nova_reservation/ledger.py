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
when nothing changed) and keeps one `timeline_mod.Timeline` per node.  In
nova-scheduler a thread keeps it fresh (`keep_fresh`), so that a request
reads no database: its copy is at most `[reservation] ledger_max_age` old.
"""

import calendar
import dataclasses
import datetime
import functools
import operator
import threading
import time
from typing import Callable, Optional

from oslo_log import log as logging

from nova_reservation import capacity
from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation import timeline as timeline_mod

LOG = logging.getLogger(__name__)

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


@dataclasses.dataclass(frozen=True)
class View:
    """The ledger at one generation.

    Never changed once published, nor its timelines: a refresh makes the
    next view, copying only what changed.  Under Nova's native threads a
    request reads the ledger while another refreshes it; it then sees one
    generation whole, as under eventlet, where nothing else ran between two
    reads.
    """
    epoch: Optional[str] = None
    generation: int = -1
    reservations: dict = dataclasses.field(default_factory=dict)
    timelines: dict = dataclasses.field(default_factory=dict)
    # {reservation id: {slot id: capacity.Slot}}
    slots_by_reservation: dict = dataclasses.field(default_factory=dict)
    # {instance_uuid: resources}: the lease servers, whose usage the
    # ledger already holds over their lease (and which hold nothing
    # outside it: shelved before, gone after).
    bound: dict = dataclasses.field(default_factory=dict)
    # When (time.monotonic()) the read that made this view began: it holds
    # every change committed before then.
    read_at: float = float('-inf')
    # peaks_after's last answer, [(from, until, peaks)]: shared with the
    # views that a refresh without changes makes.
    _peaks: list = dataclasses.field(default_factory=list, repr=False,
                                     compare=False)

    @functools.cached_property
    def by_id(self) -> dict:
        """{slot id: capacity.Slot}, made on first need (rare: the
        reconciler's relocation), so that a refresh copies no index of
        every slot.
        """
        return {i: a for slots in self.slots_by_reservation.values()
                for i, a in slots.items()}

    def slots(self, reservation_id: str) -> list:
        return list(self.slots_by_reservation.get(reservation_id,
                                                  {}).values())

    def peaks_after(self, t: float) -> dict:
        """{node: (vcpus, memory_mb, disk_gb)}: the highest usage that the
        ledger promises on each node at any instant from t on (nodes with
        none left out): the scheduler's question for an ordinary server.

        Made once for each stretch of time in which no node's usage
        changes, so that a request looks each host up once in a small dict
        instead of searching its timeline.
        """
        known = self._peaks[0] if self._peaks else None
        if known is not None and known[0] <= t < known[1]:
            return known[2]
        peaks, until = {}, float('inf')
        for node, timeline in self.timelines.items():
            peak = timeline.peak_after(t)
            if any(peak):
                peaks[node] = peak
            until = min(until, timeline.next_change(t))
        # One assignment: a request that reads it meanwhile sees either.
        self._peaks[:] = [(t, until, peaks)]
        return peaks

    def reservation(self, reservation_id: str) -> Optional[ReservationInfo]:
        return self.reservations.get(reservation_id)


class _NextView:
    """The view after `base`, made by applying changed rows to copies of
    its containers; a timeline or a reservation's slots are copied when
    first changed.  `index` ({slot id: capacity.Slot}, the refresh's
    own, never read by a request) is changed in place.
    """

    def __init__(self, base: View, index: dict) -> None:
        self.index = index
        self.reservations = dict(base.reservations)
        self.timelines = dict(base.timelines)
        self.slots_by_reservation = dict(base.slots_by_reservation)
        self.bound = dict(base.bound)
        self._own_timelines: set = set()
        self._own_slots: set = set()

    def _timeline(self, node: str) -> timeline_mod.Timeline:
        if node not in self._own_timelines:
            known = self.timelines.get(node)
            self.timelines[node] = (known.copy() if known is not None
                                    else timeline_mod.Timeline())
            self._own_timelines.add(node)
        return self.timelines[node]

    def _slots(self, reservation_id: str) -> dict:
        if reservation_id not in self._own_slots:
            self.slots_by_reservation[reservation_id] = dict(
                self.slots_by_reservation.get(reservation_id, {}))
            self._own_slots.add(reservation_id)
        return self.slots_by_reservation[reservation_id]

    def apply_reservation(self, row) -> None:
        if row.deleted:
            self.reservations.pop(row.id, None)
        else:
            self.reservations[row.id] = ReservationInfo(
                row.id, row.lease_id, row.project_id, row.resource_type)

    def apply_slot(self, row) -> None:
        old = self.index.pop(row.id, None)
        if old is not None:
            timeline = self._timeline(old.node)
            timeline.remove(old.id)
            if not len(timeline):
                del self.timelines[old.node]
                self._own_timelines.discard(old.node)
            if not _held(old):
                slots = self._slots(old.reservation_id)
                slots.pop(old.id, None)
                if not slots:
                    del self.slots_by_reservation[old.reservation_id]
                    self._own_slots.discard(old.reservation_id)
                if old.instance_uuid:
                    self.bound.pop(old.instance_uuid, None)
        if row.deleted:
            return
        slot = capacity.Slot(
            id=row.id, reservation_id=row.reservation_id, node=row.node,
            start=to_epoch(row.start_at), end=to_epoch(row.end_at),
            resources=capacity.Resources(row.vcpus, row.memory_mb,
                                         row.disk_gb),
            instance_uuid=row.instance_uuid)
        self.index[slot.id] = slot
        self._timeline(slot.node).add(slot)
        if _held(slot):
            return   # counted on its node; no reservation's slot yet
        self._slots(slot.reservation_id)[slot.id] = slot
        if slot.instance_uuid:
            self.bound[slot.instance_uuid] = slot.resources

    def view(self, epoch: Optional[str], generation: int,
             read_at: float) -> View:
        return View(epoch, generation, self.reservations, self.timelines,
                    self.slots_by_reservation, self.bound, read_at)


def _held(slot: capacity.Slot) -> bool:
    """Whether the slot is held for a change not written yet
    (`db.ledger.hold`): it counts on its node, and is none of its
    reservation's slots.
    """
    return (slot.instance_uuid or '').startswith(db_ledger.HOLD_PREFIX)


def _of_view(field: str) -> property:
    return property(operator.attrgetter('view.' + field),
                    doc='The current view\'s %s.' % field)


class Ledger:
    """The ledger's current `View`, refreshed from the store.

    Each attribute below reads the view current at that moment; a reader
    that needs several parts of one generation takes `view` once.
    """

    epoch = _of_view('epoch')
    generation = _of_view('generation')
    reservations = _of_view('reservations')
    by_id = _of_view('by_id')
    timelines = _of_view('timelines')
    slots_by_reservation = _of_view('slots_by_reservation')
    bound = _of_view('bound')

    def __init__(self, changes: Optional[Callable] = None) -> None:
        # Refreshes take turns; readers never wait (they read `view`).
        self._lock = threading.Lock()
        ctx = db_api.Context()
        # changes(epoch, since): what the store wrote after a generation.
        self._changes = changes or (
            lambda epoch, since: db_ledger.changes(ctx, epoch, since))
        self.view = View()
        self._index: dict = {}   # the refreshes' {slot id: Allocation}
        # The thread of `keep_fresh`, and what stops it.
        self._refresher: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._starting = threading.Lock()

    def refresh(self) -> int:
        """Apply what changed in the store since the last refresh."""
        with self._lock:
            current = self.view
            read_at = time.monotonic()
            epoch, gen, reservations, slots = self._changes(
                current.epoch, current.generation)
            if epoch != current.epoch:
                # Another store: start again from nothing.
                current, self._index = View(), {}
            elif not reservations and not slots:
                self.view = dataclasses.replace(current, generation=gen,
                                                read_at=read_at)
                return gen
            nxt = _NextView(current, self._index)
            try:
                for r in reservations:
                    nxt.apply_reservation(r)
                for row in slots:
                    nxt.apply_slot(row)
            except Exception:
                # The index is half changed: requests keep the view they
                # have, and the next refresh reads every row again.
                self.view = dataclasses.replace(self.view, epoch=None)
                raise
            self.view = nxt.view(epoch, gen, read_at)
            return gen

    def current(self, max_age: float) -> View:
        """A view read at most `max_age` seconds ago (refreshed if older:
        when the thread of `keep_fresh` lags, or there is none).
        """
        view = self.view
        if time.monotonic() - view.read_at > max_age:
            self.refresh()
            view = self.view
        return view

    def keep_fresh(self, interval: float) -> None:
        """Refresh every `interval` seconds in a thread of its own (once
        per copy), so that readers of `current` seldom wait for the store.
        """
        if self._refresher is not None:
            return
        with self._starting:
            if self._refresher is not None:
                return
            self._stop = threading.Event()
            self._refresher = threading.Thread(
                target=self._refresh_every, args=(interval, self._stop),
                name='ledger-refresh', daemon=True)
            self._refresher.start()

    def _refresh_every(self, interval: float,
                       stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.refresh()
            except Exception as e:
                # The store is away: readers refresh, or fail, themselves.
                LOG.debug('Ledger refresh failed: %s', e)
            stop.wait(interval)

    def close(self) -> None:
        """Stop the thread of `keep_fresh` (if there is one); a later
        `keep_fresh` starts another.
        """
        with self._starting:
            refresher, self._refresher = self._refresher, None
            self._stop.set()
        if refresher is not None:
            refresher.join()

    def slots(self, reservation_id: str) -> list:
        return self.view.slots(reservation_id)

    def reservation(self, reservation_id: str) -> Optional[ReservationInfo]:
        return self.view.reservation(reservation_id)
