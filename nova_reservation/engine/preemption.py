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

"""Preemptible servers: told, moved off, shelved and brought back.

A preemptible server runs on capacity that the ledger promised to leases
that have not started.  At each pass the engine works out, for each node,
until when it holds its preemptible servers (`capacity.held_until`, the
newest yielding first), and:

- tells each server until when its node holds it (metadata
  ``reservation:preemptible_until``);
- `preempt_notice` minutes before that, tells its owner
  (``server.preempt.warning`` with the deadline, metadata
  ``reservation:preempt_at``), once, and again for a sooner deadline or
  once the one told has passed;
- `preempt_margin` minutes before it, moves it to a node where it takes no
  promise (live migration, else cold migration), or else does what it
  asked for (``on_preempt``: shelve, the default, or delete);
- unshelves a server shelved for want of room once a node holds it again.

Like the events' actions, a pass never waits for Nova: it moves each
server one step and looks again at the next pass.  A server is acted on
under a claim (`db.preemptibles.claim`), so several engines never act on
it twice; a claim whose engine died expires and another engine goes on
from where the server is.
"""

import dataclasses
import datetime
from typing import Callable, Optional

from nova import objects
from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.clients import cells
from nova_reservation.clients import flavors
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import notices as db_notices
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation import exception
from nova_reservation.lease import plan as lease_plan
from nova_reservation.lease import write as lease_write
from nova_reservation import marks
from nova_reservation import status

LOG = logging.getLogger(__name__)
CONF = conf.CONF

TAG = 'preemptible'
# Eviction steps, in the order they are tried.
LIVE, COLD, ON_PREEMPT = 'live', 'cold', 'on_preempt'
# Nova's server statuses that are a step of an eviction, and done ones.
MOVING = ('MIGRATING', 'RESIZE')


def _iso(t: Optional[datetime.datetime]) -> str:
    return t.replace(microsecond=0).isoformat() + 'Z' if t else 'none'


def _node(server: dict) -> Optional[str]:
    return server.get('OS-EXT-SRV-ATTR:hypervisor_hostname')


def _deadlines(rows, hosts: dict, uses: dict, timelines: dict,
               now: float) -> dict:
    """{(node, uuid): until when the node holds the server} of the
    preemptible servers on shared-pool nodes, each node worked out once:
    its oldest servers (first in `rows`) yield last.
    """
    order = {r.instance_uuid: i for i, r in enumerate(rows)}
    found = {}
    for node, on_node in uses.items():
        if node not in hosts:
            continue
        mine = sorted(on_node, key=lambda u: (order.get(u, len(order)), u))
        for uuid, until in zip(mine, capacity.held_until(
                hosts[node], timelines.get(node),
                [on_node[u] for u in mine], now)):
            found[(node, uuid)] = until
    return found


def _crowded(hosts: dict, uses: dict) -> list:
    """The nodes with their preemptible servers (and those this pass sent
    there) counted in their base usage.
    """
    return [dataclasses.replace(h, base=h.base + sum(
        uses.get(n, {}).values(), capacity.ZERO))
        for n, h in sorted(hosts.items())]


def _asks(server: dict) -> tuple:
    """(what the server takes of a node, as the filter counts an ordinary
    boot; the traits its node must have, and not have, ``!X``) from the
    flavor its API view embeds (a server booted from a volume shows no
    image, and takes no disk for its root); `exception.Uncounted`.
    """
    flavor = server['flavor']
    amounts, traits, _ = flavors.asked_of(objects.Flavor(
        vcpus=flavor['vcpus'], memory_mb=flavor['ram'],
        root_gb=flavor['disk'], ephemeral_gb=flavor.get('ephemeral') or 0,
        swap=flavor.get('swap') or 0,
        extra_specs=flavor.get('extra_specs') or {}),
        volume_backed=not server.get('image'), pinning_as_pcpu=False)
    return capacity.counted(amounts), traits


def _traits(server: dict) -> Optional[tuple]:
    """The traits of `_asks`; None if Nova refuses its flavor."""
    try:
        return _asks(server)[1]
    except exception.Uncounted:
        return None


