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

"""What each event does to a lease's servers.

Every action is idempotent and never waits: it moves each server one step
and raises `Pending` while Nova is still working, so that the engine looks
again later and other events are not held up.  Running an action twice
does no harm.  An action is given the lease's details (the store's
`leases.Details`) and returns the lease's status once it is done (or
None).  It reads the store but does not write it: it asks for its writes,
the lease domain's (`lease.outcomes.Writes`; `lease.bindings`), which the
engine makes with the event's outcome and the lease's status, in one
transaction.  What a reservation's start and end do in Nova besides its
servers (aggregates, flavors, floating IPs, compute services) is its
kind's (`lease.kinds.base.Kind.start`, `end`).
"""

import functools
from typing import Optional

from oslo_log import log as logging

from nova_reservation.clients import trusts
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation import enforcement
from nova_reservation.engine import nova_client
from nova_reservation.engine import reasons
from nova_reservation.engine import volumes
from nova_reservation import exception
from nova_reservation.lease import bindings as lease_bindings
from nova_reservation.lease import kinds
from nova_reservation import marks
from nova_reservation.schemas import leases as schemas
from nova_reservation import status

# The store, for the actions' reads.
STORE = db_api.Context()

LOG = logging.getLogger(__name__)


class Pending(Exception):
    """Nova has not finished yet: look again soon."""


def _server(nova, uuid):
    try:
        return nova.server(uuid)
    except exception.NovaNotFound:
        return None


def _state(server) -> str:
    """Nova's vm_state: the API's ``status`` is what users see, which the
    hook itself changes (RESERVED).
    """
    return server['OS-EXT-STS:vm_state']


def _busy(server) -> bool:
    return (_state(server) == 'building' or
            server.get('OS-EXT-STS:task_state') is not None)


def _hold_slot(nova, lease, binding, server, writes) -> None:
    """Tie the server to a slot of its reservation (race-safe)."""
    node = server.get('OS-EXT-SRV-ATTR:hypervisor_hostname')
    host = server.get('OS-EXT-SRV-ATTR:host')
    slot = db_ledger.slot_for(STORE, binding.reservation_id, server['id'],
                              node)
    if slot is None:
        raise exception.ActionFailed(
            'lease %s has no free slot left for %s' % (
                lease.name, reasons.named(lease, binding, server)))
    slot_host = None
    if slot.host is None and not (host and slot.node == node):
        # A slot no sibling landed on: the start needs its node's host.
        slot_host = nova.host_of_node(slot.node)
    writes.add(lease_bindings.hold_slot, binding.reservation_id,
               server['id'], node, host, slot_host)
    _tag(nova, lease, server)


def _tag(nova, lease, server) -> None:
    if marks.lease_tag(lease.id) not in (server.get('tags') or []):
        nova.add_tag(server['id'], marks.lease_tag(lease.id))


def _step_each(nova, lease, bindings, step, error_fails=True,
               gone=None) -> None:
    """Move each server of the lease one step with `step(binding, server,
    state)`, which returns True while Nova still has work to do.  A server
    that is gone is skipped, or handed to `gone(binding)`, which returns
    True while it has work to do; one in ERROR fails the event if
    `error_fails`.
    """
    waiting = False
    for binding in bindings:
        server = _server(nova, binding.instance_uuid)
        if server is None:
            waiting = bool(gone and gone(binding)) or waiting
            continue
        state = _state(server)
        if state == 'error' and error_fails:
            raise exception.ActionFailed(
                reasons.failed(lease, binding, server))
        if (_busy(server) and state != 'error') or step(binding, server,
                                                        state):
            waiting = True
    if waiting:
        raise Pending()


def reserve(nova, details, now, writes) -> None:
    """A future lease's servers that run give their resources back until
    the start: shelved and offloaded.  Only leases made by an earlier
    release have this event: a boot now makes its servers reserved
    (`hooks.reserved`).
    """
    lease = details.lease
    if now >= lease.start_at:
        return   # The start event takes over.

    def step(binding, server, state):
        if state in ('active', 'stopped'):
            _hold_slot(nova, lease, binding, server, writes)
            nova.action(server['id'], 'shelve')
            return True
        if state == 'shelved':
            nova.action(server['id'], 'shelveOffload')
            return True
        if state == 'shelved_offloaded' and binding.state != status.RESERVED:
            writes.add(lease_bindings.set_state, binding.instance_uuid,
                       status.RESERVED)
        return False
    _step_each(nova, lease, details.bindings, step)


