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

"""Writes of leases on the ledger: a plan written in one transaction
that commits only if the ledger is still at the generation the plan was
made on, made again when another writer moved it, and checked against the
ordinary boots that Nova was scheduling meanwhile.
"""

import datetime
import threading
import time
from typing import Callable, Iterable, Optional

from nova.scheduler.client import report

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.capacity.epoch import when_text
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import holds as db_holds
from nova_reservation.db import leases as db_leases
from nova_reservation.db import waiting as db_waiting
from nova_reservation import exception
from nova_reservation.lease import kinds
from nova_reservation.lease import plan as plan_mod
from nova_reservation.lease import quotas as lease_quotas
from nova_reservation.lease.request import interval
from nova_reservation.lease.request import reservation_row
from nova_reservation.lease.request import retry_interval
from nova_reservation.lease.request import slot_row_of
from nova_reservation.lease.request import slot_rows
from nova_reservation.lease import schedule
from nova_reservation.ledger import memory as ledger_mod
from nova_reservation import status

CONF = conf.CONF
# Plans made again when another lease took the same nodes meanwhile; each
# time, another writer made progress.
LEDGER_RETRIES = 20
# Seconds after which a build request is taken as left behind by a boot
# that failed, not one being scheduled: no lease waits for it.
STUCK_BUILD = 3600


