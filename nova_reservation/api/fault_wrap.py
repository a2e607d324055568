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

"""The lease API's answer to what went wrong, in Blazar's shape: each of
`nova_reservation.exception`'s errors turned into HTTP here, once.
"""

from nova_reservation.api import wsgi
from nova_reservation import exception

# The status of each kind of error (the first that matches).
STATUSES = ((exception.Invalid, 400), (exception.NotAllowed, 403),
            (exception.NotFound, 404), (exception.Conflict, 409),
            (exception.ServiceUnavailable, 503))


def status_of(e: exception.ReservationError) -> int:
    return next((code for kind, code in STATUSES if isinstance(e, kind)),
                500)


def fault(e: exception.ReservationError) -> wsgi.Fault:
    """`e` as the lease API answers it: its status, its kind (Blazar's
    error name), its message and details.
    """
    return wsgi.Fault(status_of(e), e.kind, str(e), **e.details())
