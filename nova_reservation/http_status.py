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

"""The HTTP status of each kind of error (`nova_reservation.exception`),
the same in the lease API's answers (Blazar's shape) and the boot hook's
(Nova's).
"""

from nova_reservation import exception

# The first that matches; an error of none is a 500.
STATUSES = ((exception.Invalid, 400), (exception.NotAllowed, 403),
            (exception.NotFound, 404), (exception.Conflict, 409),
            (exception.ServiceUnavailable, 503))


def of(e: exception.ReservationError) -> int:
    return next((code for kind, code in STATUSES if isinstance(e, kind)),
                500)