def _busy(server: dict) -> bool:
    return bool(server.get('OS-EXT-STS:task_state')) or \
        server['status'] in MOVING


class Preemption:

    def __init__(self, nova, clock: Callable[[], float], engine_id: str,
                 outbox, planner_=None,
                 neighbours: Callable[[str], Optional[frozenset]] = (
                     cells.neighbours)) -> None:
        self.nova = nova
        # The nodes a server on a node may move to: its cell's.
        self.neighbours = neighbours
        # The shared pool and the ledger, as nova-api sees them (the
        # process's planner, made on first need).
        self._planner = planner_
        self.clock = clock
        self.engine_id = engine_id
        self.outbox = outbox
        self.ctx = db_api.Context()

    @property
    def planner(self) -> lease_plan.Planner:
        return self._planner or lease_write.shared()

    def now(self) -> datetime.datetime:
        return epoch.from_epoch(self.clock())

    def run(self) -> None:
        rows = db_preemptibles.get_all(self.ctx)
        if not rows:
            return
        servers = self._servers(rows)
        gone = [r.instance_uuid for r in rows
                if r.instance_uuid not in servers]
        if gone:
            db_preemptibles.forget(self.ctx, gone)
        rows = [r for r in rows if r.instance_uuid in servers]
        if not rows:
            return
        hosts, uses, timelines = self.planner.yielding(
            r.instance_uuid for r in rows)
        now = self.clock()
        deadlines = _deadlines(rows, hosts, uses, timelines, now)
        evicting = [r for r in rows if r.state == status.EVICTING]
        for row in rows:
            if row.state == status.RUNNING:
                row = self._watch(row, servers[row.instance_uuid], deadlines,
                                  timelines, now)
                if row is not None:
                    evicting.append(row)
        for row in evicting:
            self._step(row, servers[row.instance_uuid], hosts, uses,
                       timelines, now)
        for row in rows:
            if row.state in (status.SHELVED, status.UNSHELVING):
                self._bring_back(row, servers[row.instance_uuid], hosts,
                                 uses, timelines, now)
        if self.outbox.notifier:
            self.outbox.flush()

    def _servers(self, rows) -> dict:
        """{uuid: server} of the rows' servers that exist, tagged (one
        listing, and a look at each server not tagged yet).
        """
        servers = {s['id']: s for s in self.nova.servers(tag=TAG)}
        for row in rows:
            if row.instance_uuid in servers:
                continue
            try:
                server = self.nova.server(row.instance_uuid)
            except exception.NovaNotFound:
                continue
            servers[row.instance_uuid] = server
            if server['status'] not in ('BUILD', 'ERROR'):
                try:
                    self.nova.add_tag(row.instance_uuid, TAG)
                except exception.NovaError as e:
                    LOG.debug('Preemptible server %s: not tagged yet: %s',
                              row.instance_uuid, e)
        return servers

    # ------------------------------------------------------------ running

    def _watch(self, row, server, deadlines: dict, timelines,
               now: float):
        """Tell a running server until when its node holds it, warn its
        owner in time; the row, claimed, if it must go now.
        """
        node = _node(server)
        deadline = deadlines.get((node, row.instance_uuid))
        if deadline is None:
            return None   # not on a node of the shared pool (yet)
        until = (None if deadline >= capacity.FOREVER
                 else epoch.from_epoch(deadline).replace(microsecond=0))
        # Recorded once the server shows it: Nova refuses metadata while a
        # server builds, and the next pass tells it again.
        if (row.deadline != until or row.node != node) and self._metadata(
                row.instance_uuid, {marks.PREEMPTIBLE_UNTIL: _iso(until)}):
            db_preemptibles.seen(self.ctx, row.instance_uuid, node, until)
        if until is None:
            return None
        left = deadline - now
        if left <= CONF.reservation.preempt_notice * 60:
            self._warn(row, server, until, deadline, timelines.get(node))
        if left <= CONF.reservation.preempt_margin * 60:
            row.node = node
            if self._claim(row, status.EVICTING):
                return row
        return None

    def _warn(self, row, server: dict, until: datetime.datetime,
              deadline: float, timeline) -> None:
        """Tell the owner of `until` (once, as `db.preemptibles.warn`
        says), and show the deadline told on the server: again at later
        passes while Nova refuses it (a server that still builds takes no
        metadata).
        """
        node = _node(server)
        lease_id = ''
        if timeline is not None:
            starting = [s for s in timeline.meeting(deadline,
                                                    deadline + 1)
                        if s.start >= deadline]
            info = starting and self.planner.ledger.reservation(
                starting[0].reservation_id)
            lease_id = info.lease_id if info else ''
        payload = {'server_id': row.instance_uuid,
                   'project_id': row.project_id, 'node': node,
                   'deadline': _iso(until), 'on_preempt': row.on_preempt,
                   'lease_id': lease_id or None}
        notice = self.outbox.claim_for(dict(
            id=uuidutils.generate_uuid(), lease_id=lease_id,
            event_type='server.preempt.warning',
            payload=jsonutils.dumps(payload)))
        if db_preemptibles.warn(self.ctx, row.instance_uuid, until, notice,
                                self.now()):
            LOG.info('Preemptible server %s must leave %s by %s',
                     row.instance_uuid, node, until)
            row.warned_for = until
            if self.outbox.notifier:
                self.outbox.send([notice])
        told = _iso(row.warned_for)
        if row.warned_for and (server.get('metadata') or {}).get(
                marks.PREEMPT_AT) != told:
            self._metadata(row.instance_uuid, {marks.PREEMPT_AT: told})

    # ------------------------------------------------------------ eviction

    def _step(self, row, server, hosts, uses, timelines, now) -> None:
        """One step of moving a server off its node."""
        if row.claimed_by != self.engine_id and not self._claim(
                row, status.EVICTING):
            return   # another engine's
        uuid = row.instance_uuid
        if _busy(server):
            return   # Nova is at it
        if server['status'] == 'VERIFY_RESIZE':
            self.nova.action(uuid, 'confirmResize')
            return
        node = _node(server)
        if server['status'] == 'ACTIVE' and node != row.node:
            LOG.info('Preemptible server %s moved from %s to %s', uuid,
                     row.node, node)
            self._told(row, 'migrate', node)
            db_preemptibles.release(self.ctx, uuid, self.engine_id,
                                    status.RUNNING, node=node,
                                    action=None)
            return
        if server['status'] == 'SHELVED':
            self.nova.action(uuid, 'shelveOffload')
            return
        if server['status'] == 'SHELVED_OFFLOADED':
            self._told(row, 'shelve', None)
            db_preemptibles.release(self.ctx, uuid, self.engine_id,
                                    status.SHELVED, node=None, deadline=None,
                                    action=None)
            return
        step = {None: LIVE, LIVE: COLD}.get(row.action, ON_PREEMPT)
        if step == LIVE and server['status'] != 'ACTIVE':
            step = COLD   # only a running server migrates live
        target = None
        if step != ON_PREEMPT and server['status'] in ('ACTIVE', 'SHUTOFF'):
            target = self._target(uses.get(row.node, {}).get(uuid),
                                  _traits(server), row.node, hosts, uses,
                                  timelines, now)
        if target is None:
            step = ON_PREEMPT
        db_preemptibles.asked(self.ctx, uuid, self.engine_id, step)
        try:
            if step == LIVE:
                self.nova.action(uuid, 'os-migrateLive', {
                    'host': self.nova.host_of_node(target),
                    'block_migration': 'auto'})
            elif step == COLD:
                self.nova.action(uuid, 'migrate', {
                    'host': self.nova.host_of_node(target)})
            elif row.on_preempt == 'delete':
                self._told(row, 'delete', None)
                self.nova.delete(uuid)
                db_preemptibles.forget(self.ctx, [uuid])
            else:
                self.nova.action(uuid, 'shelve')
        except (exception.NovaError, exception.NovaNotFound) as e:
            # The next pass tries the next step.
            LOG.warning('Preemptible server %s: %s failed: %s', uuid, step,
                        e)

    def _target(self, need, traits, node, hosts, uses, timelines, now):
        """The node (other than `node`, in its cell, with the `traits` its
        flavor asks for) where the server takes no promise, from now on,
        with the most room; None: none is.  The choice is counted there,
        for the next server of this pass.
        """
        if need is None or traits is None:
            return None
        cell = self.neighbours(node)
        candidates = [h for h in _crowded(hosts, uses) if h.node != node
                      and (cell is None or h.node in cell)
                      and capacity.has_traits(h, traits)]
        chosen = capacity.plan(candidates, timelines, need, 1, now,
                               capacity.FOREVER)
        if not chosen:
            return None
        uses.setdefault(chosen[0], {})['-moving-%s' % node] = need
        return chosen[0]

    def _told(self, row, action: str, node: Optional[str]) -> None:
        """Tell the owner what was done (server.preempt.end)."""
        notice = self.outbox.claim_for(dict(
            id=uuidutils.generate_uuid(), lease_id='',
            event_type='server.preempt.end', payload=jsonutils.dumps({
                'server_id': row.instance_uuid,
                'project_id': row.project_id, 'action': action,
                'node': node})))
        db_notices.add(self.ctx, [notice], self.now())
        if self.outbox.notifier:
            self.outbox.send([notice])

    # ------------------------------------------------------------ return

    def _bring_back(self, row, server, hosts, uses, timelines, now) -> None:
        """Unshelve a server shelved for want of room, once a node holds
        it without taking what leases need soon (the scheduler chooses).
        """
        uuid = row.instance_uuid
        if row.state == status.UNSHELVING:
            if row.claimed_by != self.engine_id and not self._claim(
                    row, status.UNSHELVING):
                return
            if _busy(server):
                return
            done = status.RUNNING if server['status'] == 'ACTIVE' else \
                status.SHELVED
            db_preemptibles.release(self.ctx, uuid, self.engine_id, done,
                                    node=_node(server))
            return
        if server['status'] == 'ACTIVE' and not _busy(server):
            # Its owner unshelved it: watched again like any other.
            if self._claim(row, status.UNSHELVING):
                db_preemptibles.release(self.ctx, uuid, self.engine_id,
                                        status.RUNNING, node=_node(server))
            return
        if row.on_preempt != 'shelve' or \
                server['status'] != 'SHELVED_OFFLOADED' or _busy(server):
            return
        try:
            need, traits = _asks(server)
        except exception.Uncounted as e:
            LOG.warning('Preemptible server %s is not unshelved: its '
                        'flavor %s', uuid, e)
            return
        soon = now + (CONF.reservation.preempt_notice +
                      CONF.reservation.preempt_margin) * 60
        # Only where Nova's scheduler may put it: an unshelve it refuses
        # would be asked again at every pass.
        room = [h.node for h in _crowded(hosts, uses)
                if capacity.has_traits(h, traits) and capacity.fits(
                    h, timelines.get(h.node), need, now, soon)]
        if not room or not self._claim(row, status.UNSHELVING):
            return
        uses.setdefault(room[0], {})['-unshelving-%s' % uuid] = need
        try:
            self.nova.action(uuid, 'unshelve')
        except (exception.NovaError, exception.NovaNotFound) as e:
            LOG.warning('Preemptible server %s: unshelve failed: %s', uuid,
                        e)
            db_preemptibles.release(self.ctx, uuid, self.engine_id,
                                    status.SHELVED)

    # ------------------------------------------------------------ helpers

    def _claim(self, row, new_state: str) -> bool:
        if not db_preemptibles.claim(
                self.ctx, row, new_state, self.engine_id, self.now(),
                CONF.reservation.event_claim_timeout):
            return False
        row.state, row.claimed_by = new_state, self.engine_id
        return True

    def _metadata(self, uuid: str, items: dict) -> bool:
        """Set the server's metadata `items`; whether Nova did."""
        try:
            self.nova.set_metadata(uuid, items)
        except (exception.NovaError, exception.NovaNotFound) as e:
            LOG.debug('Preemptible server %s: metadata not set: %s', uuid, e)
            return False
        return True
