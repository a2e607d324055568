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

"""/v1/leases/{id}/approve and /reject: an admin's decision on a lease that
waits for approval (PENDING_APPROVAL)."""

from typing import Optional

from nova_reservation.api.handlers import leases
from nova_reservation.api import wsgi
from nova_reservation.lease import approvals as lease_approvals
from nova_reservation import policies
from nova_reservation.schemas import approvals as schemas
from nova_reservation import validation


def _reason(req) -> Optional[str]:
    """The decision's reason, from its body if it has one."""
    if not req.body:
        return None
    body = wsgi.body_of(req)
    validation.check(schemas.DECISION, body, whole='body')
    return body.get('reason') or None


def approve_lease(ctx, req, id):
    lease = leases.lease_of(ctx, id, policies.LEASES_APPROVE)
    lease_approvals.approve(lease, ctx.user_id, _reason(req))
    return wsgi.json_response(200, {'lease': leases.notify_and_view(
        ctx, 'update', lease.id)})


def reject_lease(ctx, req, id):
    lease = leases.lease_of(ctx, id, policies.LEASES_REJECT)
    lease_approvals.reject(lease, ctx.user_id, _reason(req))
    return wsgi.json_response(200, {'lease': leases.notify_and_view(
        ctx, 'delete', lease.id)})