class Writer(plan_mod.Planner):
    """A planner that writes what it plans."""

    def create(self, lease: dict, requests: list, events: list,
               quota: Optional[lease_quotas.Quota] = None) -> None:
        """Plan and write a lease (`lease`: the row's values).

        The lease is written CREATING, then takes its own status once its
        shared-pool nodes are known to hold it after the boots that Nova
        was scheduling meanwhile (`_taken_meanwhile`).
        """
        self.create_series([(lease, requests, events)], quota)

    def create_series(self, occurrences: list,
                      quota: Optional[lease_quotas.Quota] = None) -> None:
        """Plan and write the occurrences of a lease (`occurrences`: [(lease
        row values, requests, events)], whose intervals do not overlap),
        all or none: exception.NoCapacity names the first that does not fit;
        exception.OverQuota if they take the project past `quota`.
        """
        def write(gen, found):
            rows = [(dict(lease, status=status.CREATING), [
                (reservation_row(lease, req),
                 slot_rows(lease, plan.placed[req.id]))
                for req in requests], events)
                for (lease, requests, events), plan in zip(occurrences,
                                                           found)]
            lease_quotas.guarded(self.ctx, quota,
                                 lambda: db_leases.create_many(
                                     self.ctx, gen, rows))
        found = self.written(lambda: self.series_plans(occurrences), write)
        ids = [lease['id'] for lease, _, _ in occurrences]
        self.settled(
            [(lease, requests, plan) for (lease, requests, _), plan
             in zip(occurrences, found)],
            lambda: [db_leases.discard(self.ctx, i) for i in ids])
        for lease, _, _ in occurrences:
            if lease['status'] != status.CREATING:
                db_leases.set_status(self.ctx, [lease['id']],
                                     lease['status'],
                                     only_from=(status.CREATING,),
                                     keep_reason=True)

    def series_plans(self, occurrences: list) -> list:
        """The plan of each of the occurrences (as `create_series` takes them)
        on the ledger as last read; exception.NoCapacity names the first that
        does not fit.
        """
        # The nodes read once for the series (twice if some occurrences
        # start too soon for the preemptible servers to leave).
        found, pools = [], {}
        for number, (lease, requests, _) in enumerate(occurrences, 1):
            start, end = interval(lease)
            soon = self.evictable(start) is None
            if soon not in pools:
                pools[soon] = self.pools(start=start)
            try:
                found.append(self.plan(requests, start, end,
                                       pools=pools[soon]))
            except exception.NoCapacity as e:
                if len(occurrences) == 1:
                    raise
                raise exception.NoCapacity(
                    'occurrence %d (from %s UTC) does not '
                    'fit: %s' % (number, lease['start_at'], e),
                    e.earliest, occurrence=number) from e
        return found

    def written(self, plans: Callable, write: Callable):
        """What `plans()` found, once `write(generation, found)` wrote it,
        planned again while others wrote the same nodes (exception.LedgerBusy
        after `LEDGER_RETRIES`); exception.NoCapacity.
        """
        for _ in range(LEDGER_RETRIES):
            gen = self.ledger.refresh()
            found = plans()
            try:
                write(gen, found)
                return found
            except exception.LedgerConflict:
                continue   # Someone else wrote the ledger: plan again.
        raise exception.LedgerBusy()

    def settled(self, written: list, undo: Callable) -> None:
        """exception.NoCapacity, once `undo()` took the new slots back, if an
        ordinary boot took a node of them meanwhile (`written`: [(lease,
        requests, plan)] of what was written, over the leases' intervals).

        Each piece is checked on the timelines its plan left: the ledger
        as the plan read it, with the new slots (the process's copy may
        have read them back since, through another request).
        """
        pieces = []
        for lease, requests, plan in written:
            start, end = interval(lease)
            pieces += [(node, start, end, plan.timelines)
                       for req in requests
                       if req.resource_type in kinds.SHARED_POOL
                       for node, _, _ in plan.placed[req.id]]
        taken = self._taken_meanwhile(pieces)
        if taken:
            undo()
            lease, requests, _ = written[0]
            start, end = interval(lease)
            raise exception.NoCapacity(
                'Not enough capacity for %s from %s to %s UTC: a server '
                'booted meanwhile took the last of node %s; try again'
                % ('; '.join(r.describe() for r in requests), when_text(start),
                   when_text(end), taken))

    def create_or_wait(self, lease: dict, requests: list,
                       quota: Optional[lease_quotas.Quota] = None) -> bool:
        """Create a lease (`lease`: the row's values, left as they are),
        or, if it waits for room (``if_busy: wait``) and none is found,
        write it waiting, with the dates it asked for (no slot, no event,
        WAITING unless CREATING); whether it waits.  A lease with a
        flexible start is placed at the earliest start that fits up to its
        `start_before`.
        """
        if lease.get('if_busy') != 'wait':
            self.create(lease, requests, schedule.lease_events(
                lease, db_api.utcnow()), quota)
            return False
        try:
            placed = dict(lease, **self.moved(lease, requests, self.clock()))
            self.create(placed, requests, schedule.lease_events(
                placed, db_api.utcnow()), quota)
            return False
        except exception.NoCapacity as e:
            waiting = dict(
                lease, status_reason='waiting for room: %s' % e,
                next_try_at=epoch.from_epoch(
                    self.clock() + retry_interval(lease)))
            if lease['status'] != status.CREATING:
                waiting['status'] = status.WAITING
            db_leases.create(self.ctx, None, waiting, [
                (reservation_row(lease, req), []) for req in requests],
                [])
            return True

    def place(self, lease, requests: list, now: float,
              also: Optional[Callable] = None,
              quota: Optional[lease_quotas.Quota] = None) -> None:
        """Place a waiting lease (`lease`: its row) where it may start as
        of `now`: its slots, dates and events written, its servers each
        holding a slot, and PENDING (with `also(store)` in the same
        transaction); exception.NoCapacity.
        """
        moved = self.moved(lease, requests, now)
        plan = self.written(
            lambda: self.plan(requests, *interval(moved)),
            lambda gen, plan: lease_quotas.guarded(
                self.ctx, quota, lambda: db_waiting.hold_waiting(
                    self.ctx, gen, lease.id, {
                        req.id: slot_rows(moved, plan.placed[req.id])
                        for req in requests})))
        self.settled([(moved, requests, plan)],
                     lambda: db_waiting.unhold_waiting(self.ctx, lease.id))
        due = dict(moved, before_end_minutes=lease.before_end_minutes)
        if not db_waiting.placed(self.ctx, lease.id, moved, [
                r.id for r in requests
                if kinds.of(r.resource_type).made_by_boot],
                schedule.lease_events(due, epoch.from_epoch(now)),
                also):
            db_waiting.unhold_waiting(self.ctx, lease.id)   # deleted

    def _taken_meanwhile(self, pieces: Iterable[tuple]) -> Optional[str]:
        """A node of `pieces` ((node, start, end, timelines): shared-pool
        capacity a lease was just given, and the nodes' timelines as the
        plan that gave it left them: whoever wrote the nodes since planned
        with it, and checks itself) that an ordinary boot took meanwhile,
        or None.

        An ordinary boot is kept off promised capacity by the scheduler's
        filter, which reads a copy of the ledger at most `ledger_max_age`
        old: once that long has passed, every boot filtered without this
        write was filtered already, and each claims in Placement at most
        `boot_settle_timeout` after its filters (a boot filtered later sees
        the write).  So the boots in flight (their build requests) are
        waited for that long at most, and then Placement tells whether the
        nodes still hold the lease.  (Whole hosts take no ordinary boot:
        their pieces are not asked about.)
        """
        pieces = list(pieces)
        if not pieces:
            return None
        view_age = self.view_age
        if view_age is None:
            view_age = CONF.reservation.ledger_max_age
        time.sleep(view_age)
        since = db_api.utcnow() - datetime.timedelta(seconds=STUCK_BUILD)
        waiting = self.in_flight(since)
        deadline = time.monotonic() + CONF.reservation.boot_settle_timeout
        while waiting and time.monotonic() < deadline:
            time.sleep(0.05)
            waiting &= self.in_flight(since)
        hosts = self.nodes.hosts_of(
            self.client, {p[0] for p in pieces},
            self.evictable(min(p[1] for p in pieces)))
        for node, start, end, timelines in sorted(
                pieces, key=lambda p: p[:3]):
            if node not in hosts or not capacity.fits(
                    hosts[node], timelines.get(node),
                    capacity.ZERO, start, end):
                return node
        return None

    def guarded(self, gen: int, added: list, timelines: dict,
                write: Callable, taken_message: str) -> None:
        """Write a change that adds shared-pool capacity to a lease (`added`:
        (reservation id, slot columns) of what it adds, on the plan's
        `timelines`) so that no ordinary boot in flight takes it too: the added
        slots are held first (on generation `gen`), then checked
        (`_taken_meanwhile`), then `write(hold)` makes the change in the
        transaction that drops them.  exception.NoCapacity (`taken_message` %
        node) if a boot took a node; LedgerConflict if the plan was stale.
        Nothing is released before the change is written, so no other lease can
        take what a refused change gives back.
        """
        hold_id = db_holds.hold_id(self.clock())
        db_holds.hold(self.ctx, gen, hold_id, added)
        try:
            taken = self._taken_meanwhile(
                [(values['node'], epoch.to_epoch(values['start_at']),
                  epoch.to_epoch(values['end_at']), timelines)
                 for _, values in added])
            if taken:
                raise exception.NoCapacity(taken_message % taken)
            write((hold_id, len(added)))
        except Exception:
            db_holds.drop_hold(self.ctx, hold_id)
            raise

    def _added(self, own: list, placed: dict, growth: list, start: float,
               end: float) -> list:
        """What a change gives a lease on the shared pool that it did not
        have: its slots' time outside their current interval, and its new
        slots; (reservation id, slot columns) pairs.
        """
        added = []
        for slot in own:
            if not self.on_shared_pool(slot.reservation_id):
                continue
            for a, b in ((start, min(end, slot.start)),
                         (max(start, slot.end), end)):
                if a < b:
                    added.append((slot.reservation_id, slot_row_of(
                        capacity.Placed(slot.node, slot.resources,
                                        slot.extras), a, b)))
        for req in growth:
            if req.resource_type in kinds.SHARED_POOL:
                added.extend((req.id, slot_row_of(p, start, end))
                             for p in placed.get(req.id, ()))
        return added

    def change(self, lease, version: int, values: dict,
               growth: Iterable[tuple] = (), replaced: Iterable[str] = (),
               also: Optional[Callable] = None,
               quota: Optional[lease_quotas.Quota] = None) -> None:
        """Rename, move, extend, shorten, grow or reshape a lease, all or
        nothing.

        The lease keeps its nodes; `growth` holds ``(request, sizes)``
        pairs: extra slots (the request's count, maybe none) for some of
        its reservations (same ids), and their new sizes as columns.  A
        reservation in `replaced` is placed again whole: its request is
        its new shape and count, and its slots go.
        exception.NoCapacity, or LeaseChanged if the lease
        changed since `version`.  What it adds on the shared pool is
        guarded against the boots in flight (`guarded`).  `also(store)`:
        more to write in the change's transaction; exception.OverQuota
        if it takes the project past `quota`.
        """
        replaced = set(replaced)
        sizes = {req.id: columns for req, columns in growth}
        growth = [req for req, _ in growth if req.count]
        start_at = values.get('start_at', lease.start_at)
        end_at = values.get('end_at', lease.end_at)
        start = epoch.to_epoch(start_at)
        end = epoch.to_epoch(end_at)
        due = schedule.due_times(dict(
            start_at=start_at, end_at=end_at, before_end_minutes=values.get(
                'before_end_minutes', lease.before_end_minutes)))
        message = ('Not enough capacity to change lease %s to %s - %s UTC: '
                   'a server booted meanwhile took the last of node %%s; '
                   'try again' % (lease.id, when_text(start), when_text(end)))
        for _ in range(LEDGER_RETRIES):
            gen = self.ledger.refresh()
            own, dropped = [], []
            for r in db_leases.reservations(self.ctx, lease.id):
                (dropped if r.id in replaced else own).extend(
                    self.ledger.slots(r.id))
            try:
                placed, timelines = self.plan(growth, start, end, moved=own,
                                              dropped=dropped)
            except exception.NoCapacity as e:
                if growth or replaced or start_at != lease.start_at or \
                        end_at <= lease.end_at:
                    raise
                raise self._refused_extension(e, own, lease.end_at)
            slots = {rid: (columns, slot_rows(
                lease, placed.get(rid, []), start_at, end_at))
                for rid, columns in sizes.items()}
            added = self._added(own, placed, growth, start, end)
            try:
                if not added:
                    lease_quotas.guarded(self.ctx, quota, lambda: (
                        db_leases.change(self.ctx, gen, lease.id, version,
                                         values, slots, due,
                                         replaced=replaced, also=also)))
                else:
                    def write(hold):
                        lease_quotas.guarded(self.ctx, quota, lambda: (
                            db_leases.change(self.ctx, None, lease.id,
                                             version, values, slots, due,
                                             hold=hold, replaced=replaced,
                                             also=also)))
                    self.guarded(gen, added, timelines, write, message)
                return
            except exception.LedgerConflict:
                continue
        raise exception.LedgerBusy()

    def _refused_extension(self, refused: exception.NoCapacity, own: list,
                           end_at: datetime.datetime) -> exception.NoCapacity:
        """A refused extension, with the latest end to which the lease's
        slots (`own`, on their nodes until `end_at`) can all run.
        """
        end = epoch.to_epoch(end_at)
        hosts = self._all_nodes(self.pools(fresh=True, start=end))
        need: dict = {}
        for s in own:
            resources, extras = need.get(s.node, (capacity.ZERO, ()))
            need[s.node] = (resources + s.resources, capacity.extras_sum(
                extras, s.extras))
        excluded = {s.id for s in own}
        latest = capacity.FOREVER
        for node, (resources, extras) in need.items():
            if node not in hosts:
                return refused
            timeline = self.ledger.timelines.get(node)
            latest = min(latest, capacity.held_until(
                hosts[node], timeline and timeline.copy(excluded),
                [resources], end, [extras])[0])
        if not end < latest < capacity.FOREVER:
            return refused
        when = epoch.from_epoch(latest).replace(microsecond=0)
        return exception.NoCapacity('%s; the latest end that fits is %s UTC'
                                    % (refused, when), latest_end=when)


_SHARED: dict = {}
_SHARED_LOCK = threading.Lock()


def drop_hold(name: str) -> int:
    """The slots held as `name` for a change whose process died before it
    was written go; how many there were.
    """
    return db_holds.drop_hold(db_api.Context(), name)


def shared(placement_client=None) -> Writer:
    """The process's planner, on the real clock: nova-api's hook and lease
    API use one, so that the process holds one copy of the ledger and one
    view of the nodes.
    """
    with _SHARED_LOCK:
        if 'planner' not in _SHARED:
            if placement_client is None:
                placement_client = report.report_client_singleton()
            _SHARED['planner'] = Writer(ledger_mod.Ledger(),
                                        placement_client, time.time)
        return _SHARED['planner']
