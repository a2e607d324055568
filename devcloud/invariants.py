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

"""What must hold on a cloud that runs the reservation service once a
scenario is over, whatever it did: the in-process cloud and the local cloud
check the same things.

- no lease is left CREATING (nor DELETING, where engines run, nor
  waiting for approval past its start);
- no event ran twice, and a lease's events ran in their order;
- no slot is held for a boot, a lease change or a server that is not there;
- a server in a running slot runs on the slot's node (or on a node of a
  maintenance window that moved its slot: until the window starts, or
  for good if the window lists it as not moved);
- no server carries a lease that is gone (or never finished);
- no node is promised more than it has: the ledger at its peak from now
  on, with the ordinary servers on the node (which run for good);
- no floating IP address is promised twice at any instant, or promised
  at all once it is no longer registered; no floating IP made for a
  reservation outlives its lease;
- where Neutron's ports are given: no port is left to a server that is
  gone (nor kept for Nova with no server), and no floating IP is on such a
  port;
- where Cinder's volumes are given: no volume is attached, or reserved
  for an attachment, to a server that is gone, and none is in error.

The store is read with SQL through an SQLAlchemy engine; Nova through
`servers` (every project's servers, as the compute API lists them) and
`placement` (a GET of Placement at microversion 1.14 or later, its
body); Neutron and Cinder through what their APIs list for an admin,
every project's.
"""

import datetime
import json
from typing import Callable, Iterable, List, Optional

import sqlalchemy as sa

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.clients import placement as placement_mod
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import models
from nova_reservation.lease import floatingips
from nova_reservation.lease import schedule
from nova_reservation import marks

# The order in which a lease's events run (`bind` has none).
EVENT_ORDER = ('reserve',) + schedule.TIMED


def _rows(engine: sa.engine.Engine, table) -> list:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(table)).mappings())


def violations(engine: sa.engine.Engine, servers: Iterable[dict],
               placement: Callable[[str], dict],
               now: datetime.datetime = None,
               engines: bool = False,
               floating_ips: Iterable[dict] = (),
               ports: Optional[Iterable[dict]] = None,
               volumes: Optional[Iterable[dict]] = None,
               attachments: Iterable[dict] = (),
               pending: Optional[Callable[[dict], bool]] = None
               ) -> List[str]:
    """Each invariant that does not hold, in words (none: all hold).

    `engines`: engines run the cloud's events, so no lease is left being
    deleted either.  `floating_ips`, `ports`: Neutron's floating IPs and
    ports (as an admin lists them); the ports checked where given.
    `volumes`, `attachments`: Cinder's volumes and attachments (as an
    admin lists them, the attachments from microversion 3.27), checked
    where given.  `pending`: while changes are being written, which leases
    (a test of a lease row) are not answered yet; their slots, and the
    slots held for changes, then do not count on their nodes: what an
    ordinary boot in flight took of them is what the change checks for
    before it is answered, and gives back.
    """
    now = now or datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)
    leases = {x['id']: x for x in _rows(engine, models.Lease.__table__)}
    found = []
    found += _leases(leases, ('CREATING', 'DELETING') if engines
                     else ('CREATING',))
    if engines:
        found += _unapproved(leases, now)
    found += _events(_rows(engine, models.Event.__table__))
    slots = [s for s in _rows(engine, models.Slot.__table__)
             if not s['deleted']]
    servers = {s['id']: s for s in servers}
    found += _slots(slots, servers)
    found += _servers(servers, leases)
    preemptible = {u for u, s in servers.items() if (
        s.get('metadata') or {}).get(marks.PREEMPTIBLE) == 'true'}
    # Servers of host reservations hold no slot of their own: the host's
    # slot holds them.
    bindings = [b for b in _rows(engine, models.ServerBinding.__table__)
                if b['state'] != 'ENDED']
    leased = {b['instance_uuid'] for b in bindings}
    found += _owners(bindings, servers, leases)
    if pending is not None:
        unanswered = {r['id'] for r in _rows(
            engine, models.Reservation.__table__) if r['lease_id'] in leases
            and pending(leases[r['lease_id']])}
        slots = [s for s in slots if s['reservation_id'] not in unanswered
                 and not (s['instance_uuid'] or '').startswith(
                     db_ledger.HOLD_PREFIX)]
    # A maintenance window holds its nodes whole: the ordinary servers
    # still on them (to be moved off) are checked against the other
    # slots, and the window against those slots alone.
    reservations = _rows(engine, models.Reservation.__table__)
    windows = {r['id'] for r in reservations
               if r['resource_type'] == 'maintenance'}
    found += _where(slots, servers, reservations, leases, now)
    found += _capacity(slots, placement, epoch.to_epoch(now),
                       preemptible, leased, windows)
    found += _addresses(slots, _rows(engine, models.FloatingIP.__table__),
                        epoch.to_epoch(now))
    floating_ips = list(floating_ips)
    found += _floating_ips(floating_ips, _rows(
        engine, models.Reservation.__table__), leases)
    if ports is not None:
        found += _ports(list(ports), floating_ips, servers)
    if volumes is not None:
        found += _volumes(list(volumes), list(attachments), servers)
    return found


