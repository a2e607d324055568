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

"""/v1/ledger: the ledger as a calendar (every node's allocations over
time, the free capacity per flavor, and the floating IP addresses' leases),
read only.  An admin sees every node by name and every registered address;
a project sees its own allocations, on nodes named as Nova's hostId names
them to it, the addresses it reserved, and the free capacity.
"""

import hashlib
from typing import Optional

from nova import objects

from nova_reservation.api import validation
from nova_reservation.api import wsgi
from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.clients import flavors
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation import exception
from nova_reservation.lease import kinds
from nova_reservation.lease import shares
from nova_reservation.lease import write as lease_write
from nova_reservation import policies
from nova_reservation import views

CONF = conf.CONF
DAY = 86400
# What the calendar shows by default, and at most.
SPAN, LONGEST_SPAN = 7 * DAY, 31 * DAY
SERVERS = 'server'


def _date(t: float):
    return views.date(epoch.from_epoch(t))


def _amounts(res: capacity.Resources) -> dict:
    return dict(zip(('vcpus', 'memory_mb', 'disk_gb'), res))


def _host_id(project_id: str, node: str) -> str:
    """A node's name as a project sees it: Nova's hostId."""
    return hashlib.sha224((project_id + node).encode()).hexdigest()


def _allocation(slot: capacity.Slot, info, lease,
                viewer: Optional[str] = None,
                bound: Optional[dict] = None) -> dict:
    """A slot as the calendar shows it; to `viewer`, a project that may
    use the slot's reservation (its own or one shared with it), with its
    own server only (`bound`: {server: its project, where that is not the
    reservation's}), as Nova shows no other project's.
    """
    held = (slot.instance_uuid or '').startswith(db_ledger.HOLD_PREFIX)
    shared = bool(info and viewer and info.project_id != viewer)
    server = None if held else slot.instance_uuid
    if server and viewer and (bound or {}).get(
            server, info and info.project_id) != viewer:
        server = None
    return dict(
        _amounts(slot.resources),
        type=info.resource_type if info else None,
        start=_date(slot.start), end=_date(slot.end),
        lease_id=info and info.lease_id,
        lease_name=lease.name if lease else None,
        reservation_id=slot.reservation_id,
        project_id=info and info.project_id,
        server_id=server,
        shared_by=info.project_id if shared else None,
        held=held)


def _window(allocation: dict, reason: Optional[str], own: bool) -> dict:
    """A maintenance window's slot, which every project sees: with its
    reason and, to other projects, nothing of the lease that holds it
    (not even the project that made it).
    """
    allocation['reason'] = reason
    if not own:
        allocation.update(lease_id=None, lease_name=None,
                          reservation_id=None, project_id=None,
                          shared_by=None)
    return allocation


def show_ledger(ctx, req):
    """Every node's allocations over [after, before) and the free
    capacity per public flavor.
    """
    wsgi.authorize(ctx, policies.LEDGER_GET)
    everything = policies.authorize(ctx, policies.LEDGER_GET_ALL_NODES, {})
    after, before = validation.calendar(
        wsgi.query(req), db_api.utcnow(), SPAN, LONGEST_SPAN)
    # (Nova adds the project's private flavors, such as a lease's own.)
    public = sorted((f for f in objects.FlavorList.get_all(
        ctx, inactive=False, filters={'is_public': True}) if f.is_public),
        key=lambda f: (f.vcpus, f.memory_mb, f.root_gb, f.flavorid))
    needs = _needs(public)
    found = lease_write.shared().calendar(after, before, {
        f.flavorid: needs[f.flavorid] for f in public
        if f.flavorid in needs})
    reservations = found['reservations']

    def visible(slot):
        info = reservations.get(slot.reservation_id)
        return everything or (info and (
            kinds.of(info.resource_type).window or
            shares.may_use(info.project_id, info.shared_with,
                           ctx.project_id)))
    shown = [(h, reservable, [s for s in slots if visible(s)])
             for h, reservable, slots in found['nodes']]
    leases = db_leases.get_many(db_api.Context(), {
        reservations[s.reservation_id].lease_id for _, _, slots in shown
        for s in slots if s.reservation_id in reservations})
    # The project of each server in a slot, where it is not the
    # reservation's (one booted into a reservation shared with it).
    bound = {} if everything else {
        b.instance_uuid: b.project_id
        for b in db_bindings.of_servers(db_api.Context(), {
            s.instance_uuid for _, _, slots in shown for s in slots
            if s.instance_uuid}) if b.project_id}
    # Each window's reservation read once, however many nodes it holds.
    reasons = {rid: db_leases.reservation(db_api.Context(), rid).reason
               for rid in {s.reservation_id for _, _, slots in shown
                           for s in slots}
               if rid in reservations and
               kinds.of(reservations[rid].resource_type).window}
    nodes = []
    for host, reservable, slots in shown:
        allocations = []
        for s in slots:
            info = reservations.get(s.reservation_id)
            allocations.append(_allocation(
                s, info, info and leases.get(info.lease_id),
                None if everything else ctx.project_id, bound))
            if s.reservation_id in reasons:
                _window(allocations[-1], reasons[s.reservation_id],
                        everything or info.project_id == ctx.project_id)
        if everything:
            if any(host.base):
                # Ordinary servers: no end, counted as Placement has them.
                allocations.insert(0, dict(
                    _amounts(host.base), type=SERVERS,
                    start=views.date(after), end=None, lease_id=None,
                    lease_name=None, reservation_id=None,
                    project_id=None, server_id=None, shared_by=None,
                    held=False))
            nodes.append(dict(name=host.node, reservable=reservable,
                              capacity=_amounts(host.capacity),
                              allocations=allocations))
        elif allocations:
            nodes.append(dict(name=_host_id(ctx.project_id, host.node),
                              reservable=None, capacity=None,
                              allocations=allocations))
    shown_addresses = [(row, [s for s in slots if visible(s)])
                       for row, slots in found['addresses']]
    # One read of the leases of every address, as for the nodes.
    leases.update(db_leases.get_many(db_api.Context(), {
        reservations[s.reservation_id].lease_id
        for _, slots in shown_addresses for s in slots
        if s.reservation_id in reservations} - set(leases)))
    addresses = []
    for row, slots in shown_addresses:
        if not (slots or everything):
            continue
        held = []
        for s in slots:
            info = reservations.get(s.reservation_id)
            lease = info and leases.get(info.lease_id)
            held.append({k: v for k, v in _allocation(s, info, lease).items()
                         if k not in ('vcpus', 'memory_mb', 'disk_gb',
                                      'server_id', 'shared_by', 'held')})
        addresses.append(dict(address=row.floating_ip_address,
                              network_id=row.floating_network_id,
                              allocations=held))
    return wsgi.json_response(200, {'ledger': {
        'after': views.date(after), 'before': views.date(before),
        'nodes': nodes, 'floatingips': addresses,
        'free': [dict(_amounts(needs[f.flavorid].resources),
                      flavor_id=f.flavorid, flavor_name=f.name,
                      steps=[{'start': _date(t), 'count': n}
                             for t, n in found['free'][f.flavorid]])
                 for f in public if f.flavorid in needs]}})


def _needs(public: list) -> dict:
    """{flavor id: what a server of it takes (`capacity.Need`)} of the
    flavors whose servers a lease can hold (a GPU flavor's free count would
    promise GPUs).
    """
    found = {}
    for f in public:
        try:
            found[f.flavorid] = flavors.need(f)
        except exception.Uncounted:
            pass
    return found
