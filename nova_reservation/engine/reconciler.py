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

"""The reconciler: compares the store with Nova and repairs what differs.

Faults leave traces that no event will clear: a nova-api killed between
writing a lease and binding its servers, a lease deleted while its boot was
in flight, a server deleted behind the hook's back, a boot or a lease
change whose nova-api died holding slots.  At ``[reservation]
reconcile_interval`` the engine compares, and each repair is logged and
told (``lease.update``, or ``lease.delete`` for a lease removed).
"""

import datetime
from typing import Callable, List

from oslo_db import exception as db_exception
from oslo_log import log as logging

from nova_reservation.capacity import epoch
from nova_reservation.clients import cells
from nova_reservation.clients import trusts
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import events as db_events
from nova_reservation.db import holds as db_holds
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation import exception
from nova_reservation.lease import approvals
from nova_reservation.lease import bindings as lease_bindings
from nova_reservation.lease import service as lease_service
from nova_reservation.lease import write as lease_write
from nova_reservation import marks
from nova_reservation import status

LOG = logging.getLogger(__name__)
CONF = conf.CONF


class Reconciler:

    def __init__(self, nova, notifier=None,
                 clock: Callable[[], float] = None) -> None:
        self.nova = nova
        self.notifier = notifier
        self.clock = clock
        self.ctx = db_api.Context()
        # Boot claims seen by the previous pass: one still there now
        # belongs to a boot that will never finish.
        self._claims: set = set()
        # Servers deleted half made whose leftovers in a cell could not be
        # cleared yet.
        self._uncleared: set = set()
        # Trusts to the engine that no lease held at the previous pass.
        self._unheld: set = set()

    def run(self) -> List[str]:
        """Compare and repair once; what was repaired, in words."""
        now = epoch.from_epoch(self.clock())
        # Read the store before Nova: anything bound after the listing is
        # not taken for gone.
        creating = db_leases.in_state(
            self.ctx, status.CREATING, now - datetime.timedelta(
                seconds=CONF.reservation.creating_timeout))
        bound = db_bindings.bound_servers(self.ctx)
        claims = db_ledger.claims(self.ctx)
        holds = db_ledger.claims(self.ctx, db_ledger.HOLD_PREFIX)
        servers = self.nova.servers()
        repairs: List[str] = []
        by_lease: dict = {}
        for server in servers:
            lease_id = (server.get('metadata') or {}).get(marks.LEASE_ID)
            if lease_id:
                by_lease.setdefault(lease_id, []).append(server)
        for uuid in sorted(self._uncleared):
            self._clear(uuid)
        self._record_preemptible(servers, repairs)
        self._finish_creating(creating, by_lease, now, repairs)
        self._end_orphans(by_lease, repairs)
        self._free_gone({s['id'] for s in servers}, bound, repairs)
        self._release_claims(claims, repairs)
        self._release_holds(holds, repairs)
        self._forget_trusts(repairs)
        for event in db_events.failed_deletions(self.ctx):
            lease_service.retry_event(event.lease_id, event.id)
            self._repaired(repairs, event.lease_id, 'update', 'its deletion '
                           'failed; tried again')
        return repairs

    def _forget_trusts(self, repairs: list) -> None:
        """Delete the trusts to the engine that no lease needs: those of
        leases that are over (Keystone was away at their end), and those of
        no lease (its nova-api died before it wrote the lease) once seen at
        two passes, as a lease may be being written with its trust.
        """
        if not trusts.enabled():
            return
        try:
            given = trusts.given()
        except Exception as e:
            # Never the end of the pass: the rest of it does not need them.
            LOG.warning('Reconciler: the trusts could not be listed: %s', e)
            return
        leases = db_leases.trusts(self.ctx)
        unheld = {t for t in given if not leases.get(t)}
        for trust in sorted(unheld):
            if trust in leases or trust in self._unheld:
                try:
                    trusts.delete(trust)
                except Exception as e:
                    LOG.warning('Reconciler: trust %s: %s', trust, e)
                    continue
                LOG.warning('Reconciler: trust %s, which no lease needs, '
                            'deleted', trust)
                repairs.append('trust %s: deleted' % trust)
        self._unheld = {t for t in unheld if t not in leases}

    def _record_preemptible(self, servers: list, repairs: list) -> None:
        """Preemptible servers that nova-api could not record (the store
        was away after Nova made them), by their metadata.
        """
        marked = {s['id']: s for s in servers
                  if (s.get('metadata') or {}).get(
                      marks.PREEMPTIBLE) == 'true'}
        known = db_preemptibles.uuids(self.ctx, marked)
        for uuid in sorted(set(marked) - known):
            server = marked[uuid]
            on_preempt = server['metadata'].get(marks.ON_PREEMPT)
            try:
                db_preemptibles.add(self.ctx, [uuid], server['tenant_id'],
                                    on_preempt if on_preempt in
                                    marks.ON_PREEMPT_ACTIONS else 'shelve')
            except db_exception.DBDuplicateEntry:
                continue   # nova-api got there meanwhile
            LOG.warning('Reconciler: preemptible server %s recorded', uuid)
            repairs.append('%s: recorded as preemptible' % uuid)

    def _repaired(self, repairs: list, lease_id: str, action: str,
                  what: str) -> None:
        LOG.warning('Reconciler: lease %s: %s', lease_id, what)
        repairs.append('%s: %s' % (lease_id, what))
        if self.notifier:
            try:
                self.notifier.lease(action, lease_id)
            except Exception as e:
                LOG.warning('lease.%s of %s could not be sent: %s', action,
                            lease_id, e)

    def _finish_creating(self, creating, by_lease, now, repairs) -> None:
        """Leases nova-api wrote and never bound: bind the servers Nova made
        for them, or remove the lease and free its capacity.
        """
        for lease in creating:
            if lease.occurrence:
                continue   # its series' first occurrence decides for it
            # Only the lease's own project's servers (the hook refuses the
            # metadata key in a boot, but a project could set it after).
            servers = [s for s in by_lease.get(lease.id, ())
                       if s.get('tenant_id') == lease.project_id]
            waits = lease.next_try_at is not None
            started = lease.start_at <= now and not waits
            if not started:
                # A future or waiting lease's servers are made reserved
                # (offloaded) before nova-api answers; one still a build
                # request is what nova-api left when it died: it goes.
                made = [s for s in servers if s.get(
                    'OS-EXT-STS:vm_state') == 'shelved_offloaded']
                for server in servers:
                    if server not in made:
                        self._delete_half_made(lease.id, server['id'],
                                               repairs)
                servers = made
            uuids = sorted(s['id'] for s in servers)
            reservations = db_leases.reservations(self.ctx, lease.id)
            if uuids and reservations:
                lease_status, state = status.made(started, waits,
                                                  approvals.awaited(lease))
                if lease_bindings.bind_servers(
                        lease.id, reservations[0].id, uuids,
                        lease_status=lease_status, state=state,
                        take_slots=not waits):
                    self._repaired(repairs, lease.id, 'update', 'left '
                                   'CREATING; its %d server(s) bound'
                                   % len(uuids))
            elif lease_service.discard(lease.id):
                self._repaired(repairs, lease.id, 'delete', 'left CREATING '
                               'with no server; removed, its capacity freed')

    def _delete_half_made(self, lease_id: str, uuid: str,
                          repairs: list) -> None:
        try:
            self.nova.delete(uuid)
        except exception.NovaNotFound:
            return
        self._repaired(repairs, lease_id, 'update', 'server %s was left half '
                       'made by a boot cut off; deleted' % uuid)
        self._clear(uuid)

    def _clear(self, uuid: str) -> None:
        """What the boot of server `uuid` left in a cell, once Nova deleted
        it; tried again at each pass until it is done.
        """
        try:
            cells.clear_cut_off(uuid)
        except Exception as e:   # a cell database or Neutron away
            LOG.warning('Server %s: what its boot left in a cell could not '
                        'be cleared now: %s', uuid, e)
            self._uncleared.add(uuid)
            return
        self._uncleared.discard(uuid)

    def _end_orphans(self, by_lease, repairs) -> None:
        """Servers of leases that are deleted go too (the lease's project's
        servers only: leases are never erased, so a lease that does not
        exist marks no server of this service).
        """
        details = db_leases.details(self.ctx, by_lease)
        for lease_id, servers in sorted(by_lease.items()):
            lease = details[lease_id].lease if lease_id in details else None
            if lease is None or lease.status != status.DELETED:
                continue
            for server in servers:
                if server.get('tenant_id') != lease.project_id:
                    continue
                try:
                    self.nova.delete(server['id'])
                except Exception as e:
                    LOG.warning('Server %s of lease %s could not be deleted '
                                'now: %s', server['id'], lease_id, e)
                    continue
                self._repaired(repairs, lease_id, 'update', 'server %s '
                               'outlived its lease; deleted' % server['id'])

    def _free_gone(self, existing: set, bound: dict, repairs) -> None:
        """Slots and bindings of servers that no longer exist are freed; a
        server lease left with none of its servers is taken down.
        """
        gone = sorted(set(bound) - existing)
        if not gone:
            return
        emptied = lease_bindings.servers_gone(gone)
        for uuid in gone:
            self._repaired(repairs, bound[uuid], 'update', 'server %s is '
                           'gone; its slot is free' % uuid)
        for lease_id in emptied:
            lease_service.take_down(lease_id)
            self._repaired(repairs, lease_id, 'delete', 'none of its servers '
                           'is left; deleted')

    def _release_holds(self, holds: set, repairs) -> None:
        """Slots held for a lease change whose nova-api died before it was
        written (`lease.write.Writer.guarded`): older than a lease may stay
        CREATING, they go.
        """
        oldest = self.clock() - CONF.reservation.creating_timeout
        for hold in sorted(holds):
            if (db_holds.hold_made(hold) < oldest and
                    lease_write.drop_hold(hold)):
                LOG.warning('Reconciler: slots held by change %s released',
                            hold)
                repairs.append('%s: released' % hold)

    def _release_claims(self, claims: set, repairs) -> None:
        """Slots held by a boot across two passes: its nova-api died."""
        for claim in sorted(claims & self._claims):
            lease_bindings.release(claim)
            LOG.warning('Reconciler: slots held by boot %s released', claim)
            repairs.append('%s: released' % claim)
        self._claims = claims - self._claims
