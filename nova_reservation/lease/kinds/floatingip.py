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

"""Floating IP addresses of an external network that an admin registered
(``/v1/floatingips``); at the start they become floating IPs of the
lease's project in Neutron.
"""

import json

from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types


class FloatingIP(base.Kind):

    name = resource_types.FLOATINGIP
    # Its network, and its required addresses or none, as in Blazar.
    kept = ('network_id', 'required_floatingips')
    counted = False

    def fields(self, res, servers: list) -> dict:
        return dict(network_id=res.network_id, amount=res.amount,
                    required_floatingips=json.loads(
                        res.required_floatingips or '[]'),
                    resource_id=res.id)
