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

"""ReservationFilter: the scheduler's time-aware view of the ledger."""

import time
from typing import Callable, Optional

from nova.scheduler.client import report
from nova.scheduler import filters
from oslo_log import log as logging

from nova_reservation import capacity
from nova_reservation.clients import flavors
from nova_reservation.clients import placement_usage
from nova_reservation import conf
from nova_reservation.filters import enrolled_nodes
from nova_reservation.filters import extras as extras_mod
from nova_reservation.filters import passes as passes_mod
from nova_reservation.lease import kinds
from nova_reservation.lease import shares
from nova_reservation.ledger import memory as ledger_mod

LOG = logging.getLogger(__name__)
CONF = conf.CONF

# One copy of the ledger per scheduler process, shared by filter instances.
LEDGER = ledger_mod.Ledger()
# And of what Placement counts as used on the nodes.
USAGE = placement_usage.Usage(report.report_client_singleton)
# And of its decisions beside the other schedulers'.
PASSES = passes_mod.Passes(USAGE)


ENROLLED = enrolled_nodes.EnrolledNodes()


class ReservationFilter(filters.BaseHostFilter):
    """Keep boots within what the capacity ledger allows.

    A boot with the ``reservation`` hint goes only to the nodes that hold a
    slot of that reservation, and only for the reservation's project and
    those it is shared with.  Any
    other boot only goes where it takes no capacity that the ledger has
    promised to a lease, now or later.
    """

    run_filter_once_per_request = False
    RUN_ON_REBUILD = False

    def __init__(self, ledger=None, clock=time.time,
                 usage: Optional[placement_usage.Usage] = None,
                 passes: Optional[passes_mod.Passes] = None,
                 enrolled: Optional[Callable[[], dict]] = None
                 ) -> None:
        """`ledger`, `usage`: the process's (as Nova makes the filter), or
        those given (no usage: Placement's is not asked); `passes`: the
        process's with its own ledger and usage, or those given (none: the
        other schedulers' boots in flight are not counted).
        """
        self.ledger = ledger or LEDGER
        self.clock = clock
        self.usage = usage or (USAGE if ledger is None else None)
        self.passes = passes or (PASSES if ledger is None else None)
        # The enrolled nodes: the process's reader, those given, or none.
        self.enrolled = enrolled or (ENROLLED if ledger is None else dict)
        # (the ledger's peaks table, {node: room}): see headroom().
        self._rooms: tuple = (None, {})
        self._extras = extras_mod.Kept()
        # (peaks, usage read, {provider: room}): see _placed_rooms().
        self._placed: tuple = (None, None, {})

    def filter_all(self, host_states, spec_obj):
        # The per-request work (the ledger's view, the request's need) is
        # done once here, not once per host.  One generation of the ledger
        # serves the whole request, whatever other requests' refreshes
        # publish meanwhile (native threads).
        rid = spec_obj.get_scheduler_hint('reservation')
        if rid:
            # The boot hook has just claimed its slots (a ledger change):
            # the latest ledger, as the claim left it.
            check = self._reserved_check(self._view(latest=True), rid,
                                         spec_obj)
            return [h for h in host_states if check(h)]
        if is_preemptible(spec_obj):
            return self._preemptible(self._view(), spec_obj, host_states)
        return self._ordinary(self._view(), spec_obj, host_states)

    def _view(self, latest: bool = False) -> ledger_mod.View:
        """The ledger as of at most `ledger_max_age` ago (`latest`: now).

        An ordinary boot filtered on a view that lacks a lease just written
        is still seen by that lease's check, which waits as long for the
        boots in flight (`lease.write.Writer`).
        """
        if self.usage is not None:
            self.usage.keep_fresh(CONF.reservation.placement_usage_interval)
        max_age = CONF.reservation.ledger_max_age
        if latest or max_age <= 0:
            self.ledger.refresh()
            return self.ledger.view
        self.ledger.keep_fresh(max_age / 2)
        return self.ledger.current(max_age)

    def host_passes(self, host_state, spec_obj) -> bool:
        return any(True for _ in self.filter_all([host_state], spec_obj))

    def _reserved_check(self, view: ledger_mod.View, rid: str, spec_obj):
        held = slot_ids(spec_obj)
        res = view.reservation(rid)
        slots = view.slots(rid) if res is not None else []
        # The slots the boot holds (all the servers of a multi-create may
        # use them: Nova narrows the hosts from one server to the next),
        # or the server's own.
        own = {s.node for s in slots
               if s.instance_uuid == spec_obj.instance_uuid or s.id in held}
        # A server that holds a slot keeps it (moved, say) after its
        # project's share was taken back.
        if res is None or not own and not shares.may_use(
                res.project_id, res.shared_with, spec_obj.project_id):
            LOG.info('ReservationFilter: reservation %s is not one of '
                     'project %s', rid, spec_obj.project_id)
            return lambda host_state: False
        if kinds.of(res.resource_type).made_by_boot:
            # A leased server goes to its own slot (unshelve), a new one
            # to a free slot.
            nodes = own or {s.node for s in slots
                            if s.instance_uuid is None}
        else:
            # Capacity and host reservations: the nodes of their slots,
            # only while the lease runs (the boot hook holds the slots).
            now = self.clock()
            nodes = own or {s.node for s in slots if s.start <= now < s.end}
        return lambda host_state: host_state.nodename in nodes

    def _ordinary(self, view: ledger_mod.View, spec_obj,
                  host_states) -> list:
        """The hosts where an ordinary boot takes nothing that the ledger
        promised to a lease, now or later.

        One loop over the hosts, a dict look-up and some arithmetic each:
        this runs for every host of every request.  A host's room (its
        capacity less its usage and the ledger's peak) is kept from one
        request to the next while neither changes.
        """
        need = need_v, need_m, need_d = flavors.need_of_request(spec_obj)
        now = self.clock()
        peaks = view.peaks_after(now)
        # One read of Placement's usage for the whole request.
        snapshot = self.usage.snapshot if self.usage is not None else None
        # What it asks beyond vCPU, RAM and disk (a GPU), read only where
        # some node's slots hold such classes, and checked there first.
        extra_nodes = view.nodes_with_extras(now)
        asked = extra_nodes and flavors.asked_of_request(spec_obj)
        wanted = asked and capacity.root_extras(asked)
        table, rooms = self._rooms
        if table is not peaks:
            rooms = {}
            self._rooms = (peaks, rooms)
        extras_fit = wanted and self._extras.check(
            view, peaks, extra_nodes, wanted, now,
            snapshot.extras if snapshot else {}, self._extras_now,
            # A boot of no vCPU (bare metal, dedicated CPUs) goes to nodes
            # that the read of vCPU candidates may not hold.
            self.usage.read_also if self.usage is not None and
            'VCPU' not in asked else None)
        placed = self._placed_rooms(peaks, snapshot)
        freepool = CONF.reservation.freepool_name
        verdicts: dict = {}
        enrolled = self.enrolled()
        passed = []
        promised: dict = {}
        for host_state in host_states:
            aggregates = host_state.aggregates
            if aggregates and enrolled_nodes.set_aside(
                    host_state, freepool, verdicts, enrolled):
                continue
            name = host_state.nodename
            if extras_fit and not extras_fit(host_state):
                LOG.debug('ReservationFilter: %s would take %s promised to '
                          'a lease', name, capacity.extras_text(wanted))
                continue
            room = rooms.get(name)
            # Inline, not calls: this is the scheduler's hottest loop.
            if room is None or room is not UNLIMITED and not (
                    room[0] is host_state.updated and
                    room[1] is host_state.vcpus_used and
                    room[2] is host_state.free_ram_mb):
                room = headroom(host_state, peaks.get(name))
                if room is UNLIMITED or room[0] is not None:
                    rooms[name] = room
            if room is UNLIMITED:
                passed.append(host_state)
                if extras_fit and name in extras_fit.nodes:
                    # Its GPUs are promised (a bare-metal node's unit):
                    # the boots in flight count.
                    promised[name] = host_state
                continue
            fits = (need_v <= room[3] and need_m <= room[4] and
                    need_d <= room[5]) or fits_besides_lease_servers(
                host_state, capacity.Resources(*peaks[name]),
                capacity.Resources(need_v, need_m, need_d), view.bound)
            if fits and placed is not None:
                fits = _fits_placed(placed, host_state, peaks[name], need,
                                    view.bound)
            if fits:
                passed.append(host_state)
                promised[name] = host_state
            else:
                LOG.debug('ReservationFilter: %s would take capacity '
                          'promised to a lease', name)
        if promised and self.passes is not None and spec_obj.instance_uuid:
            admitted = self._admit(spec_obj.instance_uuid, need, promised,
                                   peaks, placed, view.bound,
                                   snapshot.read_at if snapshot else 0.0,
                                   wait=len(promised) == len(passed),
                                   extras_fit=extras_fit or None)
            passed = [h for h in passed if h.nodename in admitted or
                      h.nodename not in promised]
        return passed

    def _admit(self, instance_uuid: str, need: capacity.Resources,
               promised: dict, peaks: dict, placed: Optional[tuple],
               bound: dict, read_at: float, wait: bool,
               extras_fit: Optional[extras_mod.Check] = None) -> set:
        """Those of the `promised` nodes ({node: host state}) where the
        boot fits beside the boots other schedulers let onto them
        (`passes.Passes`); `extras_fit`: the rule of a boot that asks for
        classes beyond vCPU, RAM and disk.
        """
        def candidate(host_state, peak):
            def fits(pending, pending_extras, now):
                more = need + pending
                found = now[0] if now else (
                    placed[0].get(host_state.uuid) if placed else None)
                return fits_besides_lease_servers(
                    host_state, peak, more, bound) and (
                    found is None or _fits_found(found, host_state, peak,
                                                 more, bound)) and (
                    extras_fit is None or extras_fit(
                        host_state, pending_extras, now and now[1]))

            return passes_mod.Candidate(host_state.uuid, fits, lambda: (
                self.usage.node(host_state.uuid),
                extras_fit.read_node(host_state) if extras_fit else None))

        return self.passes.admit(
            instance_uuid, need,
            extras_fit.wanted if extras_fit else capacity.NO_EXTRAS, {
                name: candidate(h, capacity.Resources(
                    *peaks.get(name, capacity.ZERO)))
                for name, h in promised.items()}, read_at, wait)

    def _placed_rooms(self, peaks: dict,
                      snapshot: Optional[tuple]) -> Optional[tuple]:
        """(usage read, {provider uuid: room}): one read of what Placement
        counts on the nodes for the whole request, and the rooms of the
        promised nodes on it (see `_fits_placed`), filled as hosts are
        asked about and kept while neither the ledger's peaks nor the
        read change; None without a usage view.
        """
        if snapshot is None:
            return None
        used = snapshot[1]
        known_peaks, known_used, rooms = self._placed
        if known_peaks is not peaks or known_used is not used:
            rooms = {}
            self._placed = (peaks, used, rooms)
        return used, rooms

    def _extras_now(self, uuid: str, leased) -> dict:
        """`placement_usage.Usage.extras_now` of a node; nothing (so no room
        for what is promised) without a usage view or an answer.
        """
        if self.usage is None:
            return {}
        try:
            return self.usage.extras_now(uuid, leased)
        except Exception as e:   # Placement's failures are many
            LOG.warning('ReservationFilter: no count of node %s from '
                        'Placement: %s', uuid, e)
            return {}

    def _preemptible(self, view: ledger_mod.View, spec_obj,
                     host_states) -> list:
        """The hosts where a preemptible boot takes only what the ledger
        promised to leases that start later than `preempt_margin` from
        now: never what a running lease, an ordinary server or another
        preemptible server uses.  A node with no promise before the
        margin is left to Placement, as for an ordinary boot.
        """
        need = flavors.need_of_request(spec_obj)
        now = self.clock()
        until = now + CONF.reservation.preempt_margin * 60
        freepool = CONF.reservation.freepool_name
        verdicts: dict = {}
        enrolled = self.enrolled()
        passed = []
        for host_state in host_states:
            if host_state.aggregates and enrolled_nodes.set_aside(
                    host_state, freepool, verdicts, enrolled):
                continue
            timeline = view.timelines.get(host_state.nodename)
            promised = (timeline.peak(now, until) if timeline
                        else capacity.ZERO)
            # Nothing promised before the margin: what fits is Placement's
            # to say, which gave the candidates (Nova's host state may
            # still count a server it placed there and never built).
            if not any(promised) or fits_besides_lease_servers(
                    host_state, promised, need, view.bound):
                passed.append(host_state)
            else:
                LOG.debug('ReservationFilter: %s has no room for a '
                          'preemptible server', host_state.nodename)
        return passed


