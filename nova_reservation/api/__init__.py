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

"""The lease API, compatible with Blazar's v1: a paste app served by
nova-api, mounted at /reservation in the osapi_compute urlmap."""

import re

from oslo_log import log as logging
import webob
import webob.dec

from nova_reservation.api import fault_wrap
from nova_reservation.api.handlers import approvals
from nova_reservation.api.handlers import availability
from nova_reservation.api.handlers import floatingips
from nova_reservation.api.handlers import hosts
from nova_reservation.api.handlers import leases
from nova_reservation.api.handlers import ledger
from nova_reservation.api.handlers import quotas
from nova_reservation.api.handlers import splits
from nova_reservation.api import openapi
from nova_reservation.api import wsgi
from nova_reservation.db import api as db_api
from nova_reservation import exception

LOG = logging.getLogger(__name__)

ID = r'(?P<id>[^/]+)'
EVENT = r'/events/(?P<event_id>[^/]+)'
PROJECT = r'(?P<project_id>[^/]+)'
ROUTES = [
    ('GET', r'/v1/leases', leases.list_leases),
    ('POST', r'/v1/leases', leases.create_lease),
    ('GET', r'/v1/leases/' + ID, leases.show_lease),
    ('PUT', r'/v1/leases/' + ID, leases.update_lease),
    ('DELETE', r'/v1/leases/' + ID, leases.delete_lease),
    ('POST', r'/v1/leases/' + ID + EVENT + '/retry', leases.retry_event),
    ('POST', r'/v1/leases/' + ID + '/split', splits.split_lease),
    ('POST', r'/v1/leases/' + ID + '/approve', approvals.approve_lease),
    ('POST', r'/v1/leases/' + ID + '/reject', approvals.reject_lease),
    ('GET', r'/v1/availability', availability.show_availability),
    ('GET', r'/v1/ledger', ledger.show_ledger),
    ('GET', r'/v1/os-hosts', hosts.list_hosts),
    ('POST', r'/v1/os-hosts', hosts.create_host),
    ('GET', r'/v1/os-hosts/allocations', hosts.list_allocations),
    ('GET', r'/v1/os-hosts/properties', hosts.list_properties),
    ('PATCH', r'/v1/os-hosts/properties/(?P<name>[^/]+)',
     hosts.update_property),
    ('GET', r'/v1/os-hosts/' + ID + '/allocation', hosts.show_allocation),
    ('GET', r'/v1/os-hosts/' + ID, hosts.show_host),
    ('PUT', r'/v1/os-hosts/' + ID, hosts.update_host),
    ('DELETE', r'/v1/os-hosts/' + ID, hosts.delete_host),
    ('GET', r'/v1/floatingips', floatingips.list_floatingips),
    ('POST', r'/v1/floatingips', floatingips.create_floatingip),
    ('GET', r'/v1/floatingips/' + ID, floatingips.show_floatingip),
    ('DELETE', r'/v1/floatingips/' + ID, floatingips.delete_floatingip),
    ('GET', r'/v1/quotas/' + PROJECT, quotas.show_quota),
    ('PUT', r'/v1/quotas/' + PROJECT, quotas.update_quota),
    ('GET', r'/v1/openapi.json', lambda ctx, req: _openapi()),
]
OPENAPI_PATH = '/v1/openapi.json'


def _openapi() -> webob.Response:
    return wsgi.json_response(200, openapi.document(ROUTES))


COMPILED = [(m, re.compile('^' + p + '/?$'), h) for m, p, h in ROUTES]


class ReservationAPI:

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> webob.Response:
        resp = self._dispatch(req)
        resp.headers['OpenStack-API-Version'] = 'reservation %s' % (
            wsgi.VERSION)
        resp.headers['Vary'] = 'OpenStack-API-Version'
        return resp

    def _dispatch(self, req: webob.Request) -> webob.Response:
        path = req.path_info.rstrip('/') or '/'
        if path.endswith('.json') and path != OPENAPI_PATH:
            path = path[:-len('.json')]   # Blazar's /v1/leases.json
        # HEAD is a GET without the body, which webob leaves out.
        asked = 'GET' if req.method == 'HEAD' else req.method
        if req.accept and not req.accept.acceptable_offers(
                ['application/json']):
            # As Blazar: JSON is the only answer there is.
            return wsgi.Fault(400, 'BadRequest', "Content type '%s' isn't "
                              "supported" % str(req.accept)[:100]).response()
        if path in ('/', '/v1'):
            if asked != 'GET':
                return _not_allowed(req.method, path, ['GET'])
            # As Blazar: the root is a 300 (Multiple Choices).
            return wsgi.json_response(300 if path == '/' else 200, {
                'versions': [{
                    'id': 'v1.0', 'status': 'CURRENT',
                    'min_version': wsgi.VERSION, 'max_version': wsgi.VERSION,
                    'links': [{'rel': 'self', 'href': req.application_url +
                               '/v1/'}]}]})
        allowed = []
        for method, pattern, handler in COMPILED:
            match = pattern.match(path)
            if not match:
                continue
            if method != asked:
                allowed.append(method)
                continue
            try:
                wsgi.check_version(req)
                ctx = req.environ.get('nova.context')
                if ctx is None:
                    raise wsgi.Fault(401, 'Unauthorized',
                                     'authentication is required')
                return handler(ctx, req, **match.groupdict())
            except wsgi.Fault as f:
                return f.response()
            except exception.ReservationError as e:
                if isinstance(e, exception.ServiceUnavailable):
                    LOG.warning('%s %s: %s', req.method, path, e)
                return fault_wrap.fault(e).response()
            except Exception as e:
                if db_api.unavailable(e):
                    LOG.warning('%s %s: %s', req.method, path, e)
                    return wsgi.Fault(503, 'ServiceUnavailable',
                                      db_api.UNAVAILABLE_MESSAGE).response()
                LOG.exception('%s %s failed', req.method, path)
                return wsgi.Fault(500, 'InternalError',
                                  'the request failed; see the nova-api '
                                  'log').response()
        if allowed:
            return _not_allowed(req.method, path, allowed)
        return wsgi.Fault(404, 'NotFound', 'no resource at %s'
                          % path[:200]).response()


def _not_allowed(method: str, path: str, allowed: list) -> webob.Response:
    """A 405 that says which methods the resource has (HTTP's Allow)."""
    resp = wsgi.Fault(405, 'MethodNotAllowed', '%s is not allowed on %s'
                      % (method, path)).response()
    methods = set(allowed) | ({'HEAD'} if 'GET' in allowed else set())
    resp.headers['Allow'] = ', '.join(sorted(methods))
    return resp


def app_factory(global_conf, **local_conf) -> ReservationAPI:
    """Paste app factory: ``nova_reservation.api:app_factory``."""
    return ReservationAPI()
