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

"""Capacity on the shared pool, of a given size (``virtual:instance``).
"""

from typing import Callable

from nova_reservation import capacity
from nova_reservation.lease.kinds import base
from nova_reservation.lease.kinds import checks
from nova_reservation.lease import resource_types


class Virtual(base.Instance):

    name = resource_types.VIRTUAL
    shapes = ('vcpus', 'memory_mb', 'disk_gb', 'affinity',
              'resource_properties')

    def need(self, prefix: str, value: dict, flavor_need: Callable) -> dict:
        return dict(need=capacity.Resources(*(
            checks.whole(prefix + field, value.get(field, 0),
                         *checks.SLOT_LIMITS[field])
            for field in ('vcpus', 'memory_mb', 'disk_gb'))))
