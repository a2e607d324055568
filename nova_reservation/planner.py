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

"""Placing leases on the ledger: the one place where a lease's capacity is
chosen, for the boot hook and the lease API alike.

A lease holds one or more reservations; each becomes slots (ledger
allocations) on nodes.  Reservations on the shared pool (servers,
flavor:instance, virtual:instance) take slots of their size on nodes that
are not reservable hosts; host reservations take whole reservable hosts.
Everything is written in one transaction that only commits if the ledger is
still at the generation the plan was made on.
"""

import dataclasses
import datetime
import json
import threading
import time
from typing import Callable, Iterable, NamedTuple, Optional

from nova.scheduler.client import report
from oslo_utils import uuidutils

from nova_reservation import capacity
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import builds as db_builds
from nova_reservation.db import hosts as db_hosts
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation import ledger as ledger_mod
from nova_reservation import placement
from nova_reservation import properties
from nova_reservation import resource_types
from nova_reservation import schedule
from nova_reservation import status

CONF = conf.CONF
# Plans made again when another lease took the same nodes meanwhile; each
# time, another writer made progress.
LEDGER_RETRIES = 20
# The last day a date can name (year 9999): searches stop there.
LAST_DAY = ledger_mod.to_epoch(datetime.datetime(9999, 12, 31))


@dataclasses.dataclass
class ReservationRequest:
    resource_type: str
    count: int                 # servers, amount, or most hosts
    need: Optional[capacity.Resources] = None   # a slot (shared pool)
    min_count: Optional[int] = None             # fewest hosts
    affinity: Optional[bool] = None
    flavor_id: Optional[str] = None
    flavor_name: Optional[str] = None           # in messages
    hypervisor_properties: str = ''
    resource_properties: str = ''
    before_end: Optional[str] = None
    server_group_id: Optional[str] = None
    private_flavor_id: Optional[str] = None
    id: str = dataclasses.field(default_factory=uuidutils.generate_uuid)

    def describe(self) -> str:
        if self.resource_type == resource_types.HOST:
            return '%d to %d reservable hosts' % (self.min_count, self.count)
        return '%d x %s (%s each)' % (
            self.count, self.flavor_name or self.flavor_id or
            self.resource_type, self.need.describe())


class NoCapacity(Exception):
    def __init__(self, message: str,
                 earliest: Optional[datetime.datetime] = None,
                 latest_end: Optional[datetime.datetime] = None,
                 occurrence: Optional[int] = None) -> None:
        super().__init__(message)
        self.earliest = earliest
        self.latest_end = latest_end
        self.occurrence = occurrence   # of a recurring lease, from 1

    def details(self) -> dict:
        """What a 409 for it carries besides the message."""
        found = {}
        if self.occurrence is not None:
            found['occurrence'] = self.occurrence
        if self.earliest is not None:
            found['earliest_start'] = self.earliest.isoformat() + 'Z'
        if self.latest_end is not None:
            found['latest_end'] = self.latest_end.isoformat() + 'Z'
        return found


class LedgerBusy(Exception):
    pass


class Plan(NamedTuple):
    """Where a plan puts each reservation ({reservation id: [(node,
    resources)]}), and the nodes' timelines with it.
    """
    placed: dict
    timelines: dict


def host_properties(host) -> dict:
    """What hypervisor_properties of a host reservation are matched on."""
    return {'vcpus': host.vcpus, 'memory_mb': host.memory_mb,
            'local_gb': host.local_gb,
            'hypervisor_type': host.hypervisor_type,
            'hypervisor_version': host.hypervisor_version,
            'hypervisor_hostname': host.hypervisor_hostname,
            'service_name': host.service_name}


