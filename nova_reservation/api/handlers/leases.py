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

"""/v1/leases: list, create, show, update, delete."""

from nova import objects
from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_reservation.api import policies
from nova_reservation.api import validation
from nova_reservation.api import wsgi
from nova_reservation import capacity
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation import flavors
from nova_reservation import notifications
from nova_reservation import planner
from nova_reservation import resource_types
from nova_reservation import schedule
from nova_reservation import status
from nova_reservation import views

LOG = logging.getLogger(__name__)
CONF = conf.CONF


# --------------------------------------------------------------- helpers

def _authorize(ctx, rule: str, project_id: str) -> None:
    if not policies.authorize(ctx, rule, {'project_id': project_id}):
        raise wsgi.Fault(403, 'PolicyNotAuthorized', 'policy does not allow '
                         '%s for this user' % rule)


def _lease(ctx, lease_id: str, rule: str):
    lease = (db_leases.get(db_api.Context(), lease_id)
             if uuidutils.is_uuid_like(lease_id) else None)
    if lease is None or lease.status == status.DELETED:
        raise wsgi.Fault(404, 'NotFound', 'lease %s not found' % lease_id)
    _authorize(ctx, rule, lease.project_id)
    return lease


def _flavor_need(ctx):
    def need(flavor_id: str):
        flavor = flavors.find(ctx, flavor_id)
        return flavor and capacity.need_of_flavor(flavor)
    return need


def _no_capacity(e: planner.NoCapacity) -> wsgi.Fault:
    return wsgi.Fault(409, 'NotEnoughCapacity', str(e), **e.details())


def _details(lease_id: str):
    return db_leases.details(db_api.Context(), [lease_id])[lease_id]


def _view(lease_id: str) -> dict:
    return views.lease(_details(lease_id))


def _told(action: str, lease_id: str) -> dict:
    """Send lease.<action> and give the lease's view, from one read."""
    details = _details(lease_id)
    notifications.api_notifier().lease(action, lease_id, details)
    return views.lease(details)


def _private_flavor(ctx, req: planner.ReservationRequest):
    """The private flavor of a capacity reservation: its id is the
    reservation's; a flavor:instance one is a copy of its flavor (extra
    specs too).  The owner gets access to it at the start.
    """
    source = (flavors.find(ctx, req.flavor_id)
              if req.resource_type == resource_types.FLAVOR else None)
    flavor = objects.Flavor(
        context=ctx, name='reservation:%s' % req.id, flavorid=req.id,
        vcpus=req.need.vcpus, memory_mb=req.need.memory_mb,
        root_gb=req.need.disk_gb,
        ephemeral_gb=source.ephemeral_gb if source else 0,
        swap=source.swap if source else 0, is_public=False,
        extra_specs=dict(source.extra_specs) if source else {})
    flavor.create()
    req.private_flavor_id = flavor.flavorid
    if req.resource_type == resource_types.VIRTUAL:
        req.flavor_id = flavor.flavorid
    return flavor


def _server_group(ctx, req: planner.ReservationRequest):
    """The server group of an instance reservation with an affinity, in
    the project, as Blazar makes it: its servers boot with ``--hint
    group=<its id>``.
    """
    group = objects.InstanceGroup(
        context=ctx, project_id=ctx.project_id, user_id=ctx.user_id,
        name='reservation:%s' % req.id,
        policy='affinity' if req.affinity else 'anti-affinity')
    group.create()
    req.server_group_id = group.uuid
    return group


# --------------------------------------------------------------- handlers

def list_leases(ctx, req):
    store = db_api.Context()
    if policies.authorize(ctx, policies.LEASES_LIST_ALL_PROJECTS, {}):
        leases = db_leases.get_all(store)
    else:
        _authorize(ctx, policies.LEASES_LIST, ctx.project_id)
        leases = db_leases.get_all(store, ctx.project_id)
    # A lease being deleted is gone for its owner, as a deleted lease is
    # in Blazar; its own URL shows DELETING until the engine has removed
    # what it made.
    leases = [x for x in leases if x.status != status.DELETING]
    # One read of the details of every lease, not one per lease.
    details = db_leases.details(store, (x.id for x in leases))
    return wsgi.json_response(200, {'leases': [
        views.lease(details[x.id]) for x in leases if x.id in details]})


def show_lease(ctx, req, id):
    lease = _lease(ctx, id, policies.LEASES_GET)
    return wsgi.json_response(200, {'lease': _view(lease.id)})


def create_lease(ctx, req):
    _authorize(ctx, policies.LEASES_CREATE, ctx.project_id)
    body = wsgi.body_of(req)
    try:
        values, requests = validation.lease(
            body, db_api.utcnow(), CONF.reservation.max_lease_duration,
            CONF.reservation.max_advance, _flavor_need(ctx))
    except validation.Invalid as e:
        raise wsgi.invalid(e)
    lease_id = uuidutils.generate_uuid()
    values.update(id=lease_id, project_id=ctx.project_id,
                  user_id=ctx.user_id, status=status.PENDING, on_end='delete',
                  created_at=db_api.utcnow())
    made = [_private_flavor(ctx, r) for r in requests
            if r.resource_type in resource_types.WITH_FLAVOR] + [
        _server_group(ctx, r) for r in requests
        if r.resource_type in resource_types.WITH_FLAVOR and
        r.affinity is not None]
    try:
        planner.shared().create(values, requests, schedule.lease_events(
            values, db_api.utcnow()))
    except planner.NoCapacity as e:
        raise _no_capacity(e)
    except planner.LedgerBusy:
        raise wsgi.Fault(409, 'Conflict', 'the ledger is too busy to place '
                         'the lease now; try again')
    finally:
        if not db_leases.get(db_api.Context(), lease_id):
            for thing in made:   # private flavors and server groups
                thing.destroy()
    LOG.info('Lease %s (%s) created: %s', lease_id, values['name'],
             '; '.join(r.describe() for r in requests))
    return wsgi.json_response(201, {'lease': _told('create', lease_id)})


