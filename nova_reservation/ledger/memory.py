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

Every process holds the whole ledger: slots are kept as columns of numbers
in their nodes' timelines (`slot_columns`), and a `capacity.Slot` is made
only when a reader asks for one.
"""

import contextlib
import dataclasses
import functools
import operator
import sys
import threading
import time
from typing import Callable, Optional

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.capacity import slot_columns
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.db import api as db_api
from nova_reservation.db import changes as db_changes
from nova_reservation.db import ledger as db_ledger
from nova_reservation.lease import shares
from nova_reservation.ledger import refresher
from nova_reservation.ledger import slot_index

# The scheduler hint in which the boot hook gives the ids of the slots a
# boot holds: the filter lets each server of the boot use any of them.
SLOTS_HINT = 'reservation_slots'


@dataclasses.dataclass(frozen=True, slots=True)
class ReservationInfo:
    id: str
    lease_id: str
    project_id: str
    resource_type: str
    # The other projects that may boot into it.
    shared_with: frozenset = shares.NO_ONE


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
    # {reservation id: (node, ...)}: the nodes on which the reservation
    # has slots (held ones too), whose timelines hold them.
    nodes_by_reservation: dict = dataclasses.field(default_factory=dict)
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
        """{slot id: capacity.Slot} of every reservation's slots, made on
        first need: a Python object per slot (a kilobyte each), where the
        timelines keep numbers.  Readers of a few nodes' slots ask
        `slots_on`.
        """
        return {s.id: s for timeline in self.timelines.values()
                for s in timeline.slots() if not _held(s)}

    def slots(self, reservation_id: str) -> list:
        """The reservation's slots (`capacity.Slot`), by id."""
        found = [s for node in self.nodes_by_reservation.get(
            reservation_id, ()) for s in self.timelines[node].slots_of(
                reservation_id) if not _held(s)]
        found.sort(key=_slot_id)
        return found

    def slots_on(self, node: str) -> list:
        """The reservations' slots on a node (`capacity.Slot`), by id."""
        timeline = self.timelines.get(node)
        return [s for s in timeline.slots()
                if not _held(s)] if timeline is not None else []

    def peaks_after(self, t: float) -> dict:
        """{node: (vcpus, memory_mb, disk_gb)}: the highest usage that the
        ledger promises on each node at any instant from t on (nodes with
        none left out): the scheduler's question for an ordinary server.

        Made once for each stretch of time in which no node's usage
        changes, so that a request looks each host up once in a small dict
        instead of searching its timeline.
        """
        return self._stretch(t)[2]

    def nodes_with_extras(self, t: float) -> frozenset:
        """The nodes whose slots hold classes beyond vCPU, RAM and disk
        (a GPU): those an ordinary boot that asks for some is checked on.
        """
        return self._stretch(t)[3]

    def _stretch(self, t: float) -> tuple:
        """(from, until, `peaks_after`, `nodes_with_extras`) of the
        stretch of time that holds t.
        """
        known = self._peaks[0] if self._peaks else None
        if known is not None and known[0] <= t < known[1]:
            return known
        peaks, until, extra = {}, float('inf'), set()
        for node, timeline in self.timelines.items():
            peak = timeline.peak_after(t)
            if any(peak):
                peaks[node] = peak
            if timeline.holds_extras:
                extra.add(node)
            until = min(until, timeline.next_change(t))
        # One assignment: a request that reads it meanwhile sees either.
        self._peaks[:] = [(t, until, peaks, frozenset(extra))]
        return self._peaks[0]

    def reservation(self, reservation_id: str) -> Optional[ReservationInfo]:
        return self.reservations.get(reservation_id)


