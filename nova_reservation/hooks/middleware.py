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

"""The boot-hint hook: a paste filter in nova-api's /v2.1 pipeline.

It turns ``POST /servers`` with the ``lease_params`` hint into a lease
whose capacity the ledger holds before Nova schedules anything, passes the
reservation to the scheduler as the ``reservation`` hint, and shows each
leased server's reservation in the server views.
"""

import contextlib
import functools
import json
import re
from typing import Optional

import jsonschema
from nova.api.openstack import common as nova_common
from nova.api.openstack.compute.schemas import server_metadata
from nova.api.openstack.compute.schemas import server_tags
from nova.api.validation import parameter_types
from nova.compute import api as compute_api
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.policies import server_metadata as metadata_policies
from nova.policies import server_tags as tag_policies
from oslo_db import exception as db_exception
from oslo_log import log as logging
from oslo_utils import uuidutils
import webob

from nova_reservation import capacity
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import hosts as db_hosts
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation import flavors
from nova_reservation.hooks import params
from nova_reservation.hooks import projects
from nova_reservation.hooks import reserved
from nova_reservation import idempotency
from nova_reservation import ledger as ledger_mod
from nova_reservation import marks
from nova_reservation import notifications
from nova_reservation import planner
from nova_reservation import resource_types
from nova_reservation import status
from nova_reservation import validation

LOG = logging.getLogger(__name__)
CONF = conf.CONF

SERVERS_PATH = re.compile(r'^(/[^/]+)?/servers/?$')
SERVER_VIEW_PATH = re.compile(r'^(/[^/]+)?/servers/(detail|[0-9a-f-]{36})/?$')
SERVER_CHANGE_PATH = re.compile(r'^(/[^/]+)?/servers/([0-9a-f-]{36})(/[^/]*)?')
# A server's metadata or tags, and one key or tag.
ITEM_PATH = re.compile(
    r'^(/[^/]+)?/servers/[0-9a-f-]{36}/(?:metadata|tags)(?:/([^/]+))?/?$')
# What Nova does to a reserved server as to any other: rename and delete
# (by method, for the path below the server: '' is itself).
DONE_WHILE_RESERVED = {('PUT', ''), ('DELETE', '')}
# (method, one key) -> (Nova's policy rule, Nova's schema of the body).
METADATA_CHANGES = {('POST', False): ('create', server_metadata.create),
                    ('PUT', False): ('update_all',
                                     server_metadata.update_all),
                    ('PUT', True): ('update', server_metadata.update),
                    ('DELETE', True): ('delete', None)}
HINT_KEYS = ('os:scheduler_hints', 'OS-SCH-HNT:scheduler_hints')
# The content types whose body Nova reads as JSON; it refuses the others.
NOVA_JSON_TYPES = ('', 'application/json', 'text/plain')
FAULT_NAMES = {400: 'badRequest', 403: 'forbidden', 404: 'itemNotFound',
               409: 'conflictingRequest'}
SLOTS_HINT = ledger_mod.SLOTS_HINT
# Server group policies as the ledger's affinity (soft ones bind nothing).
GROUP_AFFINITY = {'affinity': True, 'anti-affinity': False}


class LeaseRefused(Exception):
    def __init__(self, status: int, message: str, **extra) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra


def fault(status: int, message: str, **extra) -> webob.Response:
    """An error in Nova's fault shape, which nova and openstack CLIs
    print.
    """
    name = FAULT_NAMES.get(status, 'computeFault')
    return _json(status, {name: dict(code=status, message=message, **extra)})


def _json(status: int, body: dict) -> webob.Response:
    return webob.Response(status=status, json_body=body,
                          content_type='application/json', charset='UTF-8')


def _nova_errors(field: str):
    """A change of an unbuilt server (`ReservationHook._metadata`,
    `_tags`) answers Nova's errors as Nova's API does, with `field` named.
    """
    def wrap(change):
        @functools.wraps(change)
        def answer(req: webob.Request, ctx, uuid: str) -> webob.Response:
            try:
                return change(req, ctx, uuid)
            except (nova_exception.InstanceNotFound,
                    nova_exception.InstanceMappingNotFound):
                return fault(404, 'server %s not found' % uuid)
            except nova_exception.InstanceTagNotFound as e:
                return fault(404, '%s: %s' % (field, e))
            except nova_exception.OverQuota:
                return fault(403, '%s: quota exceeded' % field)
            except nova_exception.Forbidden as e:
                return fault(403, str(e))
            except jsonschema.ValidationError as e:
                return fault(400, '%s: %s' % (field, e.message[:300]))
            except params.InvalidParam as e:
                return fault(400, str(e))
        return answer
    return wrap


