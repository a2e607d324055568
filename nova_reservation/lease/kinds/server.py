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

"""The servers of a boot with ``lease_params``: each holds its own slot.
"""

from typing import Optional

from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types


class Server(base.SharedPool):

    name = resource_types.SERVER
    made_by_boot = True

    def refuses_boots(self, res) -> Optional[str]:
        return ('%s holds the servers of lease %s and takes no other '
                'server' % (res.id, res.lease_id))

    def fields(self, res, servers: list) -> dict:
        return base.servers_fields(res, servers)