class Planner:

    def __init__(self, ledger: ledger_mod.Ledger, placement_client,
                 clock: Callable[[], float],
                 in_flight: Optional[Callable] = None,
                 view_age: Optional[float] = None) -> None:
        self.ledger = ledger
        self.client = placement_client
        self.clock = clock
        # The servers Nova is scheduling (build requests made since a time).
        self.in_flight = in_flight or (
            lambda since: db_builds.in_flight(self.ctx, since))
        # How old the schedulers' ledger may be (`ledger_max_age`).
        self.view_age = view_age
        self.ctx = db_api.Context()
        self.nodes = placement.HostView(self._leased)
        # (mark, {node: host row}): `_enrolled`.
        self._hosts: Optional[tuple] = None

    def _leased(self, uuids: Iterable[str]) -> set:
        """Those of the servers that hold a slot of the ledger (servers of
        leases, which the ledger counts over their lease), as the filter
        tells them apart.
        """
        bound = self.ledger.view.bound
        return {uuid for uuid in uuids if uuid in bound}

    def _evictable(self, start: float) -> Optional[Callable]:
        """What leaves the shared pool for a lease starting at `start`:
        the preemptible servers, if the engine has time to move them
        (`preempt_margin`); None: nothing does.
        """
        if start < self.clock() + CONF.reservation.preempt_margin * 60:
            return None
        return lambda uuids: db_preemptibles.uuids(self.ctx, uuids)

    def _enrolled(self) -> dict:
        """{node: host row} of the enrolled hosts, read again only when a
        host was enrolled, changed or removed since the last read.
        """
        mark = db_hosts.mark(self.ctx)
        known = self._hosts
        if known is None or known[0] != mark:
            known = self._hosts = (mark, {
                h.hypervisor_hostname: h for h in db_hosts.get_all(self.ctx)})
        return known[1]

    # ------------------------------------------------------------ plans

    def _pools(self, unusable: Iterable[str] = (),
               fresh: bool = False, start: Optional[float] = None) -> tuple:
        """(shared pool nodes, reservable nodes with their host rows),
        without the `unusable` nodes (`fresh`: Placement read anew), for
        leases that start at `start` or later (None: now).
        """
        enrolled = self._enrolled()
        unusable = set(unusable)
        evictable = None if start is None else self._evictable(start)
        nodes = [n for n in self.nodes.hosts(self.client, fresh, evictable)
                 if n.node not in unusable]
        shared = [n for n in nodes if n.node not in enrolled]
        reservable = [(n, enrolled[n.node]) for n in nodes
                      if n.node in enrolled and enrolled[n.node].reservable]
        return shared, reservable

    def _place_one(self, req: ReservationRequest, pools, timelines, start,
                   end) -> Optional[list]:
        """[(node, slot resources)] for one reservation, or None."""
        shared, reservable = pools
        if req.resource_type == resource_types.HOST:
            hyp = properties.parse(req.hypervisor_properties)
            res = properties.parse(req.resource_properties)
            hosts = [n for n, row in reservable
                     if hyp(host_properties(row)) and
                     res(json.loads(row.extra_capabilities or '{}'))]
            nodes = capacity.plan_hosts(hosts, timelines, start, end,
                                        req.min_count, req.count)
            by_node = {h.node: h for h in hosts}
            return nodes and [(n, by_node[n].capacity) for n in nodes]
        nodes = capacity.plan(shared, timelines, req.need, req.count, start,
                              end, affinity=req.affinity)
        return nodes and [(n, req.need) for n in nodes]

    def plan(self, requests: Iterable[ReservationRequest], start: float,
             end: float, moved: Iterable = (), dropped: Iterable = (),
             pools: Optional[tuple] = None) -> Plan:
        """A Plan, or NoCapacity.

        `moved`: slots (capacity.Slot) of a lease being changed; they
        are checked at [start, end) instead of where they are now.
        `dropped`: slots that the plan replaces, as if free.  `pools`:
        `_pools` for `start`, if read already.  A plan that fails on the
        cached view of the nodes is made again on a fresh one before it is
        refused: servers deleted since free room.
        """
        requests, moved, dropped = list(requests), list(moved), list(dropped)
        try:
            return self._plan(requests, start, end, moved, False, dropped,
                              pools)
        except NoCapacity:
            return self._plan(requests, start, end, moved, True, dropped)

    def _plan(self, requests, start, end, moved, fresh, dropped=(),
              pools=None) -> Plan:
        moved = list(moved)
        excluded = {s.id for s in moved} | {s.id for s in dropped}
        timelines = {n: tl.copy(excluded) if excluded else tl
                     for n, tl in self.ledger.timelines.items()}
        if pools is None:
            pools = self._pools(fresh=fresh, start=start)
        if moved:
            self._check_moved(moved, pools, timelines, start, end)
        placed = {}
        fake_id = -1
        for slot in moved:
            fake_id = self._overlay(timelines, slot.reservation_id,
                                    [(slot.node, slot.resources)], start,
                                    end, fake_id)
        for req in requests:
            slots = self._place_one(req, pools, timelines, start, end)
            if not slots:
                raise self._no_capacity(req, pools, timelines, start, end)
            placed[req.id] = slots
            # Later reservations of the lease see this one's slots.
            fake_id = self._overlay(timelines, req.id, slots, start, end,
                                    fake_id)
        return Plan(placed, timelines)

    @staticmethod
    def _overlay(timelines, rid, slots, start, end, fake_id) -> int:
        for node, res in slots:
            tl = timelines[node] = (timelines[node].copy()
                                    if node in timelines
                                    else capacity.Timeline())
            tl.add(capacity.Slot(fake_id, rid, node, start, end, res))
            fake_id -= 1
        return fake_id

    @staticmethod
    def _check_moved(moved, pools, timelines, start, end) -> None:
        """A changed lease keeps its nodes: they must hold it then."""
        shared, reservable = pools
        hosts = {h.node: h for h in shared}
        hosts.update({h.node: h for h, _ in reservable})
        need_by_node = {}
        for s in moved:
            need_by_node[s.node] = need_by_node.get(
                s.node, capacity.ZERO) + s.resources
        for node, need in sorted(need_by_node.items()):
            host = hosts.get(node)
            if host is None or not capacity.fits(
                    host, timelines.get(node), need, start, end):
                raise NoCapacity(
                    'Node %s can not hold the lease from %s to %s UTC: other '
                    'leases or servers use it then'
                    % (node, _text(start), _text(end)))

    def _no_capacity(self, req, pools, timelines, start, end) -> NoCapacity:
        # From the asked start, as far as search_horizon, and never past
        # what max_advance allows.
        horizon = min(start + CONF.reservation.search_horizon, LAST_DAY)
        if CONF.reservation.max_advance:
            horizon = min(horizon,
                          self.clock() + CONF.reservation.max_advance)
        if req.resource_type != resource_types.HOST and (
                req.count == 1 or req.affinity is True):
            # On one node: that node's own search (the same answer).
            earliest = capacity.earliest_fit(
                pools[0], timelines, req.need.scaled(req.count), start,
                end - start, horizon)
        else:
            earliest = capacity.earliest_start(
                timelines, start, end - start, horizon,
                lambda s, e: self._place_one(req, pools, timelines, s, e))
        message = ('Not enough capacity for %s from %s to %s UTC'
                   % (req.describe(), _text(start), _text(end)))
        when = None
        if earliest is not None:
            when = ledger_mod.from_epoch(earliest).replace(microsecond=0)
            message += '; the earliest start that fits is %s UTC' % when
        else:
            message += '; no start up to %s UTC fits' % _text(horizon)
        return NoCapacity(message, when)

    def windows(self, req: ReservationRequest, after: datetime.datetime,
                before: datetime.datetime, duration: float,
                limit: int) -> list:
        """The start windows in [after, before] of a lease of `duration`
        seconds holding `req`: [(earliest, latest)], at most `limit`, read
        only.  The first earliest is the start a 409 gives as the
        earliest that fits.
        """
        self.ledger.refresh()
        pools = self._pools(start=ledger_mod.to_epoch(after))
        timelines = self.ledger.timelines
        found = capacity.windows(
            timelines, ledger_mod.to_epoch(after),
            ledger_mod.to_epoch(before), duration,
            lambda s, e: self._place_one(req, pools, timelines, s, e), limit)
        return [(ledger_mod.from_epoch(a), ledger_mod.from_epoch(b))
                for a, b in found]

    def calendar(self, after: datetime.datetime,
                 before: datetime.datetime, needs: dict) -> dict:
        """The ledger over [after, before), read only: {'nodes': [(Host,
        reservable, [Slot])], 'reservations': {id: ReservationInfo},
        'free': {name: [(t, count)]}} with `needs` {name: Resources}
        counted on the shared pool (times in epoch seconds).
        """
        self.ledger.refresh()
        view = self.ledger.view
        start, end = ledger_mod.to_epoch(after), ledger_mod.to_epoch(before)
        shared, reservable = self._pools(start=start)
        timelines = view.timelines
        nodes = [(h, False) for h in shared] + [
            (h, True) for h, _ in reservable]
        return {
            'nodes': [(h, is_host, timelines[h.node].meeting(start, end)
                       if h.node in timelines else [])
                      for h, is_host in sorted(nodes,
                                               key=lambda n: n[0].node)],
            'reservations': view.reservations,
            'free': {name: capacity.free_counts(shared, timelines, need,
                                                start, end)
                     for name, need in needs.items()}}

    def yielding(self, uuids: Iterable[str]) -> tuple:
        """The shared pool as the preemptible servers `uuids` see it, read
        anew: ({node: capacity.Host} whose base leaves them out, {node:
        {uuid: capacity.Resources}} of them, the ledger's timelines).
        """
        uuids = set(uuids)
        self.ledger.refresh()
        timelines = self.ledger.timelines
        shared, _ = self._pools(fresh=True, start=capacity.FOREVER)
        return ({h.node: h for h in shared}, self.nodes.uses(uuids),
                timelines)

    # ----------------------------------------------------------- writes

    def create(self, lease: dict, requests: list,
               events: list) -> None:
        """Plan and write a lease (`lease`: the row's values).

        The lease is written CREATING, then takes its own status once its
        shared-pool nodes are known to hold it after the boots that Nova
        was scheduling meanwhile (`_taken_meanwhile`).
        """
        self.create_series([(lease, requests, events)])

    def create_series(self, occurrences: list) -> None:
        """Plan and write the occurrences of a lease (`occurrences`: [(lease
        row values, requests, events)], whose intervals do not overlap),
        all or none: NoCapacity names the first that does not fit.
        """
        def plans():
            # The nodes read once for the series (twice if some occurrences
            # start too soon for the preemptible servers to leave).
            found, pools = [], {}
            for number, (lease, requests, _) in enumerate(occurrences, 1):
                start, end = _interval(lease)
                soon = self._evictable(start) is None
                if soon not in pools:
                    pools[soon] = self._pools(start=start)
                try:
                    found.append(self.plan(requests, start, end,
                                           pools=pools[soon]))
                except NoCapacity as e:
                    if len(occurrences) == 1:
                        raise
                    raise NoCapacity('occurrence %d (from %s UTC) does not '
                                     'fit: %s' % (number, lease['start_at'],
                                                  e), e.earliest,
                                     occurrence=number) from e
            return found

        def write(gen, found):
            db_leases.create_many(self.ctx, gen, [(
                dict(lease, status=status.CREATING), [
                    (self._reservation_row(lease, req),
                     self._slot_rows(lease, plan.placed[req.id]))
                    for req in requests], events)
                for (lease, requests, events), plan in zip(occurrences,
                                                           found)])
        found = self._written(plans, write)
        ids = [lease['id'] for lease, _, _ in occurrences]
        self._settled(
            [(lease, requests, plan.placed) for (lease, requests, _), plan
             in zip(occurrences, found)],
            lambda: [db_leases.discard(self.ctx, i) for i in ids])
        for lease, _, _ in occurrences:
            if lease['status'] != status.CREATING:
                db_leases.set_status(self.ctx, [lease['id']],
                                     lease['status'],
                                     only_from=(status.CREATING,))

    def _written(self, plans: Callable, write: Callable):
        """What `plans()` found, once `write(generation, found)` wrote it,
        planned again while others wrote the same nodes (LedgerBusy after
        `LEDGER_RETRIES`); NoCapacity.
        """
        for _ in range(LEDGER_RETRIES):
            gen = self.ledger.refresh()
            found = plans()
            try:
                write(gen, found)
                return found
            except db_ledger.LedgerConflict:
                continue   # Someone else wrote the ledger: plan again.
        raise LedgerBusy()

    def _settled(self, written: list, undo: Callable) -> None:
        """NoCapacity, once `undo()` took the new slots back, if an ordinary
        boot took a node of them meanwhile (`written`: [(lease, requests,
        placed)] of what was written, over the leases' intervals).
        """
        timelines = dict(self.ledger.timelines)
        pieces, fake_id = [], -1
        for lease, requests, placed in written:
            start, end = _interval(lease)
            for req in requests:
                if req.resource_type == resource_types.HOST:
                    continue
                pieces += [(node, start, end) for node, _ in placed[req.id]]
                fake_id = self._overlay(timelines, req.id, placed[req.id],
                                        start, end, fake_id)
        taken = self._taken_meanwhile(pieces, timelines)
        if taken:
            undo()
            lease, requests, _ = written[0]
            start, end = _interval(lease)
            raise NoCapacity(
                'Not enough capacity for %s from %s to %s UTC: a server '
                'booted meanwhile took the last of node %s; try again'
                % ('; '.join(r.describe() for r in requests), _text(start),
                   _text(end), taken))

    # ---------------------------------------------------- waiting leases

    def create_or_wait(self, lease: dict, requests: list) -> bool:
        """Create a lease, or, if it waits for room (``if_busy: wait``) and
        none is found, write it waiting (no slot, no event, WAITING unless
        CREATING); whether it waits.  A lease with a flexible start is
        placed at the earliest start that fits up to its `start_before`.
        """
        if lease.get('if_busy') != 'wait':
            self.create(lease, requests, schedule.lease_events(
                lease, db_api.utcnow()))
            return False
        try:
            lease.update(self._moved(lease, requests, self.clock()))
            self.create(lease, requests, schedule.lease_events(
                lease, db_api.utcnow()))
            return False
        except NoCapacity as e:
            waiting = dict(
                lease, status_reason='waiting for room: %s' % e,
                next_try_at=ledger_mod.from_epoch(
                    self.clock() + retry_interval(lease)))
            if lease['status'] != status.CREATING:
                waiting['status'] = status.WAITING
            db_leases.create(self.ctx, None, waiting, [
                (self._reservation_row(lease, req), []) for req in requests],
                [])
            return True

    def place(self, lease, requests: list, now: float,
              also: Optional[Callable] = None) -> None:
        """Place a waiting lease (`lease`: its row) where it may start as
        of `now`: its slots, dates and events written, its servers each
        holding a slot, and PENDING (with `also(store)` in the same
        transaction); NoCapacity.
        """
        moved = self._moved(lease, requests, now)
        plan = self._written(
            lambda: self.plan(requests, *_interval(moved)),
            lambda gen, plan: db_leases.hold_waiting(
                self.ctx, gen, lease.id, {
                    req.id: self._slot_rows(moved, plan.placed[req.id])
                    for req in requests}))
        self._settled([(moved, requests, plan.placed)],
                      lambda: db_leases.unhold_waiting(self.ctx, lease.id))
        due = dict(moved, before_end_minutes=lease.before_end_minutes)
        if not db_leases.placed(self.ctx, lease.id, moved, [
                r.id for r in requests
                if r.resource_type == resource_types.SERVER],
                schedule.lease_events(due, ledger_mod.from_epoch(now)),
                also):
            db_leases.unhold_waiting(self.ctx, lease.id)   # deleted

    def _moved(self, lease, requests: list, now: float) -> dict:
        """{start_at, end_at} where a waiting lease may start as of `now`
        (its own start; now for a start of now; with a flexible start, the
        earliest that fits up to its start_before); NoCapacity.
        """
        get = schedule.getter(lease)
        start = ledger_mod.to_epoch(get('start_at'))
        length = ledger_mod.to_epoch(get('end_at')) - start
        latest = (ledger_mod.to_epoch(get('start_before'))
                  if get('start_before') else None)
        if get('start_now') or get('flexible_start'):
            start = max(start, now)
        if latest is not None and start > latest:
            raise NoCapacity('the latest start asked for (start_before %s '
                             'UTC) has passed' % _text(latest))
        if start < now:
            raise NoCapacity('its start (%s UTC) has passed'
                             % _text(start))
        if get('flexible_start'):
            try:
                self.ledger.refresh()
                self.plan(requests, start, start + length)
            except NoCapacity as e:
                if e.earliest is None or (
                        latest is not None and
                        ledger_mod.to_epoch(e.earliest) > latest):
                    raise
                start = ledger_mod.to_epoch(e.earliest)
        return dict(start_at=ledger_mod.from_epoch(start),
                    end_at=ledger_mod.from_epoch(start + length))

    @staticmethod
    def request_of(res) -> ReservationRequest:
        """The request a reservation row was made from."""
        host = res.resource_type == resource_types.HOST
        return ReservationRequest(
            resource_type=res.resource_type,
            count=res.max_count if host else res.amount,
            min_count=res.min_count,
            need=None if host else capacity.Resources(
                res.vcpus, res.memory_mb, res.disk_gb),
            affinity=res.affinity, flavor_id=res.flavor_id,
            hypervisor_properties=res.hypervisor_properties or '',
            resource_properties=res.resource_properties or '',
            before_end=res.before_end,
            server_group_id=res.server_group_id,
            private_flavor_id=res.private_flavor_id, id=res.id)

    def _taken_meanwhile(self, pieces: Iterable[tuple],
                         timelines: dict) -> Optional[str]:
        """A node of `pieces` ((node, start, end): shared-pool capacity a
        lease was just given) that an ordinary boot took meanwhile, or None;
        `timelines`: the nodes' timelines as the plan that gave it left
        them (whoever wrote the nodes since planned with it, and checks
        itself).

        An ordinary boot is kept off promised capacity by the scheduler's
        filter, which reads a copy of the ledger at most `ledger_max_age`
        old; one filtered on a copy older than this write did not see it.
        Such a boot still has its build request now (`db.builds`), or its
        claim is in Placement: once those boots have claimed, Placement
        tells whether the nodes still hold the lease.  (Whole hosts take no
        ordinary boot: their pieces are not asked about.)
        """
        pieces = sorted(set(pieces))
        if not pieces:
            return None
        # A scheduler may filter on a ledger as old as `ledger_max_age`:
        # the boots filtered without this write have build requests by
        # then (or their claims).
        view_age = self.view_age
        if view_age is None:
            view_age = CONF.reservation.ledger_max_age
        time.sleep(view_age)
        timeout = CONF.reservation.boot_settle_timeout
        since = db_api.utcnow() - datetime.timedelta(seconds=timeout)
        waiting = self.in_flight(since)
        deadline = time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            time.sleep(0.05)
            waiting &= self.in_flight(since)
        hosts = self.nodes.hosts_of(
            self.client, {n for n, _, _ in pieces},
            self._evictable(min(s for _, s, _ in pieces)))
        for node, start, end in pieces:
            if node not in hosts or not capacity.fits(
                    hosts[node], timelines.get(node),
                    capacity.ZERO, start, end):
                return node
        return None

    def _guarded(self, gen: int, added: list, timelines: dict,
                 write: Callable, taken_message: str) -> None:
        """Write a change that adds shared-pool capacity to a lease
        (`added`: (reservation id, slot columns) of what it adds, on the
        plan's `timelines`) so that no ordinary boot in flight takes it
        too: the added slots are held first (on generation `gen`), then
        checked (`_taken_meanwhile`), then `write(hold)` makes the change
        in the transaction that drops them.  NoCapacity (`taken_message`
        % node) if a boot took a node; LedgerConflict if the plan was
        stale.  Nothing is released before the change is written, so no
        other lease can take what a refused change gives back.
        """
        hold_id = db_ledger.hold_id(self.clock())
        db_ledger.hold(self.ctx, gen, hold_id, added)
        try:
            taken = self._taken_meanwhile(
                [(values['node'], ledger_mod.to_epoch(values['start_at']),
                  ledger_mod.to_epoch(values['end_at']))
                 for _, values in added], timelines)
            if taken:
                raise NoCapacity(taken_message % taken)
            write((hold_id, len(added)))
        except Exception:
            db_ledger.drop_hold(self.ctx, hold_id)
            raise

    def _shared_pool(self, reservation_id: str) -> bool:
        info = self.ledger.view.reservation(reservation_id)
        return info is not None and info.resource_type != resource_types.HOST

    def _added(self, own: list, placed: dict, growth: list, start: float,
               end: float) -> list:
        """What a change gives a lease on the shared pool that it did not
        have: its slots' time outside their current interval, and its new
        slots; (reservation id, slot columns) pairs.
        """
        added = []
        for slot in own:
            if not self._shared_pool(slot.reservation_id):
                continue
            for a, b in ((start, min(end, slot.start)),
                         (max(start, slot.end), end)):
                if a < b:
                    added.append((slot.reservation_id, _slot_row_of(
                        slot.node, slot.resources, a, b)))
        for req in growth:
            if req.resource_type != resource_types.HOST:
                added.extend((req.id, _slot_row_of(node, res, start, end))
                             for node, res in placed.get(req.id, ()))
        return added

    def change(self, lease, version: int, values: dict,
               growth: Iterable[tuple] = (), replaced: Iterable[str] = (),
               also: Optional[Callable] = None) -> None:
        """Rename, move, extend, shorten, grow or reshape a lease, all or
        nothing.

        The lease keeps its nodes; `growth` holds ``(request, sizes)``
        pairs: extra slots (the request's count, maybe none) for some of
        its reservations (same ids), and their new sizes as columns.  A
        reservation in `replaced` is placed again whole: its request is
        its new shape and count, and its slots go.
        Refused with NoCapacity, or db_leases.LeaseChanged if the lease
        changed since `version`.  What it adds on the shared pool is
        guarded against the boots in flight (`_guarded`).  `also(store)`:
        more to write in the change's transaction.
        """
        replaced = set(replaced)
        sizes = {req.id: columns for req, columns in growth}
        growth = [req for req, _ in growth if req.count]
        start_at = values.get('start_at', lease.start_at)
        end_at = values.get('end_at', lease.end_at)
        start = ledger_mod.to_epoch(start_at)
        end = ledger_mod.to_epoch(end_at)
        due = schedule.due_times(dict(
            start_at=start_at, end_at=end_at, before_end_minutes=values.get(
                'before_end_minutes', lease.before_end_minutes)))
        message = ('Not enough capacity to change lease %s to %s - %s UTC: '
                   'a server booted meanwhile took the last of node %%s; '
                   'try again' % (lease.id, _text(start), _text(end)))
        for _ in range(LEDGER_RETRIES):
            gen = self.ledger.refresh()
            own, dropped = [], []
            for r in db_leases.reservations(self.ctx, lease.id):
                (dropped if r.id in replaced else own).extend(
                    self.ledger.slots(r.id))
            try:
                placed, timelines = self.plan(growth, start, end, moved=own,
                                              dropped=dropped)
            except NoCapacity as e:
                if growth or replaced or start_at != lease.start_at or \
                        end_at <= lease.end_at:
                    raise
                raise self._refused_extension(e, own, lease.end_at)
            slots = {rid: (columns, self._slot_rows(
                lease, placed.get(rid, []), start_at, end_at))
                for rid, columns in sizes.items()}
            added = self._added(own, placed, growth, start, end)
            try:
                if not added:
                    db_leases.change(self.ctx, gen, lease.id, version,
                                     values, slots, due, replaced=replaced,
                                     also=also)
                else:
                    def write(hold):
                        db_leases.change(self.ctx, None, lease.id, version,
                                         values, slots, due, hold=hold,
                                         replaced=replaced, also=also)
                    self._guarded(gen, added, timelines, write, message)
                return
            except db_ledger.LedgerConflict:
                continue
        raise LedgerBusy()

    def _refused_extension(self, refused: NoCapacity, own: list,
                           end_at: datetime.datetime) -> NoCapacity:
        """A refused extension, with the latest end to which the lease's
        slots (`own`, on their nodes until `end_at`) can all run.
        """
        end = ledger_mod.to_epoch(end_at)
        shared, reservable = self._pools(fresh=True, start=end)
        hosts = {h.node: h for h in shared}
        hosts.update({h.node: h for h, _ in reservable})
        need: dict = {}
        for s in own:
            need[s.node] = need.get(s.node, capacity.ZERO) + s.resources
        excluded = {s.id for s in own}
        latest = capacity.FOREVER
        for node, resources in need.items():
            if node not in hosts:
                return refused
            timeline = self.ledger.timelines.get(node)
            latest = min(latest, capacity.held_until(
                hosts[node], timeline and timeline.copy(excluded),
                [resources], end)[0])
        if not end < latest < capacity.FOREVER:
            return refused
        when = ledger_mod.from_epoch(latest).replace(microsecond=0)
        return NoCapacity('%s; the latest end that fits is %s UTC'
                          % (refused, when), latest_end=when)

    def relocate(self, failed_nodes: Iterable[str], now: float) -> tuple:
        """Move the future slots off nodes whose compute service is down or
        disabled, to nodes that fit.

        Returns (moved slot count, leases that could not be moved, which
        are marked degraded).
        """
        failed = set(failed_nodes)
        for _ in range(LEDGER_RETRIES):
            gen = self.ledger.refresh()
            stranded = [s for s in self.ledger.by_id.values()
                        if s.node in failed and s.start > now]
            if not stranded:
                return 0, []
            pools = self._pools(unusable=failed)
            excluded = {s.id for s in stranded}
            timelines = {n: tl.copy(excluded) if excluded else tl
                         for n, tl in self.ledger.timelines.items()
                         if n not in failed}
            moves, degraded = {}, set()
            fake_id = -1
            by_reservation: dict = {}
            for slot in sorted(stranded, key=lambda s: (s.start, s.id)):
                by_reservation.setdefault(slot.reservation_id, []).append(
                    slot)
            for rid, slots in by_reservation.items():
                res = db_leases.reservation(self.ctx, rid)
                if res is None or res.deleted:
                    continue
                placed = self._replace(res, slots, pools, timelines,
                                       excluded)
                if not placed:
                    degraded.add(res.lease_id)
                    continue
                for slot, (node, resources) in zip(slots, placed):
                    moves[slot.id] = (node, resources)
                fake_id = self._overlay(timelines, rid, placed,
                                        slots[0].start, slots[0].end,
                                        fake_id)
            added = [(slot.reservation_id,
                      _slot_row_of(*moves[slot.id], slot.start, slot.end))
                     for slot in stranded if slot.id in moves and
                     self._shared_pool(slot.reservation_id)]
            try:
                if not added:
                    _move(self.ctx, gen, moves, degraded)
                else:
                    self._guarded(gen, added, timelines, lambda hold: _move(
                        self.ctx, None, moves, degraded, hold),
                        'a server booted meanwhile took the last of node %s')
                return len(moves), sorted(degraded)
            except (db_ledger.LedgerConflict, NoCapacity):
                continue   # The next plan sees the boot's claim.
        raise LedgerBusy()

    def _replace(self, res, slots: list, pools, timelines,
                 moving: set) -> Optional[list]:
        """New places for some `slots` of reservation `res`, as its request
        asked: the host requirements, and the affinity with the slots that
        stay.
        """
        req = ReservationRequest(
            resource_type=res.resource_type, count=len(slots),
            min_count=len(slots), need=slots[0].resources,
            affinity=res.affinity,
            hypervisor_properties=res.hypervisor_properties or '',
            resource_properties=res.resource_properties or '')
        staying = {s.node for s in self.ledger.slots(res.id)
                   if s.id not in moving}
        shared, reservable = pools
        if res.affinity is True and staying:
            shared = [h for h in shared if h.node in staying]
        elif res.affinity is False:
            shared = [h for h in shared if h.node not in staying]
        return self._place_one(req, (shared, reservable), timelines,
                               slots[0].start, slots[0].end)

    def fits_for_good(self, nodes: Iterable[str],
                      need: capacity.Resources) -> bool:
        """Whether each of `nodes` can take `need` from now on for good
        (an ordinary server) without what the ledger promised to leases.
        """
        self.ledger.refresh()
        now = self.clock()
        for fresh in (False, True):
            hosts = {h.node: h for h in self.nodes.hosts(self.client, fresh)}
            if all(n in hosts and capacity.fits(
                    hosts[n], self.ledger.timelines.get(n), need, now,
                    capacity.FOREVER) for n in nodes):
                return True
        return False

    @staticmethod
    def _reservation_row(lease, req: ReservationRequest) -> dict:
        get = schedule.getter(lease)
        need = req.need or capacity.ZERO
        return dict(
            id=req.id, lease_id=get('id'), project_id=get('project_id'),
            resource_type=req.resource_type, flavor_id=req.flavor_id,
            vcpus=need.vcpus, memory_mb=need.memory_mb,
            disk_gb=need.disk_gb, amount=req.count, status='pending',
            min_count=req.min_count,
            max_count=(req.count if req.resource_type == resource_types.HOST
                       else None),
            affinity=req.affinity,
            hypervisor_properties=req.hypervisor_properties or None,
            resource_properties=req.resource_properties or None,
            before_end=req.before_end, server_group_id=req.server_group_id,
            private_flavor_id=req.private_flavor_id,
            created_at=db_api.utcnow())

    @staticmethod
    def _slot_rows(lease, slots, start_at=None, end_at=None) -> list:
        if isinstance(lease, dict):
            start_at = start_at or lease['start_at']
            end_at = end_at or lease['end_at']
        return [_slot_row(node, res, start_at, end_at)
                for node, res in slots]