def _ports(ports: list, floating_ips: list, servers: dict) -> list:
    """Ports that Nova made or took for a server that is gone, or that
    it keeps with no server; floating IPs on such ports.
    """
    found = []
    orphans = set()
    for p in ports:
        owner, device = p['device_owner'] or '', p['device_id'] or ''
        if not owner.startswith('compute:'):
            continue
        if device and device not in servers:
            orphans.add(p['id'])
            found.append('port %s (%s) is left to server %s, which is not '
                         'there' % (p['id'], _fixed_ips(p), device))
        elif not device:
            orphans.add(p['id'])
            found.append('port %s (%s) is kept for Nova (%s) with no server'
                         % (p['id'], _fixed_ips(p), owner))
    for fip in floating_ips:
        if fip.get('port_id') in orphans:
            found.append('floating IP %s is on port %s, left by a server '
                         'that is gone' % (fip['floating_ip_address'],
                                           fip['port_id']))
    return found


def _fixed_ips(port: dict) -> str:
    return ', '.join(f['ip_address'] for f in port['fixed_ips']) or (
        'no address')


def _volumes(volumes: list, attachments: list, servers: dict) -> list:
    """Volumes in error; volumes attached, or reserved for an attachment,
    to a server that is gone.
    """
    found = ['volume %s is in %s' % (v['id'], v['status'])
             for v in volumes if v['status'].startswith('error')]
    for v in volumes:
        for a in v.get('attachments') or ():
            if a.get('server_id') and a['server_id'] not in servers:
                found.append('volume %s is attached to server %s, which is '
                             'not there' % (v['id'], a['server_id']))
    for a in attachments:
        if a.get('instance') and a['instance'] not in servers and (
                a['status'] != 'detached'):
            found.append('volume %s has an attachment %s (%s) for server '
                         '%s, which is not there' % (
                             a['volume_id'], a['id'], a['status'],
                             a['instance']))
    return found


def _addresses(slots: list, registered: list, now: float) -> list:
    known = {floatingips.node_of(r['id']) for r in registered}
    timelines: dict = {}
    for s in slots:
        if not floatingips.is_address(s['node']):
            continue
        if s['node'] not in known and \
                epoch.to_epoch(s['end_at']) > now:
            return ['slot %d holds %s, which is not registered'
                    % (s['id'], s['node'])]
        timelines.setdefault(s['node'], timeline_mod.Timeline()).add(
            capacity.Slot(s['id'], s['reservation_id'], s['node'],
                          epoch.to_epoch(s['start_at']),
                          epoch.to_epoch(s['end_at']),
                          floatingips.UNIT))
    return ['address %s is promised %g times at once' % (node, peak.vcpus)
            for node, peak in sorted(
                (n, tl.peak(0, capacity.FOREVER))
                for n, tl in timelines.items())
            if not peak.fits_in(floatingips.UNIT)]


def _floating_ips(fips: Iterable[dict], reservations: list,
                  leases: dict) -> list:
    lease_of = {r['id']: r['lease_id'] for r in reservations}
    found = []
    for fip in fips:
        text = fip.get('description') or ''
        if not text.startswith('reservation:'):
            continue
        lease = leases.get(lease_of.get(text[len('reservation:'):]))
        if lease is None or lease['status'] != 'ACTIVE':
            found.append('floating IP %s (%s) outlives its lease %s' % (
                fip['floating_ip_address'], text,
                lease and '%s (%s)' % (lease['id'], lease['status'])))
    return found


def _leases(leases: dict, passing: tuple) -> list:
    return ['lease %s is left %s' % (i, x['status'])
            for i, x in sorted(leases.items()) if x['status'] in passing]


def _unapproved(leases: dict, now: datetime.datetime) -> list:
    """A lease waiting for approval whose start has come (with a pass of
    the engine to spare) should have been rejected.
    """
    late = now - datetime.timedelta(seconds=10)
    return ['lease %s still waits for approval after its start %s' % (
        i, x['start_at']) for i, x in sorted(leases.items())
        if x['status'] == 'PENDING_APPROVAL' and x['start_at'] < late]