def start(nova, details, now, writes) -> str:
    """Each server runs on its reserved node; reserved hosts and flavors
    are handed to the project.
    """
    lease = details.lease
    if _recurring_servers(details):
        before = db_leases.occurrence(STORE, lease, later=False)
        if before is not None and any(
                b.state not in (status.ENDED, status.FAILED)
                for b in db_bindings.of_lease(STORE, before.id)):
            # Its servers are still the occurrence before's.
            raise Pending()
    for res in kinds.in_phases(details.reservations):
        kinds.of(res.resource_type).start(nova, lease, res, writes)

    def step(binding, server, state):
        if state == 'active':
            _hold_slot(nova, lease, binding, server, writes)
            if binding.state != status.ACTIVE:
                writes.add(lease_bindings.set_state, binding.instance_uuid,
                           status.ACTIVE)
            return False
        if state == 'shelved_offloaded':
            slot = db_ledger.slot_of(STORE, binding.reservation_id,
                                     server['id'])
            if binding.state == status.UNSHELVING:
                # Asked before, and Nova is done: it could not.
                writes.add(lease_bindings.set_state, binding.instance_uuid,
                           status.RESERVED)
                raise exception.ActionFailed('%s could not start%s' % (
                    reasons.named(lease, binding, server),
                    reasons.fault(lease, binding, server)))
            if lease.trust_id and not _owners_volumes(lease, binding,
                                                      server):
                return True   # Cinder makes them
            args = {'host': slot.host} if slot and slot.host else None
            writes.add(lease_bindings.set_state, binding.instance_uuid,
                       status.UNSHELVING)
            nova.action(server['id'], 'unshelve', args)
        elif state == 'shelved':
            nova.action(server['id'], 'unshelve')
        elif state == 'stopped':
            nova.action(server['id'], 'os-start')
        return True
    _step_each(nova, lease, details.bindings, step,
               gone=functools.partial(_release_volumes, lease))
    return status.ACTIVE


def _owners_volumes(lease, binding, server) -> bool:
    """The volumes the server boots with, made as the lease's owner
    (`volumes`): True once made.
    """
    try:
        return volumes.prepare(lease.trust_id, server['id'])
    except exception.VolumeFailed as e:
        raise exception.ActionFailed('%s of lease %s: %s' % (
            reasons.named(lease, binding, server), lease.name,
            e if reasons.owners(lease, binding) else 'its volumes failed'))


def _release_volumes(lease, binding) -> bool:
    """For the gone server of `binding`, deleted while its start made its
    volumes as the owner, which Nova's delete may not have seen
    (`volumes.release`): True while that is not done.
    """
    if not lease.trust_id:
        return False   # none made as the owner
    try:
        return not volumes.release(lease.trust_id, binding.instance_uuid)
    except exception.VolumeFailed as e:
        LOG.warning('Lease %s: the volumes made for server %s, deleted '
                    'at its start, are left: %s', lease.id,
                    binding.instance_uuid, e)
        return False


def _forget_trust(lease) -> None:
    """The lease is over: its trust goes, unless another occurrence of
    its series still needs it.
    """
    if not lease.trust_id or db_leases.trust_in_use(STORE, lease.trust_id,
                                                    lease.id):
        return
    try:
        trusts.delete(lease.trust_id)
    except exception.TrustUnavailable as e:
        LOG.warning('Lease %s: its trust %s is left: %s', lease.id,
                    lease.trust_id, e)


