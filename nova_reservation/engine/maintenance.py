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

"""Maintenance windows in Nova: before the start, the ordinary servers on
a window's nodes are told and moved off.  (At the start, the nova-compute
services of its nodes are disabled with its reason, and at the end enabled
again, by the window's kind: `lease.kinds.maintenance`.)

`preempt_notice` minutes before the start, each ordinary server on the
nodes is told (metadata ``reservation:maintenance_at``, notification
``server.maintenance.warning``); `preempt_margin` minutes before it, the
engine asks Nova to live-migrate it (the scheduler, whose filter sees the
nodes held whole, picks where).  A server that can not go (not running,
or its migration failed) is listed in the window's ``unmoved_servers``
with the reason, and its owner told (lease.update of the window).  A
lease's server whose slot the window moved to another node is told and
live-migrated the same way, to that node.  The
preemptible servers are the preemption's: the window's slots are promises
like any other, so they are told, moved off or shelved before it.
"""

import datetime
import json
from typing import Optional

from oslo_log import log as logging

from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import maintenance as db_maintenance
from nova_reservation import exception
from nova_reservation.lease import maintenance as lease_maintenance
from nova_reservation import marks

CONF = conf.CONF
LOG = logging.getLogger(__name__)


def approach(nova, now: datetime.datetime, notifier=None) -> None:
    """Tell and move the ordinary servers off the nodes of the windows
    that start within `preempt_notice` minutes, and list those that can
    not go.
    """
    ctx = db_api.Context()
    found = db_maintenance.approaching(ctx, now + datetime.timedelta(
        minutes=CONF.reservation.preempt_notice), now)
    if not found:
        return
    on_nodes = {n for res, _ in found for n in json.loads(res.hosts or '[]')}
    servers = [s for s in nova.servers() if not _preemptible(s) and s.get(
        'OS-EXT-SRV-ATTR:hypervisor_hostname') in on_nodes]
    # A server in a slot follows it (the window moved it off its nodes);
    # an ordinary one goes where the scheduler picks.
    slot_node = db_maintenance.slot_nodes(ctx, [s['id'] for s in servers],
                                          now)
    for res, lease in found:
        nodes = set(json.loads(res.hosts or '[]'))
        unmoved = []
        for server in servers:
            node = server.get('OS-EXT-SRV-ATTR:hypervisor_hostname')
            target = slot_node.get(server['id'])
            if node not in nodes or target in nodes or (
                    target is None and not _ordinary(server)):
                # Elsewhere; its slot ends before the window; a host
                # reservation's server (which its lease ends).
                continue
            why = _step(nova, res, lease, server, node, now, notifier,
                        target)
            if why:
                unmoved.append({'server_id': server['id'], 'node': node,
                                'reason': why})
        if lease_maintenance.set_unmoved(res.id, unmoved):
            LOG.warning('Maintenance window %s: servers not moved off: %s',
                        lease.id, unmoved or 'none')
            if notifier:
                notifier.lease('update', lease.id)


def _busy(nova, uuid: str) -> bool:
    """Whether Nova is at the server now (a task under way)."""
    try:
        return nova.server(uuid).get('OS-EXT-STS:task_state') is not None
    except exception.NovaError:
        return False


def _preemptible(server: dict) -> bool:
    """The preemption's: it moves them off before any lease."""
    metadata = server.get('metadata') or {}
    return metadata.get(marks.PREEMPTIBLE) == 'true'


def _ordinary(server: dict) -> bool:
    """Neither preemptible nor a lease's (its slot is the ledger's)."""
    return not _preemptible(server) and not any(
        t.startswith(marks.LEASE_TAG_PREFIX) for t in server.get('tags')
        or ())


def _step(nova, res, lease, server, node: str, now: datetime.datetime,
          notifier, target: Optional[str] = None) -> str:
    """One step of a server off a window's node (to node `target`, where
    its slot now is, if given; else where the scheduler picks): why it
    can not go ('': it goes, or may yet).
    """
    uuid = server['id']
    start = lease.start_at.isoformat() + 'Z'
    metadata = server.get('metadata') or {}
    if metadata.get(marks.MAINTENANCE_AT) != start:
        nova.set_metadata(uuid, {marks.MAINTENANCE_AT: start})
        if notifier:
            notifier.send('server.maintenance.warning', {
                'server_id': uuid, 'project_id': server.get('tenant_id'),
                'node': node, 'start': start, 'reason': res.reason,
                'lease_id': lease.id})
    if now < lease.start_at - datetime.timedelta(
            minutes=CONF.reservation.preempt_margin):
        return ''
    if server.get('OS-EXT-STS:task_state') is not None:
        return ''   # Nova is at it
    if server['status'] != 'ACTIVE':
        return ('it is %s: only a running server migrates live'
                % server['status'])
    if metadata.get(marks.MAINTENANCE_MOVE) == start:
        return 'its live migration did not move it: %s' % (
            (server.get('fault') or {}).get('message') or 'no reason given')
    try:
        host = nova.host_of_node(target) if target else None
    except exception.NovaNotFound:
        return 'node %s of its slot is gone' % target
    try:
        # A named host, not forced: the scheduler's filters still check
        # it (the reservation filter lets the server onto its slot's node).
        nova.action(uuid, 'os-migrateLive', {'host': host,
                                             'block_migration': 'auto'})
    except exception.NovaError as e:
        # Another engine asked first: Nova answers 409, or 500 where its
        # check of the task state lost the race; either way the server
        # now has a task, and the next pass sees where it went.
        if ' 409 ' in str(e) or _busy(nova, uuid):
            return ''
        return 'Nova would not live-migrate it: %s' % str(e)[:200]
    nova.set_metadata(uuid, {marks.MAINTENANCE_MOVE: start})
    LOG.info('Maintenance window %s: server %s asked to leave %s',
             lease.id, uuid, node)
    return ''
