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

"""Capacity on the shared pool, of a flavor's size (``flavor:instance``).
"""

from typing import Callable

from nova_reservation.exception import InvalidParam
from nova_reservation.exception import Uncounted
from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types


class Flavor(base.Instance):

    name = resource_types.FLAVOR
    shapes = ('resource_properties',)
    copies_flavor = True

    def need(self, prefix: str, value: dict, flavor_need: Callable) -> dict:
        flavor_id = str(value['flavor_id'])   # the CLI sends "3" as 3
        try:
            need = flavor_need(flavor_id)
        except Uncounted as e:
            raise InvalidParam(prefix + 'flavor_id', 'flavor %s %s'
                               % (flavor_id, e))
        if need is None:
            raise InvalidParam(prefix + 'flavor_id', 'flavor %s not found'
                               % flavor_id)
        return dict(need=need.resources, traits=need.traits,
                    extras=need.extras, flavor_id=flavor_id)
