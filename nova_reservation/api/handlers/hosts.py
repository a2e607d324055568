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

"""/v1/os-hosts: the reservable pool (admins only, by default), and its
allocations."""

import json
import re

from nova.compute import api as compute_api
from nova import exception as nova_exception
from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_reservation.api import wsgi
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import hosts as db_hosts
from nova_reservation.db import leases as db_leases
from nova_reservation import exception
from nova_reservation.lease import floatingips
from nova_reservation import policies
from nova_reservation.schemas import common
from nova_reservation.schemas import hosts as schemas
from nova_reservation import validation
from nova_reservation import views

LOG = logging.getLogger(__name__)
CONF = conf.CONF
HOST_FIELDS = ('id', 'hypervisor_hostname', 'service_name',
               'hypervisor_type', 'hypervisor_version', 'vcpus', 'memory_mb',
               'local_gb', 'cpu_info', 'reservable')
HOST_ID = re.compile(r'^[0-9]{1,10}$')


def host_view(host) -> dict:
    view = {f: getattr(host, f) for f in HOST_FIELDS}
    view['id'] = str(host.id)
    view['trust_id'] = None
    view['created_at'] = views.date(host.created_at)
    view['updated_at'] = views.date(host.updated_at)
    # Extra capabilities are flattened into the host, as in Blazar.
    view.update(json.loads(host.extra_capabilities or '{}'))
    return view


def _host(host_id: str):
    host = (db_hosts.get(db_api.Context(), int(host_id))
            if HOST_ID.match(host_id) else None)
    if host is None:
        raise exception.NotFound('host %s not found'
                                 % host_id[:64])
    return host


def _check(schema: dict, value, field: str = ''):
    return validation.check(schema, value, field)


def _freepool(ctx):
    """The freepool aggregate, made on first use."""
    api = compute_api.AggregateAPI()
    for agg in api.get_aggregate_list(ctx):
        if agg.name == CONF.reservation.freepool_name:
            return agg
    return api.create_aggregate(ctx, CONF.reservation.freepool_name, None)


def list_hosts(ctx, req):
    wsgi.authorize(ctx, policies.HOSTS_LIST)
    return wsgi.json_response(200, {'hosts': [
        host_view(h) for h in db_hosts.get_all(db_api.Context())]})


def show_host(ctx, req, id):
    wsgi.authorize(ctx, policies.HOSTS_GET)
    return wsgi.json_response(200, {'host': host_view(_host(id))})


def create_host(ctx, req):
    wsgi.authorize(ctx, policies.HOSTS_CREATE)
    body = _check(schemas.CREATE, wsgi.body_of(req))
    caps = {k: v for k, v in body.items() if k != 'name'}
    hosts_api = compute_api.HostAPI()
    node = _compute_node(ctx, hosts_api, body['name'])
    # One node, not its service: a service may serve many (bare metal).
    name = node.hypervisor_hostname
    store = db_api.Context()
    if any(h.hypervisor_hostname == name for h in db_hosts.get_all(store)):
        raise exception.Conflict('name: %s is reservable already'
                                 % name)
    promised = _reservations_on_node(name)
    if promised:
        raise exception.Conflict('name: %s holds capacity of lease '
                                 '%s until %s; enroll it once that has ended'
                                 % ((name,) + _held_until(promised[0])))
    servers = [i for i in hosts_api.instance_get_all_by_host(ctx, node.host)
               if i.node == name]
    if servers:
        raise exception.Conflict('name: %s runs %d servers; move '
                                 'them off before making it reservable'
                                 % (name, len(servers)))
    try:
        compute_api.AggregateAPI().add_host_to_aggregate(
            ctx, _freepool(ctx).id, node.host)
    except nova_exception.AggregateHostExists:
        pass
    host = db_hosts.create(
        store, hypervisor_hostname=name, service_name=node.host,
        hypervisor_type=node.hypervisor_type,
        hypervisor_version=node.hypervisor_version, vcpus=node.vcpus,
        memory_mb=node.memory_mb, local_gb=node.local_gb,
        cpu_info=node.cpu_info, extra_capabilities=json.dumps(caps))
    LOG.info('Host %s is reservable', name)
    return wsgi.json_response(201, {'host': host_view(host)})


