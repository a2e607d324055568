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

"""A fake compute driver that serves several nodes from one nova-compute,
as Ironic's driver does: Nova's fake driver with the nodes of its
``[fake_nodes] nodes`` option, each with a UUID that stays the same from
one start to the next and, as Ironic reports a node's resource class,
one unit of its class of ``[fake_nodes] classes`` and that class's trait,
and no vCPU, RAM or disk at all, as Ironic's nodes
(``compute_driver = fake_nodes.FakeNodesDriver`` in the local cloud's
nova-compute, ``devcloud.localcloud.nova_compute``).
"""

import uuid

from nova.virt import fake
from oslo_config import cfg

from devcloud import accelerators
from devcloud import baremetal

GROUP = baremetal.DRIVER_GROUP
# The name under which nova-compute finds it (Nova loads drivers from
# ``nova.virt``).
MODULE = 'nova.virt.fake_nodes'
OPTS = [
    cfg.ListOpt('nodes', default=[],
                help='The nodes this nova-compute serves (none: one, named '
                     'as its host).'),
    cfg.DictOpt('classes', default={},
                help='node:class pairs: the custom resource class of each '
                     'node, of which it reports one unit and the trait.'),
]
CONF = cfg.CONF
CONF.register_opts(OPTS, group=GROUP)


def node_uuid(node: str) -> str:
    """A node's UUID, the same at every start (Ironic's are its nodes')."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, node))


class FakeNodesDriver(fake.FakeDriver):
    """The nodes of ``[fake_nodes] nodes``, as Nova's fake driver reports
    a node.
    """

    def init_host(self, host) -> None:
        self._host = host
        self._set_nodes(list(CONF[GROUP].nodes) or [host])
        self._in_use: dict = {}   # {server uuid: its node}

    def spawn(self, context, instance, *args, **kwargs) -> None:
        super().spawn(context, instance, *args, **kwargs)
        self._in_use[instance.uuid] = instance.node

    def destroy(self, context, instance, *args, **kwargs) -> None:
        super().destroy(context, instance, *args, **kwargs)
        self._in_use.pop(instance.uuid, None)

    def get_available_resource(self, nodename) -> dict:
        resources = super().get_available_resource(nodename)
        resources['uuid'] = node_uuid(nodename)
        if CONF[GROUP].classes.get(nodename):
            # Ironic's nodes report none: their flavors ask for the class.
            resources.update(vcpus=0, vcpus_used=0, memory_mb=0,
                             memory_mb_used=0, local_gb=0, local_gb_used=0,
                             disk_available_least=0)
        return resources

    def get_nodenames_by_uuid(self, refresh=False) -> dict:
        return {node_uuid(n): n for n in self.get_available_nodes()}

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None) -> None:
        rc = CONF[GROUP].classes.get(nodename)
        if not rc:
            super().update_provider_tree(provider_tree, nodename,
                                         allocations=allocations)
            return
        # Ironic's driver reserves a node's unit while a server is on it.
        in_use = (nodename in self._in_use.values() and
                  not CONF.workarounds.skip_reserve_in_use_ironic_nodes)
        provider_tree.update_inventory(nodename, {rc: dict(
            accelerators.inventory(1), reserved=int(in_use))})
        provider_tree.add_traits(nodename, rc)
