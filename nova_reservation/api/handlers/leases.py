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

from typing import Optional

from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_reservation.api.handlers import floatingips
from nova_reservation.api import validation
from nova_reservation.api import wsgi
from nova_reservation import capacity
from nova_reservation.clients import flavors
from nova_reservation.clients import keystone_projects
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import shares as db_shares
from nova_reservation import exception
from nova_reservation.lease import idempotency
from nova_reservation.lease import kinds
from nova_reservation.lease import request as plan_request
from nova_reservation.lease import service as lease_service
from nova_reservation.lease import shares
from nova_reservation import notifications
from nova_reservation import policies
from nova_reservation import status
from nova_reservation import views

LOG = logging.getLogger(__name__)
CONF = conf.CONF


# --------------------------------------------------------------- helpers

def lease_of(ctx, lease_id: str, rule: str):
    """The lease `lease_id` if the policy `rule` lets the caller act on it
    (a 404 or a 403 otherwise).
    """
    lease = (db_leases.get(db_api.Context(), lease_id)
             if uuidutils.is_uuid_like(lease_id) else None)
    if lease is None or lease.status == status.DELETED:
        raise exception.NotFound('lease %s not found'
                                 % lease_id[:64])
    if policies.authorize(ctx, rule, {'project_id': lease.project_id}):
        return lease
    if _shared_with_caller(ctx, lease.id):
        if rule == policies.LEASES_GET:
            wsgi.authorize(ctx, policies.LEASES_GET_SHARED)
            return lease
        raise exception.NotAllowed('lease %s is shared with project %s by '
                                   'project %s: only its owner changes it'
                                   % (lease.id, ctx.project_id,
                                      lease.project_id))
    wsgi.authorize(ctx, rule, lease.project_id)
    return lease


def _shared_with_caller(ctx, lease_id: str) -> bool:
    return any(ctx.project_id in shares.projects(r.shared_with)
               for r in db_leases.reservations(db_api.Context(), lease_id))


def _viewer(ctx, project_id: str) -> Optional[str]:
    """The project whose view the caller gets of a lease of `project_id`
    (see `views.lease`): its own, or None for an admin, who sees every
    project's leases (and servers, as in Nova).
    """
    if policies.authorize(ctx, policies.LEASES_LIST_ALL_PROJECTS, {}) or (
            project_id != ctx.project_id and policies.authorize(
                ctx, policies.LEASES_GET, {'project_id': project_id})):
        return None
    return ctx.project_id


def projects_known(ctx, named: list) -> None:
    """A 400 naming the first project of `named`, (field, project id)
    pairs, that Keystone does not know (`keystone_projects.check`).
    """
    keystone_projects.check(ctx, named)


def _details(lease_id: str):
    return db_leases.details(db_api.Context(), [lease_id])[lease_id]


def _view(ctx, lease_id: str) -> dict:
    details = _details(lease_id)
    return _with_series(views.lease(details, _viewer(
        ctx, details.lease.project_id)))


def _with_series(view: dict, known: Optional[dict] = None) -> dict:
    """A recurring lease's view with its occurrences (`known`: {series id:
    its occurrences} if read already).
    """
    series_id = view['series_id']
    if series_id is not None:
        if known is None:
            known = db_leases.series(db_api.Context(), [series_id])
        view['occurrences'] = views.occurrences(known.get(series_id, []))
    return view


def notify_and_view(ctx, action: str, lease_id: str, changed=None) -> dict:
    """Send lease.<action> (with the fields `changed`, if given) and give
    the lease's view as the caller sees it, from one read.
    """
    details = _details(lease_id)
    notifications.api_notifier().lease(action, lease_id, details, changed)
    return _with_series(views.lease(details, _viewer(
        ctx, details.lease.project_id)))


# --------------------------------------------------------------- handlers