def _events(events: list) -> list:
    found = ['event %s (%s) of lease %s ran %d times' % (
        e['id'], e['event_type'], e['lease_id'], e['runs'])
        for e in events if e['runs'] > 1]
    done: dict = {}
    for e in events:
        if e['status'] == 'DONE' and e['event_type'] in EVENT_ORDER:
            done.setdefault(e['lease_id'], []).append(e)
    for lease_id, ran in sorted(done.items()):
        ran.sort(key=lambda e: EVENT_ORDER.index(e['event_type']))
        for first, then in zip(ran, ran[1:]):
            if (then['started_at'] and first['finished_at'] and
                    then['started_at'] < first['finished_at']):
                found.append('lease %s: %s ran before %s had finished' % (
                    lease_id, then['event_type'], first['event_type']))
    return found


def _slots(slots: list, servers: dict) -> list:
    found = []
    for s in slots:
        holder = s['instance_uuid']
        if not holder:
            continue
        if holder.startswith((db_ledger.CLAIM_PREFIX,
                              db_ledger.HOLD_PREFIX)):
            found.append('slot %d is still held by %s' % (s['id'], holder))
        elif holder not in servers:
            found.append('slot %d is held by server %s, which is not there'
                         % (s['id'], holder))
    return found


def _servers(servers: dict, leases: dict) -> list:
    found = []
    for uuid, server in sorted(servers.items()):
        lease_id = (server.get('metadata') or {}).get(marks.LEASE_ID)
        if not lease_id:
            continue
        lease = leases.get(lease_id)
        if lease is not None and lease['status'] in ('DELETED', 'CREATING'):
            found.append('server %s outlives its lease %s (%s)' % (
                uuid, lease_id, lease['status']))
    return found


def _owners(bindings: list, servers: dict, leases: dict) -> list:
    """A bound server is of its lease's project, or of the project its
    binding names (one a reservation is, or was, shared with).
    """
    found = []
    for b in bindings:
        server, lease = servers.get(b['instance_uuid']), leases.get(
            b['lease_id'])
        # (A stand-in of Nova's API may show no project.)
        if server is None or lease is None or 'tenant_id' not in server:
            continue
        project = b['project_id'] or lease['project_id']
        if server.get('tenant_id') != project:
            found.append('server %s of project %s is bound to lease %s as '
                         "project %s's" % (b['instance_uuid'],
                                           server.get('tenant_id'),
                                           b['lease_id'], project))
    return found


def _where(slots: list, servers: dict, reservations: list, leases: dict,
           now: datetime.datetime) -> list:
    """A server in a running slot runs on the slot's node, but for one
    whose slot a maintenance window moved off that node: it stays there
    until the engine live-migrates it, before the window starts, or, where
    it can not, the window lists it (unmoved_servers) for the operator.
    """
    waiting: dict = {}   # {node: (windows not started, servers listed)}
    for r in reservations:
        lease = leases.get(r['lease_id'])
        if r['resource_type'] != 'maintenance' or r['deleted'] or (
                lease is None or lease['status'] not in ('PENDING',
                                                         'ACTIVE')):
            continue
        listed = {u['server_id'] for u in json.loads(
            r['unmoved_servers'] or '[]')}
        for node in json.loads(r['hosts'] or '[]'):
            later, told = waiting.get(node, (False, set()))
            waiting[node] = (later or lease['start_at'] > now,
                             told | listed)
    found = []
    for s in slots:
        server = servers.get(s['instance_uuid'])
        node = (server or {}).get('OS-EXT-SRV-ATTR:hypervisor_hostname')
        if not node or node == s['node'] or not (
                s['start_at'] <= now < s['end_at']):
            continue
        later, told = waiting.get(node, (False, ()))
        if not (later or server['id'] in told):
            found.append('server %s runs on %s, its slot %d on %s' % (
                server['id'], node, s['id'], s['node']))
    return found


