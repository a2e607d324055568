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

"""Plans: where a lease's reservations fit on the ledger, read only.

A lease holds one or more reservations; each becomes slots (ledger
allocations) on nodes.  Reservations on the shared pool (servers,
flavor:instance, virtual:instance) take slots of their size on nodes that
are not reservable hosts; host reservations take whole reservable hosts.
The capacity math is `nova_reservation.capacity`'s; this module reads the
nodes (Placement) and the ledger for it.  The writes are `lease.write`'s.
"""

import datetime
from typing import Callable, Iterable, NamedTuple, Optional

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.capacity.epoch import when_text
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.clients import placement
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import builds as db_builds
from nova_reservation.db import floatingips as db_floatingips
from nova_reservation.db import hosts as db_hosts
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation.exception import NoCapacity
from nova_reservation.lease import floatingips
from nova_reservation.lease import kinds
from nova_reservation.lease import properties
from nova_reservation.lease.request import ReservationRequest
from nova_reservation.lease import schedule
from nova_reservation.ledger import memory as ledger_mod

CONF = conf.CONF
# The last day a date can name (year 9999): searches stop there.
LAST_DAY = epoch.to_epoch(datetime.datetime(9999, 12, 31))


class Plan(NamedTuple):
    """Where a plan puts each reservation ({reservation id: [(node,
    resources)]}), and the nodes' timelines with it.
    """
    placed: dict
    timelines: dict


def within(pools: tuple, nodes: Optional[frozenset]) -> tuple:
    """`pools` (as `Planner.pools`) with only `nodes` (None: all)."""
    if nodes is None:
        return pools
    shared, reservable = pools
    return ([h for h in shared if h.node in nodes],
            [(h, row) for h, row in reservable if h.node in nodes])


def pools_for(pools: tuple, req: ReservationRequest) -> tuple:
    """`pools` with only the nodes that may hold `req`'s slots: its
    `nodes`, and in the shared pool those that Placement would give one
    of its servers, room aside (`capacity.may_hold`), and whose traits
    meet its resource_properties.
    """
    shared, reservable = within(pools, req.nodes)
    if kinds.of(req.resource_type).shared_pool:
        need = capacity.Need(req.need, req.traits, req.extras)
        shared = [h for h in shared if capacity.may_hold(h, need)]
        if req.resource_properties:
            wanted = properties.parse(req.resource_properties)
            shared = [h for h in shared if wanted(properties.node(h))]
    return shared, reservable