def _growth(lease, entries: list) -> list:
    """(request for the extra slots, new sizes as columns) per changed
    reservation.
    """
    current = {r.id: r for r in db_leases.reservations(db_api.Context(),
                                                       lease.id)}
    growth = []
    seen = set()
    for i, entry in enumerate(entries):
        prefix = 'reservations[%d].' % i
        if entry['id'] in seen:
            raise validation.Invalid(prefix + 'id', 'is given twice')
        seen.add(entry['id'])
        res = current.get(entry['id'])
        if res is None:
            raise validation.Invalid(prefix + 'id', 'must be the id of a '
                                     'reservation of this lease')
        kind = entry.get('resource_type', res.resource_type)
        if kind != res.resource_type:
            raise validation.Invalid(prefix + 'resource_type', 'is %s and '
                                     'can not change' % res.resource_type)
        host = res.resource_type == resource_types.HOST
        sizes = {'max', 'min'} if host else {'amount'}
        unknown = sorted(set(entry) - sizes - {'id', 'resource_type'})
        if unknown:
            raise validation.Invalid(prefix + unknown[0], 'can not change '
                                     '(only %s can)' % ' and '.join(
                                         sorted(sizes)))
        field = 'max' if host else 'amount'
        old = res.max_count if host else res.amount
        new = validation.whole(prefix + field, entry.get(field, old))
        if new < old:
            raise validation.Invalid(prefix + field, 'can grow but not '
                                     'shrink (now %d)' % old)
        columns = {'amount': new}
        if host:
            columns['max_count'] = new
            low = validation.whole(prefix + 'min',
                                   entry.get('min', res.min_count or 1))
            if low > new:
                raise validation.Invalid(prefix + 'min', 'must not be above '
                                         'max (%d)' % new)
            columns['min_count'] = low
        if all(getattr(res, c) == v for c, v in columns.items()):
            continue
        need = capacity.Resources(res.vcpus, res.memory_mb, res.disk_gb)
        growth.append((planner.ReservationRequest(
            id=res.id, resource_type=res.resource_type, count=new - old,
            min_count=new - old, need=need,
            hypervisor_properties=res.hypervisor_properties or '',
            resource_properties=res.resource_properties or ''), columns))
    return growth


def update_lease(ctx, req, id):
    lease = _lease(ctx, id, policies.LEASES_UPDATE)
    if lease.status in status.FINISHED or lease.status == status.ERROR:
        raise wsgi.Fault(409, 'InvalidState', 'lease %s is %s; it can not '
                         'change' % (lease.id, lease.status))
    body = wsgi.body_of(req)
    try:
        values, entries = validation.update(
            body, lease, db_api.utcnow(),
            CONF.reservation.max_lease_duration,
            CONF.reservation.max_advance, _flavor_need(ctx))
        growth = _growth(lease, entries)
    except validation.Invalid as e:
        raise wsgi.invalid(e)
    try:
        planner.shared().change(lease, lease.version, values, growth)
    except planner.NoCapacity as e:
        raise _no_capacity(e)
    except (planner.LedgerBusy, db_leases.LeaseChanged):
        raise wsgi.Fault(409, 'Conflict', 'lease %s changed while this '
                         'change was made; read it again and retry'
                         % lease.id)
    return wsgi.json_response(200, {'lease': _told('update', lease.id)})


def delete_lease(ctx, req, id):
    lease = _lease(ctx, id, policies.LEASES_DELETE)
    db_leases.begin_delete(db_api.Context(), lease.id)
    notifications.api_notifier().lease('delete', lease.id)
    LOG.info('Lease %s (%s) is being deleted (was %s)', lease.id,
             lease.name, lease.status)
    return wsgi.json_response(204)


def retry_event(ctx, req, id, event_id):
    """An admin runs a failed event again; the lease leaves ERROR."""
    lease = _lease(ctx, id, policies.LEASES_RETRY_EVENT)
    store = db_api.Context()
    # An event that is not the lease's is unknown here, not in a state.
    event = {e.uuid: e for e in db_events.of_lease(store, lease.id)}.get(
        event_id)
    if event is None:
        raise wsgi.Fault(404, 'NotFound', 'event %s of lease %s not found'
                         % (event_id[:64], lease.id))
    if not db_leases.retry_event(store, lease.id, event.id):
        raise wsgi.Fault(409, 'InvalidState', 'event %s of lease %s is not '
                         'in ERROR' % (event_id, lease.id))
    LOG.info('Lease %s: event %s retried by %s', lease.id, event_id,
             ctx.user_id)
    return wsgi.json_response(202, {'lease': _view(lease.id)})