def is_preemptible(spec_obj) -> bool:
    """Whether the boot (or move) is of a preemptible server."""
    # The boot hook gives the hint; the request spec keeps it.
    hints = spec_obj.scheduler_hints or {}
    value = hints.get('preemptible')
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    return str(value).lower() == 'true'


def _fits_placed(placed: tuple, host_state, peak: tuple, need: tuple,
                 bound: dict) -> bool:
    """Whether `need` fits on a promised node with the ledger's `peak`
    and what Placement counts there (`placed`: see `_placed_rooms`).
    The lease servers Placement counts are in the ledger too: taken out
    only for a second look, as in `fits_besides_lease_servers`.
    """
    used, rooms = placed
    key = host_state.uuid
    room = rooms.get(key)
    if room is None:
        found = used.get(key)
        room = rooms[key] = () if found is None else _room(found, peak)
    return not room or _fits_room(room, host_state, need, bound)


def _fits_found(found: tuple, host_state, peak: tuple, need: tuple,
                bound: dict) -> bool:
    """`_fits_placed` on Placement's count `found` ((capacity, used))."""
    return _fits_room(_room(found, peak), host_state, need, bound)


def _room(found: tuple, peak: tuple) -> tuple:
    """A node's room on Placement's count `found` ((capacity, used)) less
    the ledger's `peak`.
    """
    return tuple(found[0] - found[1] - capacity.Resources(*peak))