class _NextView:
    """The view after `base`, made by applying changed rows to copies of
    its containers; a timeline is copied when first changed.  `index` (a
    `slot_index.SlotIndex`, the refresh's own, never read by a request)
    is changed in place.
    """

    def __init__(self, base: View, index: slot_index.SlotIndex) -> None:
        self.index = index
        self.base = base
        self._own_timelines: set = set()
        self._own_bound = False
        self.changed = False   # whether a row was applied

    def _begin(self) -> None:
        """Containers of its own, at the first row (most refreshes of
        nova-scheduler's copy find none).
        """
        if not self.changed:
            base = self.base
            self.reservations = dict(base.reservations)
            self.timelines = dict(base.timelines)
            self.nodes_by_reservation = dict(base.nodes_by_reservation)
            self.bound = base.bound
            self.changed = True

    def _timeline(self, node: str) -> timeline_mod.Timeline:
        if node not in self._own_timelines:
            known = self.timelines.get(node)
            self.timelines[node] = (known.copy() if known is not None
                                    else timeline_mod.Timeline((), node))
            self._own_timelines.add(node)
        return self.timelines[node]

    def _bound(self) -> dict:
        if not self._own_bound:
            self.bound = dict(self.bound)
            self._own_bound = True
        return self.bound

    def apply_reservation(self, row) -> None:
        self._begin()
        if row.deleted:
            self.reservations.pop(row.id, None)
        else:
            self.reservations[row.id] = ReservationInfo(
                sys.intern(row.id), sys.intern(row.lease_id),
                sys.intern(row.project_id), sys.intern(row.resource_type),
                shares.projects(row.shared_with))

    def apply_slot(self, row) -> None:
        self._begin()
        node = self.index.pop(row.id)
        if node is not None:
            timeline = self._timeline(node)
            old = timeline.remove(row.id)
            if not len(timeline):
                del self.timelines[node]
                self._own_timelines.discard(node)
            if old is not None:
                if not (timeline and
                        timeline.has_reservation(old.reservation_id)):
                    self._forget(old.reservation_id, node)
                if old.instance_uuid and not _held(old):
                    self._bound().pop(old.instance_uuid, None)
        if row.deleted:
            return
        # Shared strings and sizes, and no capacity.Slot: a copy holds
        # every slot of a cloud.
        node, rid = sys.intern(row.node), sys.intern(row.reservation_id)
        size = slot_columns.SIZES.number(
            (row.vcpus, row.memory_mb, row.disk_gb))
        self.index.put(row.id, node)
        self._timeline(node).put(row.id, rid, epoch.to_epoch(row.start_at),
                                 epoch.to_epoch(row.end_at), size,
                                 row.instance_uuid,
                                 db_ledger.extras_value(row.extras))
        nodes = self.nodes_by_reservation.get(rid, ())
        if node not in nodes:
            self.nodes_by_reservation[rid] = nodes + (node,)
        uuid = row.instance_uuid
        if uuid and not uuid.startswith(db_ledger.HOLD_PREFIX):
            # Held: counted on its node; no reservation's slot yet.
            self._bound()[uuid] = slot_columns.SIZES[size]

    def _forget(self, reservation_id: str, node: str) -> None:
        """The reservation has no slot left on the node."""
        nodes = tuple(n for n in self.nodes_by_reservation.get(
            reservation_id, ()) if n != node)
        if nodes:
            self.nodes_by_reservation[reservation_id] = nodes
        else:
            self.nodes_by_reservation.pop(reservation_id, None)

    def view(self, epoch: Optional[str], generation: int,
             read_at: float) -> View:
        return View(epoch, generation, self.reservations, self.timelines,
                    self.nodes_by_reservation, self.bound, read_at)


def _held(slot: capacity.Slot) -> bool:
    """Whether the slot is held for a change not written yet
    (`db.ledger.hold`): it counts on its node, and is none of its
    reservation's slots.
    """
    return (slot.instance_uuid or '').startswith(db_ledger.HOLD_PREFIX)


def _slot_id(slot: capacity.Slot) -> int:
    return slot.id


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
    nodes_by_reservation = _of_view('nodes_by_reservation')
    bound = _of_view('bound')

    def __init__(self, changes: Optional[Callable] = None) -> None:
        # Refreshes take turns; readers never wait (they read `view`).
        self._lock = threading.Lock()
        ctx = db_api.Context()
        # changes(epoch, since): what the store wrote after a generation
        # (db.changes.Changes), or a context giving it, in which its rows
        # are read.
        self._changes = changes or (
            lambda epoch, since: db_changes.read(ctx, epoch, since))
        self.view = View()
        self._index = slot_index.SlotIndex()   # the refreshes' own
        # The thread of `keep_fresh`, and what stops it.
        self._refresher = refresher.Refresher(self.refresh,
                                              'ledger-refresh')

    def refresh(self) -> int:
        """Apply what changed in the store since the last refresh."""
        with self._lock:
            current = self.view
            read_at = time.monotonic()
            found = self._changes(current.epoch, current.generation)
            if not hasattr(found, '__enter__'):
                found = contextlib.nullcontext(found)
            with found as (epoch, gen, reservations, slots):
                if epoch != current.epoch:
                    # Another store: start again from nothing.
                    current, self._index = View(), slot_index.SlotIndex()
                nxt = _NextView(current, self._index)
                try:
                    for r in reservations:
                        nxt.apply_reservation(r)
                    for row in slots:
                        nxt.apply_slot(row)
                except Exception:
                    # The index is half changed: requests keep the view
                    # they have, and the next refresh reads every row
                    # again.
                    self.view = dataclasses.replace(self.view, epoch=None)
                    raise
            if nxt.changed:
                self.view = nxt.view(epoch, gen, read_at)
            elif epoch != current.epoch:
                self.view = View(epoch, gen, read_at=read_at)
            else:
                # What was worked out from the view (peaks_after) holds.
                self.view = dataclasses.replace(current, generation=gen,
                                                read_at=read_at)
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
        per copy), so that readers of `current` seldom wait for the store
        (when it is away, they refresh, or fail, themselves).
        """
        self._refresher.start(interval)

    def close(self) -> None:
        """Stop the thread of `keep_fresh` (if there is one); a later
        `keep_fresh` starts another.
        """
        self._refresher.stop()

    def slots(self, reservation_id: str) -> list:
        return self.view.slots(reservation_id)

    def reservation(self, reservation_id: str) -> Optional[ReservationInfo]:
        return self.view.reservation(reservation_id)