@db_api.writer
def _move(ctx, planned: Optional[int], moves: dict, degraded: Iterable[str],
          hold: Optional[tuple] = None) -> None:
    """Slots onto other nodes, and the leases that lost some degraded;
    `hold` as for `db_leases.change`.
    """
    db_ledger.spend_hold(ctx, hold)
    db_ledger.move_slots(ctx, planned, moves)
    db_leases.mark_degraded(ctx, degraded)


_SHARED: dict = {}
_SHARED_LOCK = threading.Lock()


def shared(placement_client=None) -> Planner:
    """The process's planner, on the real clock: nova-api's hook and lease
    API use one, so that the process holds one copy of the ledger and one
    view of the nodes.
    """
    with _SHARED_LOCK:
        if 'planner' not in _SHARED:
            if placement_client is None:
                placement_client = report.report_client_singleton()
            _SHARED['planner'] = Planner(ledger_mod.Ledger(),
                                         placement_client, time.time)
        return _SHARED['planner']


def _slot_row(node: str, res: capacity.Resources,
              start_at: datetime.datetime,
              end_at: datetime.datetime) -> dict:
    """A slot's columns, as the store writes them."""
    return dict(node=node, vcpus=res.vcpus, memory_mb=res.memory_mb,
                disk_gb=res.disk_gb, start_at=start_at, end_at=end_at)


