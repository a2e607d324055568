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
"""Boots, as the hook sees ``POST /servers``: a boot with
``lease_params`` becomes a lease (through the lease service) whose
servers Nova makes reserved or builds at once; a boot into a reservation
takes its slots; a preemptible boot is marked; the rest pass unchanged.
"""

import contextlib
import json
from typing import Optional

from nova.compute import api as compute_api
from nova import exception as nova_exception
from nova import objects
from oslo_log import log as logging
import webob

from nova_reservation import capacity
from nova_reservation.clients import flavors
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import hosts as db_hosts
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation import exception
from nova_reservation.hooks.faults import fault
from nova_reservation.hooks.faults import fault_of
from nova_reservation.hooks.faults import json_response
from nova_reservation.hooks.faults import lease_view_status
from nova_reservation.hooks.faults import message_of
from nova_reservation.hooks.faults import NOVA_JSON_TYPES
from nova_reservation.hooks import params
from nova_reservation.hooks import projects
from nova_reservation.hooks import reservation_boots
from nova_reservation.hooks import reserved
from nova_reservation.lease import approvals as lease_approvals
from nova_reservation.lease import bindings as lease_bindings
from nova_reservation.lease import idempotency
from nova_reservation.lease import request as plan_request
from nova_reservation.lease import resource_types
from nova_reservation.lease import service as lease_service
from nova_reservation.lease import shares
from nova_reservation.lease import write as lease_write
from nova_reservation.ledger import memory as ledger_mod
from nova_reservation import marks
from nova_reservation import notifications
from nova_reservation import status
from nova_reservation import validation

LOG = logging.getLogger(__name__)
CONF = conf.CONF

HINT_KEYS = ('os:scheduler_hints', 'OS-SCH-HNT:scheduler_hints')
SLOTS_HINT = ledger_mod.SLOTS_HINT
# Server group policies as the ledger's affinity (soft ones bind nothing).
GROUP_AFFINITY = {'affinity': True, 'anti-affinity': False}


