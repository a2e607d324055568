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
"""Servers of leases, as the hook sees the server API: a reserved
(unbuilt) server's metadata, tags, rename and delete done in Nova's
database, the other changes of a reserved server refused, a deleted
server's slot freed, and each leased server's reservation shown in the
server views.
"""

import functools
import re
from typing import Optional

import jsonschema
from nova.api.openstack.compute.schemas import server_metadata
from nova.api.openstack.compute.schemas import server_tags
from nova.api.validation import parameter_types
from nova.compute import api as compute_api
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.policies import server_metadata as metadata_policies
from nova.policies import server_tags as tag_policies
from oslo_log import log as logging
import webob

from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation import exception
from nova_reservation.hooks.faults import fallback_view
from nova_reservation.hooks.faults import fault
from nova_reservation.hooks.faults import fault_of
from nova_reservation.hooks.faults import json_response
from nova_reservation.hooks.faults import lease_view_status
from nova_reservation.hooks import params
from nova_reservation.lease import service as lease_service
from nova_reservation import marks
from nova_reservation import status
from nova_reservation import validation

LOG = logging.getLogger(__name__)

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


def _nova_errors(field: str):
    """A change of an unbuilt server (`Servers._metadata`,
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
            except exception.InvalidParam as e:
                return fault_of(e)
        return answer
    return wrap


class Servers:

    def __init__(self, app) -> None:
        self.app = app
        self.ctx = db_api.Context()

    @staticmethod
    def own_metadata(req: webob.Request) -> Optional[webob.Response]:
        """A 400 for a user's change of the ``reservation:`` metadata of a
        server (the engine, an admin, sets it), None for any other.
        """
        ctx = req.environ.get('nova.context')
        if getattr(ctx, 'is_admin', False):
            return None
        try:
            body = validation.load_json('body', req.body or b'{}')
        except exception.InvalidParam:
            return None   # Nova says what is wrong with it.
        items = body.get('metadata', body.get('meta')) \
            if isinstance(body, dict) else None
        try:
            params.check_metadata({'metadata': items})
        except exception.InvalidParam as e:
            return fault_of(e)
        return None

    def while_reserved(self, req: webob.Request, uuid: str,
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
        binding = next(iter(db_bindings.of_servers(self.ctx, [uuid])),
                       None)
        if binding is None or binding.state != status.RESERVED:
            return None
        lease = db_leases.get(self.ctx, binding.lease_id)
        if lease is None or lease_view_status(
                lease, db_api.utcnow()) not in (status.SHOWN_RESERVED,
                                                status.WAITING,
                                                status.PENDING_APPROVAL):
            return None
        if below in changes:
            return changes[below](req, ctx, uuid)
        until = ('its lease %s is placed (it waits for room) and starts'
                 % lease.id if lease.status == status.WAITING else
                 'its lease %s is approved (it waits for an admin\'s '
                 'approval) and starts' % lease.id
                 if lease.status == status.PENDING_APPROVAL else
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
            validation.validator(schema).validate(body)
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
        return json_response(200, {'meta': {key: metadata[key]}} if key else {
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
                validation.validator(parameter_types.tag).validate(tag)
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
                validation.validator(server_tags.update_all).validate(body)
                tags = objects.TagList.create(cctxt, uuid, body['tags'])
                return json_response(200, {'tags': [t.tag for t in tags]})
            if rule == 'delete':
                objects.Tag.destroy(cctxt, uuid, tag)
            else:
                objects.TagList.destroy(cctxt, uuid)
            return webob.Response(status=204)

    def deleted(self, uuid: str) -> None:
        """A server was deleted: its slot is free for another boot (and a
        lease left with none of its own servers goes).
        """
        try:
            lease_service.servers_gone([uuid])
        except Exception:
            # The engine's reconciler frees it later.
            LOG.exception('Server %s: its slot could not be freed now', uuid)

    def decorate(self, resp: webob.Response) -> None:
        try:
            data = resp.json_body
        except ValueError:
            return
        servers = ([data['server']] if isinstance(data.get('server'), dict)
                   else data.get('servers') or [])
        bindings = {b.instance_uuid: b for b in db_bindings.of_servers(
            self.ctx, (s.get('id') for s in servers if isinstance(s, dict)))}
        fallbacks = {s['id']: s['metadata'][marks.FALLBACK_OF]
                     for s in servers if isinstance(s, dict) and
                     s.get('id') not in bindings and
                     isinstance(s.get('metadata'), dict) and
                     marks.FALLBACK_OF in s['metadata']}
        for s in servers:
            if s.get('id') in fallbacks:
                s['reservation'] = fallback_view(fallbacks[s['id']])
        if not bindings:
            if fallbacks:
                resp.json_body = data
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
                on_end=lease.on_end, fallback=False)
            # A server that waits for its lease's start (or its placement)
            # is reserved, not shelved.
            if shown in (status.SHOWN_RESERVED, status.WAITING,
                         status.PENDING_APPROVAL) and s.get(
                    'status', '').startswith('SHELVED'):
                s['status'] = status.SHOWN_RESERVED
        resp.json_body = data
