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

"""/v1/leases/{id}/split: part of a reservation handed on to a new
lease."""

from nova_reservation.api.handlers import leases
from nova_reservation.api import validation
from nova_reservation.api import wsgi
from nova_reservation.lease import splits as lease_splits
from nova_reservation import policies


def split_lease(ctx, req, id):
    lease = leases.lease_of(ctx, id, policies.LEASES_SPLIT)
    reservation_id, amount, project_id, name = validation.split(
        wsgi.body_of(req))
    if project_id not in (None, lease.project_id):
        wsgi.authorize(ctx, policies.LEASES_SPLIT_TO_PROJECT, project_id)
        leases.projects_known(ctx, [('project_id', project_id)])
    made = lease_splits.split(ctx, lease, reservation_id, amount,
                              project_id, name)
    leases.notify_and_view(ctx, 'update', lease.id, ['reservations.amount'])
    return wsgi.json_response(201, {'lease': leases.notify_and_view(
        ctx, 'create', made)})