class Planner:
    """The plans of one nova-api process (or engine), on its copy of the
    ledger and its view of the nodes.
    """

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
        # (mark, [address row]): `_registered`.
        self._addresses: Optional[tuple] = None

    def _leased(self, uuids: Iterable[str]) -> set:
        """Those of the servers that hold a slot of the ledger (servers of
        leases, which the ledger counts over their lease), as the filter
        tells them apart.
        """
        bound = self.ledger.view.bound
        return {uuid for uuid in uuids if uuid in bound}

    def evictable(self, start: float) -> Optional[Callable]:
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

    def _registered(self) -> list:
        """The registered floating IP addresses, read again only when one
        was registered or removed since the last read.
        """
        mark = db_floatingips.mark(self.ctx)
        known = self._addresses
        if known is None or known[0] != mark:
            known = self._addresses = (mark, db_floatingips.get_all(
                self.ctx))
        return known[1]

    def addresses(self, network_id: Optional[str] = None) -> tuple:
        """([capacity.Host] of the registered addresses (of `network_id`),
        {address: its node}).
        """
        rows = [r for r in self._registered() if network_id in (
            None, r.floating_network_id) and r.reservable]
        return floatingips.units(rows), {
            r.floating_ip_address: floatingips.node_of(r.id) for r in rows}

    def _all_nodes(self, pools) -> dict:
        """{node: capacity.Host} of `pools` and of every address."""
        shared, reservable = pools
        hosts = {h.node: h for h in shared}
        hosts.update({h.node: h for h, _ in reservable})
        hosts.update({h.node: h for h in self.addresses()[0]})
        return hosts

    def pools(self, unusable: Iterable[str] = (),
              fresh: bool = False, start: Optional[float] = None) -> tuple:
        """(shared pool nodes, reservable nodes with their host rows),
        without the `unusable` nodes (`fresh`: Placement read anew), for
        leases that start at `start` or later (None: now).
        """
        enrolled = self._enrolled()
        unusable = set(unusable)
        evictable = None if start is None else self.evictable(start)
        nodes = [n for n in self.nodes.hosts(self.client, fresh, evictable)
                 if n.node not in unusable]
        shared = [n for n in nodes if n.node not in enrolled]
        reservable = [(n, enrolled[n.node]) for n in nodes
                      if n.node in enrolled and enrolled[n.node].reservable]
        return shared, reservable

    def place_one(self, req: ReservationRequest, pools, timelines, start,
                  end) -> Optional[list]:
        """[(node, slot resources)] for one reservation, or None."""
        return self._place(req, pools_for(pools, req), timelines, start, end)

    def _place(self, req: ReservationRequest, eligible: tuple, timelines,
               start, end) -> Optional[list]:
        """`place_one` on the pools `pools_for` gave for `req`: a search
        asks at many times, the nodes' fitness for `req` is read once.
        """
        return kinds.of(req.resource_type).place(self, req, eligible,
                                                 timelines, start, end)

    def plan(self, requests: Iterable[ReservationRequest], start: float,
             end: float, moved: Iterable = (), dropped: Iterable = (),
             pools: Optional[tuple] = None) -> Plan:
        """A Plan, or NoCapacity.

        `moved`: slots (capacity.Slot) of a lease being changed; they
        are checked at [start, end) instead of where they are now.
        `dropped`: slots that the plan replaces, as if free.  `pools`:
        `pools` for `start`, if read already.  A plan that fails on the
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
            pools = self.pools(fresh=fresh, start=start)
        if moved:
            self._check_moved(moved, pools, timelines, start, end)
        placed = {}
        fake_id = -1
        for slot in moved:
            fake_id = self.overlay(timelines, slot.reservation_id,
                                   [capacity.Placed(slot.node,
                                                    slot.resources,
                                                    slot.extras)],
                                   start, end, fake_id)
        for req in requests:
            slots = self.place_one(req, pools, timelines, start, end)
            if not slots:
                raise self._no_capacity(req, pools, timelines, start, end)
            placed[req.id] = slots
            # Later reservations of the lease see this one's slots.
            fake_id = self.overlay(timelines, req.id, slots, start, end,
                                   fake_id)
        return Plan(placed, timelines)

    @staticmethod
    def overlay(timelines, rid, slots, start, end, fake_id) -> int:
        for node, res, extras in slots:
            tl = timelines[node] = (timelines[node].copy()
                                    if node in timelines
                                    else timeline_mod.Timeline())
            tl.add(capacity.Slot(fake_id, rid, node, start, end, res,
                                 extras=extras))
            fake_id -= 1
        return fake_id

    def _check_moved(self, moved, pools, timelines, start, end) -> None:
        """A changed lease keeps its nodes: they must hold it then."""
        hosts = self._all_nodes(pools)
        need_by_node, extras_by_node = {}, {}
        for s in moved:
            need_by_node[s.node] = need_by_node.get(
                s.node, capacity.ZERO) + s.resources
            extras_by_node[s.node] = capacity.extras_sum(
                extras_by_node.get(s.node, capacity.NO_EXTRAS), s.extras)
        for node, need in sorted(need_by_node.items()):
            host = hosts.get(node)
            if host is None or not capacity.fits(
                    host, timelines.get(node), need, start, end,
                    extras=extras_by_node[node]):
                raise NoCapacity(
                    'Node %s can not hold the lease from %s to %s UTC: other '
                    'leases or servers use it then'
                    % (node, when_text(start), when_text(end)))

    def _no_capacity(self, req, pools, timelines, start, end) -> NoCapacity:
        # From the asked start, as far as search_horizon, and never past
        # what max_advance allows.
        horizon = min(start + CONF.reservation.search_horizon, LAST_DAY)
        if CONF.reservation.max_advance:
            horizon = min(horizon,
                          self.clock() + CONF.reservation.max_advance)
        eligible = pools_for(pools, req)
        shared_pool = kinds.of(req.resource_type).shared_pool
        if shared_pool and (req.count == 1 or req.affinity is True):
            # On one node: that node's own search (the same answer).
            earliest = capacity.earliest_fit(
                eligible[0], timelines, req.need.scaled(req.count), start,
                end - start, horizon,
                capacity.extras_scaled(req.extras, req.count))
        else:
            earliest = capacity.earliest_start(
                timelines, start, end - start, horizon,
                lambda s, e: self._place(req, eligible, timelines, s, e))
        message = ('Not enough capacity for %s from %s to %s UTC'
                   % (req.describe(), when_text(start), when_text(end)))
        when = None
        if earliest is not None:
            when = epoch.from_epoch(earliest).replace(microsecond=0)
            message += '; the earliest start that fits is %s UTC' % when
        else:
            message += '; no start up to %s UTC fits' % when_text(horizon)
        if shared_pool:
            message += capacity.absent(eligible[0], req.extras)
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
        eligible = pools_for(self.pools(start=epoch.to_epoch(after)),
                             req)
        timelines = self.ledger.timelines
        found = capacity.windows(
            timelines, epoch.to_epoch(after),
            epoch.to_epoch(before), duration,
            lambda s, e: self._place(req, eligible, timelines, s, e), limit)
        return [(epoch.from_epoch(a), epoch.from_epoch(b))
                for a, b in found]

    def calendar(self, after: datetime.datetime,
                 before: datetime.datetime, needs: dict) -> dict:
        """The ledger over [after, before), read only: {'nodes': [(Host,
        reservable, [Slot])], 'addresses': [(registered floating IP row,
        [Slot])], 'reservations': {id: ReservationInfo},
        'free': {name: [(t, count)]}} with `needs` {name: capacity.Need}
        counted on the nodes of the shared pool that may hold them (times
        in epoch seconds).
        """
        self.ledger.refresh()
        view = self.ledger.view
        start, end = epoch.to_epoch(after), epoch.to_epoch(before)
        shared, reservable = self.pools(start=start)
        timelines = view.timelines
        nodes = [(h, False) for h in shared] + [
            (h, True) for h, _ in reservable]
        return {
            'nodes': [(h, is_host, timelines[h.node].meeting(start, end)
                       if h.node in timelines else [])
                      for h, is_host in sorted(nodes,
                                               key=lambda n: n[0].node)],
            'addresses': [
                (r, timelines[n].meeting(start, end) if n in timelines
                 else []) for r, n in (
                    (r, floatingips.node_of(r.id)) for r in sorted(
                        self._registered(), key=lambda r: (
                            r.floating_network_id,
                            floatingips.sort_key(r.floating_ip_address))))],
            'reservations': view.reservations,
            'free': {name: capacity.free_counts(
                [h for h in shared if capacity.may_hold(h, need)],
                timelines, need.resources, start, end, need.extras)
                for name, need in needs.items()}}

    def yielding(self, uuids: Iterable[str]) -> tuple:
        """The shared pool as the preemptible servers `uuids` see it, read
        anew: ({node: capacity.Host} whose base leaves them out, {node:
        {uuid: capacity.Resources}} of them, the ledger's timelines).
        """
        uuids = set(uuids)
        self.ledger.refresh()
        timelines = self.ledger.timelines
        shared, _ = self.pools(fresh=True, start=capacity.FOREVER)
        return ({h.node: h for h in shared}, self.nodes.uses(uuids),
                timelines)

    def moved(self, lease, requests: list, now: float) -> dict:
        """{start_at, end_at} where a waiting lease may start as of `now`
        (its own start; now for a start of now; with a flexible start, the
        earliest that fits up to its start_before); NoCapacity.
        """
        get = schedule.getter(lease)
        start = epoch.to_epoch(get('start_at'))
        length = epoch.to_epoch(get('end_at')) - start
        latest = (epoch.to_epoch(get('start_before'))
                  if get('start_before') else None)
        if get('start_now') or get('flexible_start'):
            start = max(start, now)
        if latest is not None and start > latest:
            raise NoCapacity('the latest start asked for (start_before %s '
                             'UTC) has passed' % when_text(latest))
        if start < now:
            raise NoCapacity('its start (%s UTC) has passed'
                             % when_text(start))
        if get('flexible_start'):
            try:
                self.ledger.refresh()
                self.plan(requests, start, start + length)
            except NoCapacity as e:
                if e.earliest is None or (
                        latest is not None and
                        epoch.to_epoch(e.earliest) > latest):
                    raise
                start = epoch.to_epoch(e.earliest)
        return dict(start_at=epoch.from_epoch(start),
                    end_at=epoch.from_epoch(start + length))

    def on_shared_pool(self, reservation_id: str) -> bool:
        info = self.ledger.view.reservation(reservation_id)
        return (info is not None and
                kinds.of(info.resource_type).shared_pool)

    def fits_for_good(self, nodes: Iterable[str], need: capacity.Resources,
                      extras: tuple = capacity.NO_EXTRAS) -> bool:
        """Whether each of `nodes` can take `need` (and `extras`) from now
        on for good (an ordinary server) without what the ledger promised.
        """
        self.ledger.refresh()
        now = self.clock()
        for fresh in (False, True):
            hosts = {h.node: h for h in self.nodes.hosts(self.client, fresh)}
            if all(n in hosts and capacity.fits_for_good(
                    hosts[n], self.ledger.timelines.get(n), need, now,
                    extras) for n in nodes):
                return True
        return False