def _capacity(slots: list, placement: Callable, now: float,
              preemptible: set, leased: set,
              windows: frozenset = frozenset()) -> list:
    timelines: dict = {}
    whole: dict = {}   # every slot, the windows' too
    # The servers of host reservations, on their hosts' nodes anywhere;
    # a server of a slot counts as the slot's on its node only.
    bound = set(leased)
    slot_node = {}
    for s in slots:
        slot = capacity.Slot(s['id'], s['reservation_id'], s['node'],
                             epoch.to_epoch(s['start_at']),
                             epoch.to_epoch(s['end_at']),
                             capacity.Resources(s['vcpus'], s['memory_mb'],
                                                s['disk_gb']),
                             extras=db_ledger.extras_value(s.get('extras')))
        whole.setdefault(s['node'], timeline_mod.Timeline()).add(slot)
        if s['reservation_id'] in windows:
            timelines.setdefault(s['node'], timeline_mod.Timeline())
            continue
        timelines.setdefault(s['node'], timeline_mod.Timeline()).add(slot)
        if s['instance_uuid']:
            slot_node[s['instance_uuid']] = s['node']
    if not timelines:
        return []
    found = []
    for rp in placement('/resource_providers')['resource_providers']:
        timeline = timelines.get(rp['name'])
        if timeline is None:
            continue
        path = '/resource_providers/%s' % rp['uuid']
        allocations = placement(path + '/allocations')['allocations']
        inventories = placement_mod.counted_inventories(
            placement(path + '/inventories')['inventories'], allocations)
        limit = capacity.counted({
            rc: (i['total'] - i['reserved']) * i['allocation_ratio']
            for rc, i in inventories.items()})
        # Ordinary servers (not held by the ledger) run for good;
        # preemptible ones yield to the leases that start.
        ordinary = yielding = capacity.ZERO
        ordinary_extras: dict = {}   # {class: amount} beyond the three
        for consumer, alloc in allocations.items():
            use = capacity.counted(alloc['resources'])
            if consumer in preemptible:
                yielding = yielding + use
            elif consumer not in bound and slot_node.get(
                    consumer) != rp['name']:
                # A server still on a node its slot left (a window moved
                # it; it leaves before the window starts) uses it as an
                # ordinary server does meanwhile.
                ordinary = ordinary + use
                for rc, n in alloc['resources'].items():
                    ordinary_extras[rc] = ordinary_extras.get(rc, 0) + n
        limits = _limits(inventories)
        # The classes of its children (a physical GPU's vGPUs) count for
        # the node, as the ledger counts them.
        for child in placement('/resource_providers?in_tree=%s' % rp[
                'uuid'])['resource_providers']:
            if child['uuid'] == rp['uuid']:
                continue
            path = '/resource_providers/%s' % child['uuid']
            below = placement(path + '/allocations')['allocations']
            for rc, n in _limits(placement_mod.counted_inventories(
                    placement(path + '/inventories')['inventories'],
                    below)).items():
                limits[rc] = limits.get(rc, 0) + n
            for consumer, alloc in below.items():
                if consumer not in preemptible and consumer not in bound:
                    for rc, n in alloc['resources'].items():
                        ordinary_extras[rc] = ordinary_extras.get(rc, 0) + n
        found += _extras(rp['name'], limits, now, ordinary_extras,
                         timeline, whole[rp['name']])
        peak = timeline.peak(now, float('inf')) + ordinary
        if not whole[rp['name']].peak(now, float('inf')).fits_in(limit):
            found.append('node %s is promised %s of its %s' % (
                rp['name'], whole[rp['name']].peak(now, float('inf')),
                limit))
        elif not peak.fits_in(limit):
            found.append('node %s is promised %s of its %s' % (
                rp['name'], peak, limit))
        started = timeline.peak(now, now + capacity.INSTANT)
        if yielding != capacity.ZERO and not (
                started + ordinary + yielding).fits_in(limit):
            found.append('node %s: preemptible servers (%s) take what its '
                         'running leases hold' % (rp['name'], yielding))
    return found


def _limits(inventories: dict) -> dict:
    """{class: what may be allocated} of a provider's inventories."""
    return {rc: int((i['total'] - i['reserved']) * i['allocation_ratio'])
            for rc, i in inventories.items()}


def _extras(node: str, limits: dict, now: float, ordinary: dict,
            timeline: timeline_mod.Timeline,
            whole: timeline_mod.Timeline) -> list:
    """Where the classes beyond vCPU, RAM and disk that the slots of
    `node` hold in its provider tree (a GPU, a bare-metal class, a
    physical GPU's vGPUs) are promised past its inventories (`limits`):
    by every slot (`whole`, windows too), or by the leases' (`timeline`)
    besides its `ordinary` use.
    """
    found = []
    held = timeline.peak_extras(now, float('inf'))
    for (provider, rc), n in whole.peak_extras(now, float('inf')).items():
        limit = limits.get(rc, 0)
        promised = max(n, held.get((provider, rc), 0) + ordinary.get(rc, 0))
        if not provider and promised > limit:
            found.append('node %s is promised %d of its %d %s' % (
                node, promised, limit, rc))
    return found