def _fits_room(room: tuple, host_state, need: tuple, bound: dict) -> bool:
    if all(n <= r for n, r in zip(need, room)):
        return True
    lease = lease_usage(host_state, bound)
    return all(n <= r + s for n, r, s in zip(need, room, lease))


# The room of a node on which the ledger promises nothing from now on.
UNLIMITED = ()


def headroom(host_state, peak) -> tuple:
    """A node's room for an ordinary server: (updated, vcpus_used,
    free_ram_mb, vcpus, memory_mb, disk_gb), what it holds less what it
    uses and what the ledger promises on it from now on (`peak`; None:
    nothing, so UNLIMITED).

    The room holds while the host state's `updated`, `vcpus_used` and
    `free_ram_mb` are the very objects it was made from (compared by
    identity: no read of them; the room keeps them alive, so none is
    another object at the same address): Nova's HostState changes its
    totals and usage only with a new `updated` (the compute node read
    again, or a server placed on it); the usage is compared too, for a
    placement that failed half way.  An `updated` of None: never kept.
    """
    if peak is None:
        return UNLIMITED
    room = (node_capacity(host_state) - node_usage(host_state) -
            capacity.Resources(*peak))
    return (host_state.updated, host_state.vcpus_used,
            host_state.free_ram_mb) + tuple(room)


