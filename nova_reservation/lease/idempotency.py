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

"""Client tokens: a lease creation retried with the token of the first
(``client_token`` in the lease API's body, or in ``lease_params``) gives
the lease the first made, not a second one.

A token belongs to a project and to one request: the same token with
another request is refused, and so is a retry while the first is still
being made.  Two creates with one token at once make one lease: the
store's unique key on (project, token) refuses the second row.
"""

import hashlib
import json
from typing import Optional

from nova_reservation.db import leases as db_leases
from nova_reservation.exception import ClientTokenConflict
from nova_reservation import status


def digest(request) -> str:
    """What a request asks for, as a short string: the same for the same
    request, whatever the order of its keys.
    """
    return hashlib.sha256(json.dumps(
        request, sort_keys=True, separators=(',', ':'),
        default=str).encode('utf-8')).hexdigest()


def lease_of_token(ctx, project_id: str, token: Optional[str],
                   request_digest: str):
    """The lease an earlier create with `token` made, or None (no token,
    or none made yet); ClientTokenConflict where it can not be the answer.
    """
    if token is None:
        return None
    lease = db_leases.of_token(ctx, project_id, token)
    if lease is None:
        return None
    if lease.request_digest != request_digest:
        raise ClientTokenConflict(
            'client_token: lease %s was made with this token for '
            'another request' % lease.id)
    if lease.status == status.CREATING:
        raise ClientTokenConflict(
            'client_token: lease %s is being made with this '
            'token; try again' % lease.id)
    return lease
