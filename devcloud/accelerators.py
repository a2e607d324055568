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

"""What the nodes of a local cloud started with ``--accelerators``
report, through Nova's own mechanisms, and the flavors that ask for it:

- physical GPUs with VGPU inventory on child providers, and dedicated
  CPUs (PCPU), from the fake driver of `devcloud.accelerator_driver`
  (its ``[fake_accelerators]`` options, per nova-compute);
- a custom resource class and its trait from a provider config file
  (``[compute] provider_config_location``), as an operator describes
  devices that no driver reports.
"""

import yaml

# As nova-compute of the local cloud loads it (`localcloud.nova_compute`).
DRIVER = 'fake_accelerators.FakeAcceleratorDriver'
DRIVER_GROUP = 'fake_accelerators'
A100 = 'CUSTOM_GPU_A100'
# {compute number (from 1; the fourth is as the first): its
# [fake_accelerators] options and the custom inventory of its provider
# config file}.
COMPUTES = {
    # A vGPU on each GPU: fewer than the node's vCPUs, so that a lease of
    # them is bound by its vGPUs.
    1: (dict(physical_gpus=2, vgpus_per_gpu=1), {}),
    2: ({}, {A100: 2}),
    3: (dict(pcpus=4), {}),
}
# name: (vcpus, ram, disk, extra specs).
FLAVORS = {
    'g1.vgpu': (1, 1024, 1, {'resources:VGPU': '1'}),
    'g1.a100': (1, 1024, 1, {'resources:' + A100: '1'}),
    'c1.dedicated': (2, 1024, 1, {'hw:cpu_policy': 'dedicated'}),
}


def of_compute(number: int) -> tuple:
    """([fake_accelerators] options, {custom class: total}) of the
    compute numbered `number` (from 1).
    """
    return COMPUTES[(number - 1) % len(COMPUTES) + 1]


def inventory(total: int) -> dict:
    """An inventory of `total` units, all of them allocatable."""
    return {'total': total, 'reserved': 0, 'min_unit': 1,
            'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}


def provider_config(inventories: dict, traits: tuple = ()) -> str:
    """A provider config file (schema 1.0) that adds `inventories`
    ({custom class: total}) to the nodes of the nova-compute that reads
    it, each with a trait of the same name, and `traits`.
    """
    return yaml.safe_dump({
        'meta': {'schema_version': '1.0'},
        'providers': [{
            'identification': {'uuid': '$COMPUTE_NODE'},
            'inventories': {'additional': [
                {rc: inventory(total)}
                for rc, total in sorted(inventories.items())]},
            'traits': {'additional': sorted({*inventories, *traits})},
        }],
    }, default_flow_style=False)