def _compute_node(ctx, hosts_api, name: str):
    """The compute node named `name` (its hypervisor hostname) or of that
    UUID; 404 naming the field if none is.
    """
    if uuidutils.is_uuid_like(name):
        try:
            return hosts_api.compute_node_get(ctx, name)
        except nova_exception.ComputeHostNotFound:
            pass
    nodes = [n for n in hosts_api.compute_node_search_by_hypervisor(
        ctx, name) if n.hypervisor_hostname == name]
    if not nodes:
        raise exception.NotFound('name: no compute node is named '
                                 '%s' % name)
    return nodes[0]


def update_host(ctx, req, id):
    wsgi.authorize(ctx, policies.HOSTS_UPDATE)
    host = _host(id)
    body = wsgi.body_of(req)
    if isinstance(body, dict) and 'values' in body:
        values = _check(schemas.UPDATE_VALUES, body)['values']
    else:
        values = _check(schemas.UPDATE_FLAT, body)
    caps = json.loads(host.extra_capabilities or '{}')
    for key, value in values.items():
        if value is None:
            caps.pop(key, None)
        else:
            caps[key] = value
    store = db_api.Context()
    db_hosts.update(store, host.id, extra_capabilities=json.dumps(caps))
    return wsgi.json_response(200, {'host': host_view(db_hosts.get(
        store, host.id))})


def _reservations_on_node(node: str) -> list:
    """Reservations with a slot on the node that has not ended."""
    return db_leases.reservations_on(db_api.Context(), node, db_api.utcnow())


def _held_until(res) -> tuple:
    """(lease id, end) of a reservation."""
    return res.lease_id, db_leases.get(db_api.Context(), res.lease_id).end_at


def delete_host(ctx, req, id):
    wsgi.authorize(ctx, policies.HOSTS_DELETE)
    host = _host(id)
    held = _reservations_on_node(host.hypervisor_hostname)
    if held:
        raise exception.Conflict('host %s is reserved by lease %s until %s'
                                 % ((host.hypervisor_hostname,) +
                                    _held_until(held[0])))
    store = db_api.Context()
    # The service stays in the freepool while another of its nodes is
    # enrolled.
    if not any(h.service_name == host.service_name and h.id != host.id
               for h in db_hosts.get_all(store)):
        try:
            compute_api.AggregateAPI().remove_host_from_aggregate(
                ctx, _freepool(ctx).id, host.service_name)
        except nova_exception.AggregateHostNotFound:
            pass
    db_hosts.delete(store, host.id)
    return wsgi.json_response(204)


def _wanted(req) -> dict:
    """Blazar's filters of allocations (``lease_id``, ``reservation_id``)
    that the query gives.
    """
    return {field: _check(common.UUID, req.GET[field], field)
            for field in ('lease_id', 'reservation_id') if field in req.GET}


def _allocations(resources: list, held: dict, wanted: dict) -> list:
    """Blazar's allocations of `resources` ([(resource id, node)]): the
    reservations of `held` ({node: reservations}) on each; with filters
    `wanted` (`_wanted`), those they name, and only the resources that
    hold one.
    """
    found = [(resource_id, [
        r for r in held.get(node, ())
        if wanted.get('lease_id', r.lease_id) == r.lease_id and
        wanted.get('reservation_id', r.id) == r.id])
        for resource_id, node in resources]
    # One read of the leases of every resource's reservations.
    leases = db_leases.get_many(db_api.Context(), {
        r.lease_id for _, shown in found for r in shown})
    return [{'resource_id': resource_id, 'reservations': [
        {'id': r.id, 'lease_id': r.lease_id,
         'start_date': views.date(leases[r.lease_id].start_at),
         'end_date': views.date(leases[r.lease_id].end_at)}
        for r in shown]}
        for resource_id, shown in found if shown or not wanted]


