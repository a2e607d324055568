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

"""Bare-metal nodes on a machine without Ironic, in Ironic's shape: one
nova-compute service serving several nodes, each its own compute node and
resource provider with one unit of a ``CUSTOM_BAREMETAL_<class>`` class
and that class's trait (reported by its driver, as Ironic's reports a
node's resource class), and flavors that ask for the class and none of the
standard ones.  What the local cloud runs with ``tools/localcloud up
--baremetal``; no Nova import (the driver is `devcloud.nodes_driver`).
"""

# As nova-compute of the local cloud loads it (`localcloud.nova_compute`).
DRIVER = 'fake_nodes.FakeNodesDriver'
DRIVER_GROUP = 'fake_nodes'
# The nova-compute service's host, as Ironic's is one service for many.
SERVICE = 'ironic-compute'
GOLD = 'CUSTOM_BAREMETAL_GOLD'
SILVER = 'CUSTOM_BAREMETAL_SILVER'
# {node: its bare-metal class}.
NODES = {'bm1': GOLD, 'bm2': GOLD, 'bm3': SILVER}
# name: (vcpus, ram, disk, extra specs), as Ironic's flavors are.
FLAVORS = {
    'bm.gold': (1, 512, 1, {'resources:' + GOLD: '1',
                            'resources:VCPU': '0',
                            'resources:MEMORY_MB': '0',
                            'resources:DISK_GB': '0'}),
}


def options(name=lambda node: node) -> dict:
    """The driver's ``[fake_nodes]`` options: the nodes and their classes,
    each node called `name(node)` (a lane's, `devcloud.lanes`).
    """
    return dict(nodes=','.join(map(name, NODES)), classes=','.join(
        '%s:%s' % (name(node), rc) for node, rc in sorted(NODES.items())))
