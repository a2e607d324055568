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
"""What the hook answers in Nova's shape: faults as nova and openstack
CLIs print them, and the lease status a server's view shows.
"""

import webob

from nova_reservation import exception
from nova_reservation import http_status
from nova_reservation import status


FAULT_NAMES = {400: 'badRequest', 403: 'forbidden', 404: 'itemNotFound',
               409: 'conflictingRequest', 503: 'serviceUnavailable'}
# The content types whose body Nova reads as JSON; it refuses the others.
NOVA_JSON_TYPES = ('', 'application/json', 'text/plain')


def fault(status: int, message: str, **extra) -> webob.Response:
    """An error in Nova's fault shape, which nova and openstack CLIs
    print.
    """
    name = FAULT_NAMES.get(status, 'computeFault')
    return json_response(status, {name: dict(code=status, message=message,
                                             **extra)})


def fault_of(e: exception.ReservationError) -> webob.Response:
    """What went wrong (`e`), as the boot hook answers it: turned into
    HTTP here, once.
    """
    return fault(http_status.of(e), str(e), **e.details())


def message_of(resp: webob.Response) -> str:
    """The message of a fault Nova answered with."""
    try:
        body = resp.json_body
        return next(iter(body.values()))['message'][:400]
    except Exception:
        return resp.status


def json_response(status: int, body: dict) -> webob.Response:
    return webob.Response(status=status, json_body=body,
                          content_type='application/json', charset='UTF-8')


def lease_view_status(lease, now) -> str:
    """RESERVED before the start, then the lease's own status."""
    if lease.status in (status.PENDING, status.CREATING) and \
            now < lease.start_at:
        return status.SHOWN_RESERVED
    return lease.status


def fallback_view(rid: str) -> dict:
    """The ``reservation`` of a server's view that an ordinary boot got
    instead of reservation `rid` (``reservation_fallback``).
    """
    return {'reservation_id': rid, 'fallback': True,
            'status': status.SHOWN_ORDINARY}