def end(nova, details, now, writes) -> Optional[str]:
    """The lease's on_end action on each of its servers.  Their slots are
    unbound with the lease's new status (`lease.outcomes.record`).
    """
    lease = details.lease
    # A recurring server lease's servers go on to its next occurrence.
    following = (db_leases.occurrence(STORE, lease, later=True)
                 if lease.status != status.DELETING and
                 _recurring_servers(details) else None)
    if following is not None:
        _pass_on(nova, details, following, writes)
        enforcement.on_end(lease)
        return status.TERMINATED
    # A soft end that could not extend ends as a plain one; the servers of
    # a refused lease, which never ran, go.
    on_end = ('delete' if lease.on_end == schemas.EXTEND_IF_FREE or
              lease.status == status.REFUSED else lease.on_end)

    # The shelve's image and the snapshot are the owner's.
    owner = (nova_client.owner(lease.trust_id) if lease.trust_id and
             on_end in ('shelve', 'snapshot') else nova)

    def as_owner(binding, name: str, args=None):
        uuid = binding.instance_uuid
        # A server of a project the reservation is shared with is not the
        # owner's to shelve or snapshot.
        if owner is not nova and binding.project_id in (
                None, lease.project_id):
            try:
                return owner.action(uuid, name, args)
            except volumes.GONE as e:
                LOG.warning('Lease %s: %s of server %s as the engine: the '
                            'owner\'s trust can not be used: %s', lease.id,
                            name, uuid, e)
        return nova.action(uuid, name, args)

    def step(binding, server, state):
        if binding.state == status.ENDED:
            return False
        if on_end == 'shelve' and not state.startswith('shelved'):
            as_owner(binding, 'shelve')
            return True
        if on_end == 'snapshot' and binding.image_id is None:
            image = as_owner(binding, 'createImage', {
                'name': '%s-%s' % (lease.name, server['name'])})
            writes.add(lease_bindings.set_snapshot, binding.instance_uuid,
                       image['image_id'])
            return True
        if on_end in ('delete', 'snapshot'):
            nova.delete(server['id'])
        writes.add(lease_bindings.set_state, binding.instance_uuid,
                   status.ENDED)
        return False
    # A server in ERROR still gets the end action (deleted, say); the trust
    # serves until the volumes of a server deleted at the start are
    # released.
    _step_each(nova, lease, details.bindings, step, error_fails=False,
               gone=functools.partial(_release_volumes, lease))
    for res in kinds.in_phases(details.reservations):
        kinds.of(res.resource_type).end(nova, lease, res, writes)
    _forget_trust(lease)
    enforcement.on_end(lease)   # told, never waited on
    if lease.status == status.REFUSED:
        return None   # it stays refused, with its reason
    return (status.DELETED if lease.status == status.DELETING
            else status.TERMINATED)


def _recurring_servers(details) -> bool:
    """Whether the lease is an occurrence of a recurring server lease,
    whose servers go from one occurrence to the next.
    """
    return details.lease.series_id is not None and any(
        kinds.of(r.resource_type).made_by_boot for r in details.reservations)


def _pass_on(nova, details, following, writes) -> None:
    """Between two occurrences of a recurring lease its servers hold
    nothing: shelved and offloaded, they go on to the next occurrence,
    whose start unshelves them.
    """
    lease = details.lease
    reservations = db_leases.reservations(STORE, following.id)

    def step(binding, server, state):
        if binding.state == status.ENDED or not reservations:
            return False
        if state == 'error':
            # Not shelved: it stays as it is, and holds no later slot.
            if binding.state != status.FAILED:
                writes.add(lease_bindings.set_state, binding.instance_uuid,
                           status.FAILED)
            return False
        if state in ('active', 'stopped', 'paused', 'suspended'):
            nova.action(server['id'], 'shelve')
            return True
        if state == 'shelved':
            nova.action(server['id'], 'shelveOffload')
            return True
        if state == 'shelved_offloaded':
            writes.add(lease_bindings.pass_on, binding.instance_uuid,
                       following.id, reservations[0].id)
        return False
    _step_each(nova, lease, details.bindings, step, error_fails=False)
    for res in kinds.in_phases(details.reservations):
        kinds.of(res.resource_type).end(nova, lease, res, writes)


def bind(nova, details, now, writes) -> None:
    """Servers booted into a reservation hold the slot on their node (those
    on reserved whole hosts hold none: the host is theirs).  A server that
    failed to boot is its own failure, not the lease's: its slot is free
    for another boot, and the lease says so (degraded, with the reason).
    """
    lease = details.lease
    whole_hosts = {r.id for r in details.reservations
                   if kinds.of(r.resource_type).whole_hosts}

    def step(binding, server, state):
        if state == 'error':
            reason = reasons.failed(lease, binding, server)
            LOG.warning('Lease %s: %s (server %s); its slot is free again',
                        lease.id, reason, binding.instance_uuid)
            writes.add(lease_bindings.server_failed, binding.instance_uuid,
                       lease.id, reason)
            return False
        if binding.state == status.BOOTING:
            if binding.reservation_id in whole_hosts:
                _tag(nova, lease, server)
            else:
                _hold_slot(nova, lease, binding, server, writes)
            writes.add(lease_bindings.set_state, binding.instance_uuid,
                       status.ACTIVE)
        return False
    _step_each(nova, lease, [b for b in details.bindings
                             if b.state == status.BOOTING], step,
               error_fails=False)


def notify(nova, details, now, writes) -> None:
    """Nothing to do to the servers: the event's notification
    (lease.event.before_start_lease, before_end_lease) tells that the
    start, or the end, is near.
    """


ACTIONS = {'reserve': reserve, 'start': start, 'before_start': notify,
           'before_end': notify, 'end': end, 'bind': bind}
