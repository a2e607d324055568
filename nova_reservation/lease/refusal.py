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

"""A lease not made, changed or booted into, as the lease service and the
rules it applies (`nova_reservation.enforcement`) refuse it.
"""

from typing import Optional

# The kinds of refusal, by status.
KINDS = {403: 'PolicyNotAuthorized', 404: 'NotFound', 409: 'Conflict',
         503: 'ServiceUnavailable'}


class Refused(Exception):
    """A lease not made, changed or booted into: `status` (HTTP), the
    message, `kind` (the lease API's error type; by default the status's)
    and `details` for the answer.
    """

    def __init__(self, status: int, message: str, kind: Optional[str] = None,
                 **details) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind or KINDS[status]
        self.details = details