class Boots(reservation_boots.ReservationBoots):

    def __init__(self, app) -> None:
        self.app = app
        self.planner = lease_write.shared()
        self.ctx = db_api.Context()

    def create(self, req: webob.Request):
        if req.content_type not in NOVA_JSON_TYPES:
            return req.get_response(self.app)   # Nova refuses it.
        try:
            body = validation.load_json('body', req.body or b'{}')
        except exception.InvalidParam as e:
            return fault_of(e)
        server = body.get('server') if isinstance(body, dict) else None
        if not isinstance(server, dict):
            return req.get_response(self.app)   # Nova reports it.
        hints = next((body[k] for k in HINT_KEYS if k in body), None)
        if not isinstance(hints, dict):
            hints = {}
            if 'os:scheduler_hints' not in body:
                body['os:scheduler_hints'] = hints
        ctx = req.environ['nova.context']
        try:
            params.check_metadata(server)
            # The boot's flavor, read once (None: Nova says what is wrong).
            found = flavors.of_ref(ctx, server.get('flavorRef'))
            preempt = params.preemptible_request(
                hints, dict(found.extra_specs) if found else {})
            lease = params.lease_request(
                hints, db_api.utcnow(), CONF.reservation.max_lease_duration,
                CONF.reservation.max_advance)
            forced = params.forced_host(server)
            if lease is None:
                rid = params.reservation_hint(hints)
                fallback = params.fallback_hint(hints, rid)
                hints.pop('reservation_fallback', None)
                if rid == shares.NONE:
                    hints.pop('reservation')
                    req.body = json.dumps(body).encode('utf-8')
                try:
                    done = self._into_reservation(
                        req, ctx, server, rid, hints, body, found, forced,
                        open_match=preempt is None and not forced)
                except exception.ReservationUnusable as e:
                    if not fallback:
                        raise
                    return self._fallback(req, ctx, server, hints, body,
                                          rid, str(e))
                if done is not None:
                    return done
                if preempt is not None:
                    if forced:
                        raise exception.InvalidParam(
                            'availability_zone', 'a preemptible boot can '
                            'not force a host: the scheduler keeps it off '
                            'what running leases and servers need')
                    self._check_preemptible(server, found)
                    return self._boot_preemptible(req, ctx, server, hints,
                                                  body, preempt)
                if forced:
                    self._check_forced(ctx, server, forced, found)
                    return req.get_response(self.app)
                # A project whose boots are leases: this one too.
                lease = projects.default_lease(ctx, server)
                if lease is None:
                    return req.get_response(self.app)
            if 'reservation' in hints:
                raise exception.InvalidParam(
                    'reservation', 'can not be given with lease_params: '
                    'the lease makes its own reservation')
            if forced:
                raise exception.InvalidParam(
                    'availability_zone', 'a leased server can not force a '
                    'host: the lease chooses its node')
            count = params.server_count(
                server, CONF.reservation.max_servers_per_lease)
            flavor = params.flavor(server.get('flavorRef'), found)
            digest = idempotency.digest(body)
            # A retried boot is answered before the rest of its request is
            # read again (its server group may be gone since).
            made = lease_service.earlier_create(ctx, lease.client_token,
                                                digest)
            if made is None:
                made = lease_service.create(ctx, self._draft(
                    lease, flavor, params.need(server, found), count,
                    self._group_affinity(ctx, hints), digest))
            if made.again:
                return self._same_boot(ctx, body, made)
            lease_id, waits = made.lease_id, made.waits
            reservation_id, = made.reservation_ids
        except exception.ReservationError as e:
            return fault_of(e)

        slots = db_ledger.slots(self.ctx, reservation_id)
        hints['reservation'] = reservation_id
        hints[SLOTS_HINT] = [str(s.id) for s in slots]
        metadata = server.setdefault('metadata', {})
        if isinstance(metadata, dict):
            metadata[marks.LEASE_ID] = lease_id
            # Nova's tables hold three-byte UTF-8 only (the lease keeps
            # the name as given).
            metadata[marks.LEASE_NAME] = ''.join(
                c if c <= '\uffff' else '\ufffd' for c in lease.name)[:255]
        req.body = json.dumps(body).encode('utf-8')
        # A future or waiting lease's servers are made reserved: nothing is
        # scheduled or built before the start.
        try:
            boot = (contextlib.nullcontext() if lease.immediate and not waits
                    else reserved.Boot(
                        reservation_id, slots, [marks.lease_tag(lease_id)],
                        lease_service.waiting_cell(reservation_id)
                        if waits else None))
        except exception.ReservationError as e:
            lease_service.discard(lease_id)
            return fault_of(e)
        try:
            with boot:
                resp = req.get_response(self.app)
        except Exception:
            LOG.exception('Boot of lease %s failed; removing it', lease_id)
            lease_service.discard(lease_id)
            raise
        if resp.status_int >= 400:
            LOG.info('Nova refused the boot of lease %s (%s): removing the '
                     'lease', lease_id, resp.status)
            lease_service.discard(lease_id)
            if resp.status_int >= 500:
                # A service Nova needs failed (Neutron, Cinder, Glance):
                # nothing is kept, and the same boot may work later.
                return fault(503, 'the servers of the lease could not be '
                             'made: %s; nothing of the lease is kept, try '
                             'again' % message_of(resp))
            return resp
        # Nova made the servers: from here the lease is kept whatever
        # happens; one left CREATING is finished by the engine's reconciler
        # from the servers' metadata.
        try:
            uuids = self._created(ctx, resp)
            lease_status, state = status.made(lease.immediate, waits,
                                              made.awaiting)
            if not lease_bindings.bind_servers(
                    lease_id, reservation_id, uuids, lease_status=lease_status,
                    state=state, take_slots=not waits):
                return self._gone_while_booting(ctx, lease_id, uuids)
            if made.awaiting:
                lease_approvals.requested(lease_id)
        except Exception:
            LOG.exception('Lease %s: its servers are left for the engine to '
                          'bind', lease_id)
            return resp
        self._show_reservation(resp, lease, lease_id, reservation_id,
                               status.WAITING if waits else
                               status.PENDING_APPROVAL if made.awaiting else
                               status.ACTIVE if lease.immediate
                               else status.SHOWN_RESERVED)
        try:
            notifications.api_notifier().lease('create', lease_id)
        except Exception:
            LOG.exception('Lease %s: lease.create could not be sent',
                          lease_id)
        return resp

    @staticmethod
    def _check_preemptible(server: dict, found) -> None:
        """InvalidParam naming flavorRef if a preemptible server of the
        boot's flavor would ask for classes a lease's slot holds beyond
        vCPU, RAM and disk: the engine moves preemptible servers off by
        those three alone.
        """
        extras = params.extras(server, found)
        if extras:
            raise exception.InvalidParam(
                'flavorRef', 'the flavor asks for %s, which a preemptible '
                'server can not take: it yields vCPU, RAM and disk to '
                'leases, not these' % capacity.extras_text(extras))

    def _boot_preemptible(self, req: webob.Request, ctx, server: dict,
                          hints: dict, body: dict,
                          preempt: params.PreemptibleRequest):
        """A boot that may use capacity promised to leases not started:
        marked for the scheduler (the hint, kept in the request spec for
        any later move) and on the server (metadata), and recorded for the
        engine, which moves it off in time.
        """
        hints['preemptible'] = 'true'
        hints['on_preempt'] = preempt.on_preempt
        metadata = server.setdefault('metadata', {})
        if isinstance(metadata, dict):
            metadata[marks.PREEMPTIBLE] = 'true'
            metadata[marks.ON_PREEMPT] = preempt.on_preempt
        req.body = json.dumps(body).encode('utf-8')
        resp = req.get_response(self.app)
        if resp.status_int >= 400:
            return resp
        try:
            db_preemptibles.add(self.ctx, self._created(ctx, resp),
                                ctx.project_id, preempt.on_preempt)
        except Exception:
            # The engine finds it by its metadata.
            LOG.exception('Preemptible boot: its servers are left for the '
                          'engine to record')
        return resp

    def _same_boot(self, ctx, body: dict,
                   made: lease_service.Made) -> webob.Response:
        """The answer to a boot retried with its lease's client token: the
        servers the first made.
        """
        lease = db_leases.get(self.ctx, made.lease_id)
        uuids = [b.instance_uuid
                 for b in db_bindings.of_lease(self.ctx, lease.id)]
        if not uuids:
            return fault(409, 'client_token: lease %s, made with this '
                         'token, has no server left' % lease.id)
        if body.get('return_reservation_id') in (True, 'True', 'true'):
            return json_response(202, {'reservation_id': compute_api.API().get(
                ctx, uuids[0]).reservation_id})
        return json_response(202, {'server': {'id': uuids[0], 'reservation': {
            'lease_id': lease.id, 'lease_name': lease.name,
            'reservation_id': made.reservation_ids[0],
            'status': lease_view_status(lease, db_api.utcnow())}}})

    @staticmethod
    def _draft(lease: params.LeaseRequest, flavor, need: capacity.Need,
               count: int, affinity: Optional[bool],
               digest: str) -> lease_service.Draft:
        """The lease of a boot with ``lease_params``: `count` slots of
        `need` (of `flavor`), its servers made by the boot.
        """
        values = dict(name=lease.name, start_at=lease.start,
                      end_at=lease.end, on_end=lease.on_end,
                      max_extensions=lease.max_extensions,
                      before_end_minutes=lease.before_end)
        if lease.waiting:
            values.update(lease.waiting.columns(lease.immediate))
        return lease_service.Draft(
            values, [plan_request.ReservationRequest(
                resource_type=resource_types.SERVER, count=count,
                need=need.resources, traits=need.traits,
                extras=need.extras, flavor_id=flavor.flavorid,
                flavor_name=flavor.name,
                affinity=affinity)],
            list(lease.occurrences) if lease.occurrences else None,
            token=lease.client_token, digest=digest, servers=True)

    @staticmethod
    def _created(ctx, resp) -> list:
        """The servers a boot made: all of them, for a multi-create, and
        also when Nova answers with the boot's reservation_id only
        (``return_reservation_id``).
        """
        data = resp.json_body
        api = compute_api.API()
        rid = data.get('reservation_id')
        if rid is None:
            first = data.get('server', {}).get('id')
            rid = api.get(ctx, first).reservation_id
        return sorted(i.uuid for i in api.get_all(
            ctx, search_opts={'reservation_id': rid}))

    @staticmethod
    def _show_reservation(resp, lease, lease_id, reservation_id,
                          state: str) -> None:
        data = resp.json_body
        if 'server' in data:
            data['server']['reservation'] = dict(
                lease_id=lease_id, lease_name=lease.name,
                reservation_id=reservation_id, status=state)
            resp.json_body = data

    @staticmethod
    def _gone_while_booting(ctx, lease_id: str, uuids: list):
        """The lease was deleted while Nova made its servers: they go too.
        """
        api = compute_api.API()
        for uuid in uuids:
            try:
                api.delete(ctx, api.get(ctx, uuid))
            except nova_exception.InstanceNotFound:
                pass
        return fault(409, 'lease_params: lease %s was deleted while its '
                     'servers were made; they are deleted too' % lease_id)

    def _group_affinity(self, ctx, hints: dict) -> Optional[bool]:
        """The slots of a leased boot in a server group follow its policy:
        each on a node of its own (anti-affinity), or all on one.
        """
        group = params.single_hint(hints, 'group')
        if group is None:
            return None
        try:
            policy = objects.InstanceGroup.get_by_uuid(ctx, str(group)).policy
        except (nova_exception.InstanceGroupNotFound, ValueError):
            raise exception.InvalidParam('group', 'server group %s not found'
                                         % str(group)[:64])
        return GROUP_AFFINITY.get(policy)

    def _check_forced(self, ctx, server: dict, forced: tuple,
                      found) -> None:
        """A forced destination skips the scheduler's filters: the hook
        applies the filter's rule for an ordinary boot to it instead.
        """
        host, node = forced
        need = params.counted_need(server, found)
        nodes = {node} if node else set()
        if host and not node:
            try:
                nodes = {n.hypervisor_hostname for n in
                         objects.ComputeNodeList.get_all_by_host(
                             ctx.elevated(), host)}
            except nova_exception.ComputeHostNotFound:
                return   # Nova says so itself.
        where = node or host
        enrolled = {h.hypervisor_hostname
                    for h in db_hosts.get_all(self.ctx)}
        if nodes & enrolled:
            raise exception.Conflict(
                'availability_zone: %s is reservable: only its leases '
                'boot there' % where)
        extras = params.extras(server, found)
        if not self.planner.fits_for_good(nodes, need, extras):
            raise exception.Conflict(
                'availability_zone: %s has no room for %s that no '
                'lease has been promised' % (where, need.describe() + (
                    ' and ' + capacity.extras_text(extras)
                    if extras else '')))
