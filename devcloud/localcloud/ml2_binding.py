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

"""The local cloud's one stand-in for the network's data plane: an ML2
mechanism driver that binds a port as a live agent would, with no agent,
bridge or namespace (there are none here).

``bind_port`` binds to the first local, flat or VLAN segment (vif_type
``ovs``, no hybrid plug, status ACTIVE): Nova then sees a bound port and
gets ``network-vif-plugged`` as in production.  Every other call of ML2
(networks, subnets, routers, floating IPs, ports' other updates) is real
Neutron's.  ML2 finds it by its entry point (``localcloud`` in
``neutron.ml2.mechanism_drivers``), which ``LocalCloud`` declares for
Neutron's process only (see ``LocalCloud.register_binding_driver``).
"""

from neutron_lib.api.definitions import portbindings
from neutron_lib import constants
from neutron_lib.plugins.ml2 import api

NETWORK_TYPES = ('local', 'flat', 'vlan')


class BindingDriver(api.MechanismDriver):

    def initialize(self) -> None:
        pass

    def bind_port(self, context) -> None:
        if context.current[portbindings.VNIC_TYPE] != portbindings.VNIC_NORMAL:
            return
        for segment in context.segments_to_bind:
            if segment[api.NETWORK_TYPE] in NETWORK_TYPES:
                context.set_binding(
                    segment[api.ID], portbindings.VIF_TYPE_OVS,
                    {portbindings.CAP_PORT_FILTER: False,
                     portbindings.OVS_HYBRID_PLUG: False},
                    status=constants.PORT_STATUS_ACTIVE)
                return
