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

"""/v1/floatingips: the floating IP addresses that leases may take
(admins only, by default), as Blazar registers them.
"""

from oslo_db import exception as db_exception
from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_reservation.api import wsgi
from nova_reservation.clients import neutron
from nova_reservation.db import api as db_api
from nova_reservation.db import floatingips as db_floatingips
from nova_reservation.db import leases as db_leases
from nova_reservation import exception
from nova_reservation.lease import floatingips
from nova_reservation import policies
from nova_reservation.schemas import floatingips as schemas
from nova_reservation import validation
from nova_reservation import views

LOG = logging.getLogger(__name__)
FIELDS = ('id', 'floating_network_id', 'subnet_id', 'floating_ip_address',
          'reservable')


def view(row) -> dict:
    shown = {f: getattr(row, f) for f in FIELDS}
    shown.update(created_at=views.date(row.created_at),
                 updated_at=views.date(row.updated_at))
    return shown


def registered(network_id: str) -> set:
    """The addresses of `network_id` that leases may take."""
    return {r.floating_ip_address
            for r in db_floatingips.get_all(db_api.Context(), network_id)
            if r.reservable}


def _floatingip(floatingip_id: str):
    row = (db_floatingips.get(db_api.Context(), floatingip_id)
           if uuidutils.is_uuid_like(floatingip_id) else None)
    if row is None:
        raise exception.NotFound('floating IP %s not found'
                                 % floatingip_id[:64])
    return row


def list_floatingips(ctx, req):
    wsgi.authorize(ctx, policies.FLOATINGIPS_LIST)
    return wsgi.json_response(200, {'floatingips': [
        view(r) for r in db_floatingips.get_all(db_api.Context())]})


def show_floatingip(ctx, req, id):
    wsgi.authorize(ctx, policies.FLOATINGIPS_GET)
    return wsgi.json_response(200, {'floatingip': view(_floatingip(id))})


def create_floatingip(ctx, req):
    wsgi.authorize(ctx, policies.FLOATINGIPS_CREATE)
    body = validation.check(schemas.CREATE, wsgi.body_of(req))
    try:
        address = floatingips.canonical(body['floating_ip_address'])
    except ValueError:
        raise exception.InvalidParam(
            'floating_ip_address', '%s is not an IP address'
            % body['floating_ip_address'])
    network_id = body['floating_network_id']
    try:
        subnet_id = neutron.subnet_for(network_id, address)
    except exception.NeutronUnavailable as e:
        raise exception.NeutronUnavailable('%s; try again' % e) from e
    try:
        row = db_floatingips.create(
            db_api.Context(), id=uuidutils.generate_uuid(),
            floating_network_id=network_id, subnet_id=subnet_id,
            floating_ip_address=address)
    except db_exception.DBDuplicateEntry:
        raise exception.Conflict('floating_ip_address: %s of '
                                 'network %s is registered already'
                                 % (address, network_id))
    LOG.info('Floating IP %s of network %s may be reserved', address,
             network_id)
    return wsgi.json_response(201, {'floatingip': view(row)})


def delete_floatingip(ctx, req, id):
    wsgi.authorize(ctx, policies.FLOATINGIPS_DELETE)
    row = _floatingip(id)
    store = db_api.Context()
    held = db_floatingips.delete(store, row.id, db_api.utcnow())
    if held:
        res = db_leases.reservation(store, held[0].reservation_id)
        raise exception.Conflict('floating IP %s is reserved by lease %s '
                                 'until %s UTC' % (
                                     row.floating_ip_address,
                                     res.lease_id if res else 'unknown',
                                     held[0].end_at.replace(microsecond=0)))
    LOG.info('Floating IP %s of network %s may no longer be reserved',
             row.floating_ip_address, row.floating_network_id)
    return wsgi.json_response(204)
