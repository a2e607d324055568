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
from nova_reservation import http_status


def fault(e: exception.ReservationError) -> wsgi.Fault:
    """`e` as the lease API answers it: its status, its kind (Blazar's
    error name), its message and details.
    """
    return wsgi.Fault(http_status.of(e), e.kind, str(e), **e.details())
