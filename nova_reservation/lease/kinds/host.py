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

"""Whole reservable hosts, in an aggregate of the lease's own
(``physical:host``).
"""

from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types


class Host(base.Kind):

    name = resource_types.HOST
    sizes = ('max', 'min')
    shapes = ('hypervisor_properties', 'resource_properties')
    shareable = True
    whole_hosts = True

    def fields(self, res, servers: list) -> dict:
        return dict(min=res.min_count, max=res.max_count,
                    hypervisor_properties=res.hypervisor_properties or '',
                    resource_properties=res.resource_properties or '',
                    before_end=res.before_end or 'default',
                    resource_id=res.aggregate_id)