def list_leases(ctx, req):
    store = db_api.Context()
    # Every project's (an admin's list), or the caller's and those shared
    # with it, which it sees as such.
    everything = policies.authorize(ctx, policies.LEASES_LIST_ALL_PROJECTS,
                                    {})
    if everything:
        leases = db_leases.get_all(store)
    else:
        wsgi.authorize(ctx, policies.LEASES_LIST, ctx.project_id)
        leases = db_leases.get_all(store, ctx.project_id)
        if policies.authorize(ctx, policies.LEASES_LIST_SHARED,
                              {'project_id': ctx.project_id}):
            leases += db_shares.shared_with(store, ctx.project_id)
    # A lease being deleted is gone for its owner, as a deleted lease is
    # in Blazar; its own URL shows DELETING until the engine has removed
    # what it made.
    leases = [x for x in leases if x.status != status.DELETING]
    wanted = req.GET.get('status')
    if wanted is not None:   # e.g. PENDING_APPROVAL, for admins to decide
        if wanted not in status.LEASE.moves:
            raise exception.Invalid('status: must be one of %s' % ', '.join(
                sorted(status.LEASE.moves)))
        leases = [x for x in leases if x.status == wanted]
    # A recurring lease is listed once, with its occurrences.
    known = db_leases.series(store, {x.series_id for x in leases
                                     if x.series_id})
    leases = [x for x in leases
              if x.series_id is None or x.id == _head(known, x)]
    # One read of the details of every lease, not one per lease.
    details = db_leases.details(store, (x.id for x in leases))
    return wsgi.json_response(200, {'leases': [
        _with_series(views.lease(details[x.id], None if everything
                                 else ctx.project_id), known)
        for x in leases if x.id in details]})


def _head(known: dict, lease) -> str:
    """The id under which a series is listed: its first occurrence left."""
    return known[lease.series_id][0].id


def show_lease(ctx, req, id):
    lease = lease_of(ctx, id, policies.LEASES_GET)
    return wsgi.json_response(200, {'lease': _view(ctx, lease.id)})


def create_lease(ctx, req):
    wsgi.authorize(ctx, policies.LEASES_CREATE, ctx.project_id)
    body = wsgi.body_of(req)
    values, requests, intervals = validation.lease(
        body, db_api.utcnow(), CONF.reservation.max_lease_duration,
        CONF.reservation.max_advance, flavors.need_finder(ctx),
        floatingips.registered, owner=ctx.project_id)
    if any(r.shared_with for r in requests):
        wsgi.authorize(ctx, policies.LEASES_SHARE, ctx.project_id)
        projects_known(ctx, validation.shares_named(
            body.get('reservations', [])))
    for policy in sorted({kinds.of(r.resource_type).policy for r in requests}
                         - {None}):
        wsgi.authorize(ctx, policy, ctx.project_id)
    draft = lease_service.Draft(
        values, requests, intervals if 'recurrence' in body else None,
        token=body.get('client_token'), digest=idempotency.digest(body))
    made = lease_service.create(ctx, draft)
    if made.again:
        return wsgi.json_response(201, {'lease': _view(ctx, made.lease_id)})
    return wsgi.json_response(201, {'lease': notify_and_view(
        ctx, 'create', made.lease_id)})


def _growth(lease, entries: list) -> tuple:
    """([(request, new sizes and shape as columns)], ids of the
    reservations placed again): per changed reservation, the request for
    its extra slots or, when its shape changes, for all of them.
    """
    current = {r.id: r for r in db_leases.reservations(db_api.Context(),
                                                       lease.id)}
    growth, replaced = [], []
    seen = set()
    for i, entry in enumerate(entries):
        prefix = 'reservations[%d].' % i
        if entry['id'] in seen:
            raise exception.InvalidParam(prefix + 'id', 'is given twice')
        seen.add(entry['id'])
        res = current.get(entry['id'])
        if res is None:
            raise exception.InvalidParam(prefix + 'id', 'must be the id of a '
                                         'reservation of this lease')
        if entry.get('resource_type', res.resource_type) != \
                res.resource_type:
            raise exception.InvalidParam(prefix + 'resource_type', 'is %s and '
                                         'can not change' % res.resource_type)
        kind = kinds.of(res.resource_type)
        changeable = kind.changeable()
        unknown = sorted(set(entry) - changeable - set(kind.kept) -
                         {'id', 'resource_type'})
        if unknown:
            raise exception.InvalidParam(prefix + unknown[0], 'can not change '
                                         '(only %s can)' % ', '.join(
                                         sorted(changeable)))
        kind.keeps(prefix, res, entry)
        shape = kind.reshaped(prefix, res, entry)
        if shape and lease.status != status.PENDING:
            raise exception.Conflict(
                '%s%s: lease %s is %s; only a lease that has not started '
                'changes the shape of its reservations' % (
                    prefix, sorted(shape)[0], lease.id, lease.status),
                'InvalidState')
        old, new, low, columns = kind.grown(prefix, res, entry)
        columns.update(_sharing(prefix, res, entry))
        # Only what changes is written (and notified).
        columns = {c: v for c, v in columns.items() if getattr(res, c) != v}
        if not shape and not columns:
            continue
        columns.update(shape)
        shaped = {f: shape.get(f, getattr(res, f)) for f in (
            'vcpus', 'memory_mb', 'disk_gb', 'affinity',
            'hypervisor_properties', 'resource_properties')}
        # Reshaped, it is placed again whole; else only its extra slots.
        count = new if shape else new - old
        if shape:
            replaced.append(res.id)
        growth.append((plan_request.ReservationRequest(
            id=res.id, resource_type=res.resource_type, count=count,
            min_count=low if shape and low is not None else count,
            need=capacity.Resources(shaped['vcpus'], shaped['memory_mb'],
                                    shaped['disk_gb']),
            traits=plan_request.traits_of(res),
            extras=plan_request.extras_of(res),
            # Extra slots are placed as before: anywhere they fit.
            affinity=shaped['affinity'] if shape else None,
            hypervisor_properties=shaped['hypervisor_properties'] or '',
            resource_properties=shaped['resource_properties'] or '',
            network_id=res.network_id),
            columns))
    return growth, replaced


