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

"""An admin's maintenance window: the named nodes held whole over the
lease, their compute services disabled while it runs
(`nova_reservation.lease.maintenance`).
"""

import json

from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types


class Maintenance(base.Kind):

    name = resource_types.MAINTENANCE
    sizes = ()
    counted = False

    def fields(self, res, servers: list) -> dict:
        return dict(hosts=json.loads(res.hosts or '[]'), reason=res.reason,
                    unmoved_servers=json.loads(res.unmoved_servers or '[]'))
