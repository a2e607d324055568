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

"""A fake compute driver for nodes with accelerators on a machine without
them: Nova's fake driver that also reports physical GPUs as child
providers of VGPU inventory (as the libvirt driver reports mediated
devices: one child per physical GPU) and dedicated CPUs as PCPU inventory
on the node, as its ``[fake_accelerators]`` options say
(``compute_driver = fake_accelerators.FakeAcceleratorDriver`` in the
local cloud's nova-compute, ``devcloud.localcloud.nova_compute``).
"""

from nova.virt import fake
from oslo_config import cfg

from devcloud import accelerators

GROUP = accelerators.DRIVER_GROUP
# The name under which nova-compute finds it (Nova loads drivers from
# ``nova.virt``).
MODULE = 'nova.virt.fake_accelerators'
OPTS = [
    cfg.IntOpt('physical_gpus', default=0, min=0, max=64,
               help='Physical GPUs of the node, each a child provider '
                    '"<node>_pgpu<N>" of VGPU inventory.'),
    cfg.IntOpt('vgpus_per_gpu', default=4, min=1, max=64,
               help='The VGPU inventory of each physical GPU.'),
    cfg.IntOpt('pcpus', default=0, min=0, max=1024,
               help='Dedicated CPUs of the node, as PCPU inventory.'),
]
CONF = cfg.CONF
CONF.register_opts(OPTS, group=GROUP)


class FakeAcceleratorDriver(fake.FakeDriverWithoutFakeNodes):
    """One node, as Nova's fake driver reports it, with the physical GPUs
    and dedicated CPUs of ``[fake_accelerators]``.
    """

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None) -> None:
        super().update_provider_tree(provider_tree, nodename,
                                     allocations=allocations)
        options = CONF[GROUP]
        if options.pcpus:
            found = dict(provider_tree.data(nodename).inventory)
            found['PCPU'] = accelerators.inventory(options.pcpus)
            provider_tree.update_inventory(nodename, found)
        for n in range(options.physical_gpus):
            child = '%s_pgpu%d' % (nodename, n)
            if not provider_tree.exists(child):
                provider_tree.new_child(child, nodename)
            provider_tree.update_inventory(
                child, {'VGPU': accelerators.inventory(options.vgpus_per_gpu)})