def list_allocations(ctx, req):
    """Each enrolled host by its id, then each other node that holds a
    slot (the shared pool's, of instance reservations) by its compute
    node's UUID, Nova's id of it: Blazar's clients list both and match
    only their hosts' ids.
    """
    wsgi.authorize(ctx, policies.HOSTS_LIST_ALLOCATIONS)
    wanted = _wanted(req)
    store = db_api.Context()
    hosts = db_hosts.get_all(store)
    held = db_leases.reservations_by_node(store, db_api.utcnow())
    enrolled = {h.hypervisor_hostname for h in hosts}
    # Floating IP reservations hold their addresses as nodes of the
    # ledger: /v1/floatingips shows them.
    others = sorted(n for n in set(held) - enrolled
                    if not floatingips.is_address(n))
    uuids = {}
    if others:
        uuids = {n.hypervisor_hostname: n.uuid for n in
                 compute_api.HostAPI().compute_node_get_all(ctx)}
    resources = [(str(h.id), h.hypervisor_hostname) for h in hosts] + [
        # A node Nova no longer has, by its name.
        (uuids.get(node, node), node) for node in others]
    return wsgi.json_response(200, {'allocations': _allocations(
        resources, held, wanted)})


def show_allocation(ctx, req, id):
    """An enrolled host's allocation by its id, or any compute node's by
    its UUID.
    """
    wsgi.authorize(ctx, policies.HOSTS_GET_ALLOCATION)
    wanted = _wanted(req)
    if uuidutils.is_uuid_like(id):
        try:
            found = compute_api.HostAPI().compute_node_get(ctx, id)
        except nova_exception.ComputeHostNotFound:
            raise exception.NotFound('host %s not found' % id)
        resource = (found.uuid, found.hypervisor_hostname)
    else:
        host = _host(id)
        resource = (str(host.id), host.hypervisor_hostname)
    shown = _allocations([resource], {
        resource[1]: _reservations_on_node(resource[1])}, wanted)
    return wsgi.json_response(200, {'allocation': shown[0] if shown else {
        'resource_id': resource[0], 'reservations': []}})


def _properties() -> dict:
    """{extra capability: its values on the enrolled hosts}."""
    found: dict = {}
    for host in db_hosts.get_all(db_api.Context()):
        for key, value in json.loads(host.extra_capabilities or '{}').items():
            values = found.setdefault(key, [])
            if value not in values:
                values.append(value)
    return found


def _flag(req, name: str) -> bool:
    """A query flag as Blazar's clients send it (detail=True)."""
    return req.GET.get(name, '').lower() in ('true', '1', 'yes')


def list_properties(ctx, req):
    """Blazar's resource properties: the hosts' extra capabilities, with
    their values (``detail``), the private ones too (``all``).
    """
    wsgi.authorize(ctx, policies.HOSTS_LIST_PROPERTIES)
    private = db_hosts.private_properties(db_api.Context())
    shown = []
    for name, values in sorted(_properties().items()):
        if name in private and not _flag(req, 'all'):
            continue
        view = {'property': name}
        if _flag(req, 'detail'):
            view.update(private=name in private, values=values)
        shown.append(view)
    return wsgi.json_response(200, {'resource_properties': shown})


def update_property(ctx, req, name):
    wsgi.authorize(ctx, policies.HOSTS_UPDATE_PROPERTY)
    _check(schemas.PROPERTY_NAME, name, 'name')
    private = _check(schemas.PROPERTY_CHANGE, wsgi.body_of(req))['private']
    values = _properties().get(name)
    if values is None:
        raise exception.NotFound('no reservable host has the '
                                 'extra capability %s' % name)
    db_hosts.set_property(db_api.Context(), name, private)
    return wsgi.json_response(200, {'resource_property': {
        'property': name, 'private': private, 'values': values}})