def fits_besides_lease_servers(host_state, peak: capacity.Resources,
                               need: capacity.Resources,
                               bound: dict) -> bool:
    """Whether `need` fits on the node with the ledger's `peak`, its lease
    servers taken out of its usage (never below none): they are in both
    the usage and the ledger.  The rare second look at a node refused.
    """
    lease = lease_usage(host_state, bound)
    others = capacity.Resources(*(max(u - s, 0) for u, s in
                                  zip(node_usage(host_state), lease)))
    return (others + peak + need).fits_in(node_capacity(host_state))


def node_usage(host_state) -> capacity.Resources:
    """What a node uses, as Nova's host state counts it."""
    return capacity.Resources(
        host_state.vcpus_used,
        host_state.total_usable_ram_mb - host_state.free_ram_mb,
        host_state.disk_mb_used / 1024.0)


def node_capacity(host_state) -> capacity.Resources:
    """What a node holds: its totals times the allocation ratios."""
    return capacity.Resources(
        host_state.vcpus_total * (host_state.cpu_allocation_ratio or 1.0),
        host_state.total_usable_ram_mb * (
            host_state.ram_allocation_ratio or 1.0),
        host_state.total_usable_disk_gb * (
            host_state.disk_allocation_ratio or 1.0))


def slot_ids(spec_obj) -> set:
    """The ledger slots a boot holds, as the hook gave them."""
    hints = spec_obj.scheduler_hints or {}
    return {int(i) for i in hints.get(ledger_mod.SLOTS_HINT) or ()
            if str(i).isdigit()}


def lease_usage(host_state, bound: dict) -> tuple:
    """What the lease servers on a node use (`bound`: the servers of the
    ledger's slots, which the timelines already count), as (vcpus,
    memory_mb, disk_gb).
    """
    total = [0, 0, 0]
    running = host_state.instances
    if running and bound:
        small, big = sorted((running, bound), key=len)
        for uuid in small:
            if uuid in big:
                for k, amount in enumerate(bound[uuid]):
                    total[k] += amount
    return tuple(total)
