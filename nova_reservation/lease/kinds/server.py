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

from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types


def instance_fields(res, servers: list) -> dict:
    """Blazar's instance reservation fields, of both capacity kinds."""
    return dict(Server().fields(res, servers), affinity=res.affinity,
                vcpus=res.vcpus, memory_mb=res.memory_mb,
                disk_gb=res.disk_gb,
                resource_properties=res.resource_properties or '',
                aggregate_id=None, server_group_id=res.server_group_id)


class Server(base.Kind):

    name = resource_types.SERVER
    shared_pool = True

    def fields(self, res, servers: list) -> dict:
        return dict(amount=res.amount, flavor_id=res.flavor_id,
                    resource_id=res.flavor_id, servers=servers)