def _sharing(prefix: str, res, entry: dict) -> dict:
    """The sharing columns of reservation `res` that `entry` gives."""
    found = validation.sharing(prefix, res.resource_type, entry,
                               res.project_id)
    columns = {}
    if 'shared_with' in found:
        columns['shared_with'] = shares.column(found['shared_with'])
    if 'matching' in found:
        columns['matching'] = shares.matching_column(found['matching'])
    return columns


def _changed(values: dict, growth: list) -> list:
    """The fields of the lease and of its reservations that a change
    changes, as lease.update names them.
    """
    fields = {'start_at': 'start_date', 'end_at': 'end_date',
              'before_end_minutes': 'before_end_date'}
    found = {fields.get(k, k) for k in values}
    for req, columns in growth:
        found.update('reservations.%s' % ('max' if c == 'max_count' else
                                          'min' if c == 'min_count' else c)
                     for c in columns)
    return sorted(found)


def update_lease(ctx, req, id):
    lease = lease_of(ctx, id, policies.LEASES_UPDATE)
    if lease.status in status.FINISHED or lease.status in (
            status.ERROR, status.WAITING, status.PENDING_APPROVAL):
        raise exception.Conflict('lease %s is %s; it can not change%s' % (
            lease.id, lease.status, (
                ' until it is placed (delete it to stop waiting)'
                if lease.status == status.WAITING
                else ' until an admin approves it'
                if lease.status == status.PENDING_APPROVAL else '')),
            'InvalidState')
    body = wsgi.body_of(req)
    values, entries = validation.update(
        body, lease, db_api.utcnow(),
        CONF.reservation.max_lease_duration,
        CONF.reservation.max_advance, flavors.need_finder(ctx))
    growth, replaced = _growth(lease, entries)
    if any('shared_with' in columns for _, columns in growth):
        wsgi.authorize(ctx, policies.LEASES_SHARE, lease.project_id)
        # Only the projects the change adds: one shared with already (and
        # since gone from Keystone, say) may stay.
        now = {r.id: shares.projects(r.shared_with) for r in
               db_leases.reservations(db_api.Context(), lease.id)}
        projects_known(ctx, validation.shares_named(
            entries, lambda value: now.get(value['id'], shares.NO_ONE)))
    lease_service.change(ctx, lease, values, growth, replaced)
    return wsgi.json_response(200, {'lease': notify_and_view(
        ctx, 'update', lease.id, _changed(values, growth))})


def delete_lease(ctx, req, id):
    lease = lease_of(ctx, id, policies.LEASES_DELETE)
    for lease_id in lease_service.delete(lease):
        notifications.api_notifier().lease('delete', lease_id)
    LOG.info('Lease %s (%s) is being deleted (was %s)', lease.id,
             lease.name, lease.status)
    return wsgi.json_response(204)


def retry_event(ctx, req, id, event_id):
    """An admin runs a failed event again; the lease leaves ERROR."""
    lease = lease_of(ctx, id, policies.LEASES_RETRY_EVENT)
    store = db_api.Context()
    # An event that is not the lease's is unknown here, not in a state.
    event = {e.uuid: e for e in db_events.of_lease(store, lease.id)}.get(
        event_id)
    if event is None:
        raise exception.NotFound('event %s of lease %s not found'
                                 % (event_id[:64], lease.id))
    if not lease_service.retry_event(lease.id, event.id):
        raise exception.Conflict('event %s of lease %s is not in ERROR'
                                 % (event_id, lease.id), 'InvalidState')
    LOG.info('Lease %s: event %s retried by %s', lease.id, event_id,
             ctx.user_id)
    return wsgi.json_response(202, {'lease': _view(ctx, lease.id)})