class ReservationHook:

    def __init__(self, app) -> None:
        self.app = app
        self.planner = planner.shared()
        self.ctx = db_api.Context()

    @webob.dec.wsgify
    def __call__(self, req: webob.Request):
        if req.method == 'POST' and SERVERS_PATH.match(req.path_info):
            return self._create(req)
        change = SERVER_CHANGE_PATH.match(req.path_info)
        if change and req.method in ('POST', 'PUT') and \
                (change.group(3) or '').startswith('/metadata'):
            refused = self._own_metadata(req)
            if refused is not None:
                return refused
        if change and req.method not in ('GET', 'HEAD'):
            done = self._while_reserved(req, change.group(2),
                                        change.group(3))
            if done is not None:
                return done
        resp = req.get_response(self.app)
        deleted = SERVER_VIEW_PATH.match(req.path_info)
        if req.method == 'DELETE' and deleted and resp.status_int == 204:
            self._deleted(deleted.group(2))
        if (req.method == 'GET' and SERVER_VIEW_PATH.match(req.path_info)
                and resp.status_int == 200):
            self._decorate(resp)
        return resp

    # ------------------------------------------------------------ boot

    def _create(self, req: webob.Request):
        if req.content_type not in NOVA_JSON_TYPES:
            return req.get_response(self.app)   # Nova refuses it.
        try:
            body = validation.load_json('body', req.body or b'{}')
        except params.InvalidParam as e:
            return fault(400, str(e))
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
            found = self._find_flavor(ctx, server.get('flavorRef'))
            preempt = params.preemptible_request(
                hints, dict(found.extra_specs) if found else {})
            lease = params.lease_request(
                hints, db_api.utcnow(), CONF.reservation.max_lease_duration,
                CONF.reservation.max_advance)
            forced = params.forced_host(server)
            if lease is None:
                res = self._reservation_of_boot(ctx, server, hints)
                if res is None and preempt is not None:
                    if forced:
                        raise params.InvalidParam(
                            'availability_zone', 'a preemptible boot can '
                            'not force a host: the scheduler keeps it off '
                            'what running leases and servers need')
                    return self._boot_preemptible(req, ctx, server, hints,
                                                  body, preempt)
                if res is None:
                    if forced:
                        self._check_forced(ctx, server, forced, found)
                        return req.get_response(self.app)
                    # A project whose boots are leases: this one too.
                    lease = self._default_lease(ctx, server)
                    if lease is None:
                        return req.get_response(self.app)
                else:
                    if forced:
                        raise params.InvalidParam(
                            'availability_zone', 'a boot into a reservation '
                            'can not force a host: the reservation chooses')
                    hints['reservation'] = res.id
                    hints.pop(SLOTS_HINT, None)
                    req.body = json.dumps(body).encode('utf-8')
                    return self._boot_into(req, ctx, server, res, hints,
                                           body, found)
            if 'reservation' in hints:
                raise params.InvalidParam(
                    'reservation', 'can not be given with lease_params: '
                    'the lease makes its own reservation')
            if forced:
                raise params.InvalidParam(
                    'availability_zone', 'a leased server can not force a '
                    'host: the lease chooses its node')
            count = params.server_count(
                server, CONF.reservation.max_servers_per_lease)
            flavor = self._flavor(server.get('flavorRef'), found)
            asked = idempotency.digest(body)
            same = self._same_boot(ctx, body, lease.client_token, asked)
            if same is not None:
                return same
            try:
                lease_id, reservation_id, waits = self._reserve(
                    ctx, lease, flavor, count,
                    self._group_affinity(ctx, hints), asked)
            except db_exception.DBDuplicateEntry:
                # Another boot with this token made its lease first.
                same = self._same_boot(ctx, body, lease.client_token, asked)
                if same is None:
                    raise
                return same
        except params.InvalidParam as e:
            return fault(400, str(e))
        except LeaseRefused as e:
            return fault(e.status, str(e), **e.extra)

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
        boot = (contextlib.nullcontext() if lease.immediate and not waits
                else reserved.Boot(reservation_id, slots,
                                   [marks.lease_tag(lease_id)], waits))
        try:
            with boot:
                resp = req.get_response(self.app)
        except Exception:
            LOG.exception('Boot of lease %s failed; removing it', lease_id)
            db_leases.discard(self.ctx, lease_id)
            raise
        if resp.status_int >= 400:
            LOG.info('Nova refused the boot of lease %s (%s): removing the '
                     'lease', lease_id, resp.status)
            db_leases.discard(self.ctx, lease_id)
            return resp
        # Nova made the servers: from here the lease is kept whatever
        # happens; one left CREATING is finished by the engine's reconciler
        # from the servers' metadata.
        try:
            uuids = self._created(ctx, resp)
            if not db_leases.bind_servers(
                    self.ctx, lease_id, reservation_id, uuids,
                    *status.made(lease.immediate, waits),
                    take_slots=not waits):
                return self._gone_while_booting(ctx, lease_id, uuids)
        except Exception:
            LOG.exception('Lease %s: its servers are left for the engine to '
                          'bind', lease_id)
            return resp
        self._show_reservation(resp, lease, lease_id, reservation_id,
                               status.WAITING if waits else status.ACTIVE
                               if lease.immediate else status.SHOWN_RESERVED)
        try:
            notifications.api_notifier().lease('create', lease_id)
        except Exception:
            LOG.exception('Lease %s: lease.create could not be sent',
                          lease_id)
        return resp

    @staticmethod
    def _default_lease(ctx, server: dict) -> Optional[params.LeaseRequest]:
        """The lease of an ordinary boot of a project whose boots are
        leases (``default_lease_projects``, or a project tag in Keystone:
        ``default_lease_tag``), or None.
        """
        length = None
        if ctx.project_id in CONF.reservation.default_lease_projects:
            length = CONF.reservation.default_lease_duration
        elif CONF.reservation.default_lease_tag:
            length = projects.default_lease_length(
                projects.tags(ctx), CONF.reservation.default_lease_tag,
                CONF.reservation.default_lease_duration)
        if length is None:
            return None
        return params.default_lease(
            server.get('name'), db_api.utcnow(),
            min(length, CONF.reservation.max_lease_duration),
            CONF.reservation.default_on_end,
            CONF.reservation.default_before_end)

    @staticmethod
    def _find_flavor(ctx, flavor_ref):
        """The boot's flavor, or None (no usable flavorRef)."""
        if not isinstance(flavor_ref, (str, int)):
            return None
        return flavors.find(ctx, nova_common.get_id_from_href(
            str(flavor_ref)))

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

    def _reservation_of_boot(self, ctx, server: dict, hints: dict):
        """The reservation a boot goes into: its ``reservation`` hint, or
        the private flavor of a virtual:instance reservation.
        """
        rid = params.reservation_hint(hints)
        if rid is None:
            flavor_ref = server.get('flavorRef')
            if not isinstance(flavor_ref, (str, int)):
                return None
            res = db_leases.reservation_of_flavor(
                self.ctx, nova_common.get_id_from_href(str(flavor_ref)))
            if res is None:
                return None
            rid = res.id
        res = db_leases.reservation(self.ctx, rid)
        # Another project's reservation is as good as none to this one.
        if res is None or res.deleted or res.project_id != ctx.project_id:
            raise LeaseRefused(404, 'reservation: %s not found' % rid)
        if res.resource_type == resource_types.SERVER:
            raise LeaseRefused(409, 'reservation: %s holds the servers of '
                               'lease %s and takes no other server'
                               % (rid, res.lease_id))
        lease = db_leases.get(self.ctx, res.lease_id)
        now = db_api.utcnow()
        if not (lease.start_at <= now < lease.end_at) or \
                lease.status not in (status.PENDING, status.ACTIVE):
            raise LeaseRefused(409, 'reservation: lease %s is not active '
                               '(it is %s, from %s to %s UTC)' % (
                                   lease.id, lease.status,
                                   lease.start_at.replace(microsecond=0),
                                   lease.end_at.replace(microsecond=0)))
        return res

    def _boot_into(self, req, ctx, server: dict, res, hints: dict,
                   body: dict, found):
        """A boot into a capacity or host reservation."""
        count = params.server_count(
            server, CONF.reservation.max_servers_per_lease)
        claim = None
        if res.resource_type in (resource_types.FLAVOR,
                                 resource_types.VIRTUAL):
            need = capacity.need_of_flavor(
                self._flavor(server.get('flavorRef'), found))
            slot = capacity.Resources(res.vcpus, res.memory_mb, res.disk_gb)
            if not need.fits_in(slot):
                raise params.InvalidParam(
                    'flavorRef', 'the flavor (%s) is larger than the '
                    'reserved slots (%s)' % (need.describe(),
                                             slot.describe()))
            claim = db_ledger.CLAIM_PREFIX + uuidutils.generate_uuid()[:30]
            held = db_ledger.claim_slots(self.ctx, res.id, count, claim)
            if not held:
                free = sum(1 for s in db_ledger.slots(self.ctx, res.id)
                           if s.instance_uuid is None)
                raise LeaseRefused(409, 'reservation: %d of its %d slots are '
                                   'free; %d servers asked for'
                                   % (free, res.amount, count))
            hints[SLOTS_HINT] = [str(i) for i in held]
            req.body = json.dumps(body).encode('utf-8')
        try:
            resp = req.get_response(self.app)
        except Exception:
            if claim:
                db_ledger.release_claim(self.ctx, claim)
            raise
        if resp.status_int >= 400:
            if claim:
                db_ledger.release_claim(self.ctx, claim)
            return resp
        uuids = self._created(ctx, resp)
        db_leases.bind_servers(
            self.ctx, res.lease_id, res.id, uuids, claim=claim,
            bind_event=True,
            take_slots=res.resource_type != resource_types.HOST)
        return resp

    @staticmethod
    def _flavor(flavor_ref, found):
        """The boot's flavor (`found`: as `_find_flavor` found it), or
        InvalidParam naming flavorRef.
        """
        if not isinstance(flavor_ref, (str, int)):
            raise params.InvalidParam('flavorRef', 'is required')
        if found is None:
            raise params.InvalidParam('flavorRef', 'flavor %s not found' %
                                      nova_common.get_id_from_href(
                                          str(flavor_ref)))
        return found

    def _same_boot(self, ctx, body: dict, token: Optional[str],
                   asked: str) -> Optional[webob.Response]:
        """The answer to a boot retried with its lease's client token: the
        servers the first made (None: there is no such lease).
        """
        try:
            lease = idempotency.known(self.ctx, ctx.project_id, token, asked)
        except idempotency.Conflict as e:
            raise LeaseRefused(409, str(e))
        if lease is None:
            return None
        uuids = [b.instance_uuid
                 for b in db_leases.bindings(self.ctx, lease.id)]
        if not uuids:
            raise LeaseRefused(409, 'client_token: lease %s, made with this '
                               'token, has no server left' % lease.id)
        LOG.info('Lease %s: a boot retried with its client token', lease.id)
        if body.get('return_reservation_id') in (True, 'True', 'true'):
            return _json(202, {'reservation_id': compute_api.API().get(
                ctx, uuids[0]).reservation_id})
        return _json(202, {'server': {'id': uuids[0], 'reservation': {
            'lease_id': lease.id, 'lease_name': lease.name,
            'reservation_id': db_leases.reservations(
                self.ctx, lease.id)[0].id,
            'status': lease_view_status(lease, db_api.utcnow())}}})

    def _reserve(self, ctx, lease: params.LeaseRequest, flavor,
                 count: int, affinity: Optional[bool], asked: str) -> tuple:
        """Hold `count` slots of `flavor` over the lease in the ledger (or,
        for a waiting lease that does not fit, write it waiting): (lease
        id, reservation id, whether it waits).
        """
        lease_id = uuidutils.generate_uuid()
        request = planner.ReservationRequest(
            resource_type=resource_types.SERVER, count=count,
            need=capacity.need_of_flavor(flavor), flavor_id=flavor.flavorid,
            flavor_name=flavor.name, affinity=affinity)
        try:
            row = dict(self._lease_row(ctx, lease_id, lease),
                       client_token=lease.client_token,
                       request_digest=lease.client_token and asked)
            if lease.occurrences:
                waits = False
                self.planner.create_series(planner.series(
                    row, [request], lease.occurrences))
            else:
                waits = self.planner.create_or_wait(row, [request])
        except planner.NoCapacity as e:
            raise LeaseRefused(409, str(e), **e.details())
        except planner.LedgerBusy:
            raise LeaseRefused(409, 'The ledger is too busy to place the '
                               'lease now; try again')
        LOG.info('Lease %s (%s): %d x %s%s', lease_id, lease.name, count,
                 flavor.name, ', waiting for room' if waits else '')
        return lease_id, request.id, waits

    @staticmethod
    def _lease_row(ctx, lease_id: str, lease: params.LeaseRequest) -> dict:
        row = dict(id=lease_id, name=lease.name, project_id=ctx.project_id,
                   user_id=ctx.user_id, start_at=lease.start,
                   end_at=lease.end, status=status.CREATING,
                   on_end=lease.on_end, max_extensions=lease.max_extensions,
                   before_end_minutes=lease.before_end,
                   created_at=db_api.utcnow())
        if lease.waiting:
            row.update(lease.waiting.columns(lease.immediate))
        return row

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
            raise params.InvalidParam('group', 'server group %s not found'
                                      % str(group)[:64])
        return GROUP_AFFINITY.get(policy)

    def _check_forced(self, ctx, server: dict, forced: tuple,
                      found) -> None:
        """A forced destination skips the scheduler's filters: the hook
        applies the filter's rule for an ordinary boot to it instead.
        """
        host, node = forced
        need = capacity.need_of_flavor(self._flavor(server.get('flavorRef'),
                                                    found))
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
            raise LeaseRefused(409, 'availability_zone: %s is reservable: '
                               'only its leases boot there' % where)
        if not self.planner.fits_for_good(nodes, need):
            raise LeaseRefused(409, 'availability_zone: %s has no room for '
                               '%s that no lease has been promised'
                               % (where, need.describe()))

    @staticmethod
    def _own_metadata(req: webob.Request) -> Optional[webob.Response]:
        """A 400 for a user's change of the ``reservation:`` metadata of a
        server (the engine, an admin, sets it), None for any other.
        """
        ctx = req.environ.get('nova.context')
        if getattr(ctx, 'is_admin', False):
            return None
        try:
            body = validation.load_json('body', req.body or b'{}')
        except params.InvalidParam:
            return None   # Nova says what is wrong with it.
        items = body.get('metadata', body.get('meta')) \
            if isinstance(body, dict) else None
        try:
            params.check_metadata({'metadata': items})
        except params.InvalidParam as e:
            return fault(400, str(e))
        return None

    def _while_reserved(self, req: webob.Request, uuid: str,
                        below: Optional[str]) -> Optional[webob.Response]:
        """The answer to a change of a server that is reserved (not built
        before its lease starts): its metadata or tags changed here (Nova
        changes only a built server's), or a 409; None for what Nova does
        itself.
        """
        below = (below or '').rstrip('/')
        ctx = req.environ.get('nova.context')
        if (req.method, below) in DONE_WHILE_RESERVED:
            return None
        changes = {'/metadata': self._metadata, '/tags': self._tags}
        # Admins are not refused: the engine starts the server as one.
        if below not in changes and getattr(ctx, 'is_admin', False):
            return None
        binding = next(iter(db_leases.bindings_of_servers(self.ctx, [uuid])),
                       None)
        if binding is None or binding.state != status.RESERVED:
            return None
        lease = db_leases.get(self.ctx, binding.lease_id)
        if lease is None or lease_view_status(
                lease, db_api.utcnow()) not in (status.SHOWN_RESERVED,
                                                status.WAITING):
            return None
        if below in changes:
            return changes[below](req, ctx, uuid)
        until = ('its lease %s is placed (it waits for room) and starts'
                 % lease.id if lease.status == status.WAITING else
                 '%s UTC (lease %s)' % (
                     lease.start_at.replace(microsecond=0), lease.id))
        return fault(409, 'server %s is reserved until %s: it is built '
                     'then; until then it can be shown, renamed, tagged, '
                     'given metadata or deleted' % (uuid, until))

    @staticmethod
    @_nova_errors('metadata')
    def _metadata(req: webob.Request, ctx, uuid: str) -> webob.Response:
        """Nova's server metadata API (its policies, schemas and quota), for
        a server that is not built.
        """
        key = ITEM_PATH.match(req.path_info).group(2)
        rule, schema = METADATA_CHANGES.get((req.method, key is not None),
                                            (None, None))
        if rule is None:
            return fault(405, 'metadata: %s is not allowed here'
                         % req.method)
        instance = compute_api.API().get(ctx, uuid)
        ctx.can(metadata_policies.POLICY_ROOT % rule,
                target={'project_id': instance.project_id})
        metadata = dict(instance.metadata)
        if schema is None:   # DELETE of one key
            if metadata.pop(key, None) is None:
                return fault(404, 'metadata: key %s not found' % key[:255])
        else:
            body = validation.load_json('body', req.body or b'{}')
            jsonschema.validate(body, schema)
            if key is not None and list(body['meta']) != [key]:
                return fault(400, 'meta: its key must be %s' % key[:255])
            if rule == 'update_all':
                metadata = {}
            metadata.update(body.get('metadata') or body['meta'])
        objects.Quotas.limit_check(ctx, metadata_items=len(metadata))
        instance.metadata = metadata
        instance.save()
        if schema is None:
            return webob.Response(status=204)
        return _json(200, {'meta': {key: metadata[key]}} if key else {
            'metadata': metadata})

    @staticmethod
    @_nova_errors('tags')
    def _tags(req: webob.Request, ctx, uuid: str) -> webob.Response:
        """Nova's server tags API (its policies, schemas and limit), for a
        server that is not built.
        """
        tag = ITEM_PATH.match(req.path_info).group(2)
        rule = {('PUT', True): 'update', ('PUT', False): 'update_all',
                ('DELETE', True): 'delete', ('DELETE', False): 'delete_all'
                }.get((req.method, tag is not None))
        if rule is None:
            return fault(405, 'tags: %s is not allowed here' % req.method)
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, uuid)
        ctx.can(tag_policies.POLICY_ROOT % rule,
                target={'project_id': mapping.project_id})
        with nova_context.target_cell(ctx, mapping.cell_mapping) as cctxt:
            if rule == 'update':
                jsonschema.validate(tag, parameter_types.tag)
                tags = objects.TagList.get_by_resource_id(cctxt, uuid)
                if tag in {t.tag for t in tags}:
                    return webob.Response(status=204)
                if len(tags) >= objects.instance.MAX_TAG_COUNT:
                    return fault(400, 'tags: a server has at most %d'
                                 % objects.instance.MAX_TAG_COUNT)
                objects.Tag(context=cctxt, resource_id=uuid, tag=tag).create()
                return webob.Response(status=201)
            if rule == 'update_all':
                body = validation.load_json('body', req.body or b'{}')
                jsonschema.validate(body, server_tags.update_all)
                tags = objects.TagList.create(cctxt, uuid, body['tags'])
                return _json(200, {'tags': [t.tag for t in tags]})
            if rule == 'delete':
                objects.Tag.destroy(cctxt, uuid, tag)
            else:
                objects.TagList.destroy(cctxt, uuid)
            return webob.Response(status=204)

    def _deleted(self, uuid: str) -> None:
        """A server was deleted: its slot is free for another boot (and a
        lease left with none of its own servers goes).
        """
        try:
            for lease_id in db_leases.servers_gone(self.ctx, [uuid]):
                db_leases.begin_delete(self.ctx, lease_id)
        except Exception:
            # The engine's reconciler frees it later.
            LOG.exception('Server %s: its slot could not be freed now', uuid)

    # ----------------------------------------------------------- views

    def _decorate(self, resp: webob.Response) -> None:
        try:
            data = resp.json_body
        except ValueError:
            return
        servers = ([data['server']] if isinstance(data.get('server'), dict)
                   else data.get('servers') or [])
        bindings = {b.instance_uuid: b for b in db_leases.bindings_of_servers(
            self.ctx, (s.get('id') for s in servers if isinstance(s, dict)))}
        if not bindings:
            return
        leases = db_leases.get_many(self.ctx, (b.lease_id
                                               for b in bindings.values()))
        now = db_api.utcnow()
        for s in servers:
            if s.get('id') not in bindings:
                continue
            binding = bindings[s['id']]
            lease = leases[binding.lease_id]
            shown = lease_view_status(lease, now)
            s['reservation'] = dict(
                lease_id=lease.id, lease_name=lease.name,
                reservation_id=binding.reservation_id, status=shown,
                start=lease.start_at.isoformat() + 'Z',
                end=lease.end_at.isoformat() + 'Z',
                on_end=lease.on_end)
            # A server that waits for its lease's start (or its placement)
            # is reserved, not shelved.
            if shown in (status.SHOWN_RESERVED, status.WAITING) and s.get(
                    'status', '').startswith('SHELVED'):
                s['status'] = status.SHOWN_RESERVED
        resp.json_body = data


def lease_view_status(lease, now) -> str:
    """RESERVED before the start, then the lease's own status."""
    if lease.status in (status.PENDING, status.CREATING) and \
            now < lease.start_at:
        return status.SHOWN_RESERVED
    return lease.status


def filter_factory(global_conf, **local_conf):
    """Paste filter factory: ``nova_reservation.hooks:filter_factory``."""
    def _factory(app):
        return ReservationHook(app)
    return _factory