def _slot_row_of(node: str, res: capacity.Resources, start: float,
                 end: float) -> dict:
    """`_slot_row` over [start, end) in seconds since the epoch."""
    return _slot_row(node, res, ledger_mod.from_epoch(start),
                     ledger_mod.from_epoch(end))


def series(lease: dict, requests: list, intervals: list) -> list:
    """The occurrences of a recurring lease (`intervals`: [(start, end)]
    of each) for `Planner.create_series`: [(row values, requests,
    events)].  The first keeps the lease's id, which names the series,
    its requests and its client token.
    """
    found = []
    for number, (start, end) in enumerate(intervals):
        values = dict(lease, start_at=start, end_at=end,
                      series_id=lease['id'], occurrence=number)
        own = requests
        if number:
            values.update(id=uuidutils.generate_uuid(), client_token=None,
                          request_digest=None)
            own = [dataclasses.replace(r, id=uuidutils.generate_uuid())
                   for r in requests]
        found.append((values, own, schedule.lease_events(
            values, db_api.utcnow())))
    return found


def _interval(lease: dict) -> tuple:
    """(start, end) of a lease's row values, in seconds."""
    return (ledger_mod.to_epoch(lease['start_at']),
            ledger_mod.to_epoch(lease['end_at']))


def retry_interval(lease) -> float:
    """Seconds between two tries of a waiting lease."""
    get = schedule.getter(lease)
    minutes = get('retry_interval')
    return minutes * 60 if minutes else CONF.reservation.wait_interval


def _text(t: float) -> str:
    return str(ledger_mod.from_epoch(t).replace(microsecond=0))
