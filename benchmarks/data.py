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

"""The cloud every benchmark works on: compute nodes and a ledger of
allocations, made the same way (seeded) for nova-reservation and for the
systems it is compared with.
"""

import random
from typing import NamedTuple

from nova_reservation import capacity

DAY = 86400.0
# A node of a typical cloud, and the slot of a typical lease.
NODE = capacity.Resources(32, 131072, 1000)
SLOT = capacity.Resources(2, 4096, 40)
# Requests placed against the ledger: [start, end) in seconds from T0.
T0 = 1_900_000_000.0            # an epoch in 2030: every lease is future
REQUEST = (T0 + 100 * DAY, T0 + 101 * DAY)


# With five classes: each node has 8 GPUs on its own provider and two
# physical GPUs of 8 vGPUs each (child providers; the ledger counts a
# class over the node's tree); a quarter of the slots hold a GPU, a
# quarter a vGPU.
GPU = 'CUSTOM_GPU_A100'
GPUS, PHYSICAL_GPUS, VGPUS_PER_GPU = 8, 2, 8
NODE_EXTRAS = capacity.extras({('', GPU): GPUS,
                               ('', 'VGPU'): PHYSICAL_GPUS * VGPUS_PER_GPU})
GPU_SLOT = capacity.extras({('', GPU): 1})
SLOT_EXTRAS = (GPU_SLOT, capacity.extras({('', 'VGPU'): 1}),
               capacity.NO_EXTRAS, capacity.NO_EXTRAS)


class Cloud(NamedTuple):
    hosts: list          # capacity.Host, one per node
    allocations: list    # capacity.Slot (slots of SLOT)


def cloud(hosts: int = 1000, allocations: int = 100_000,
          busy_share: float = 0.8, seed: int = 3,
          classes: int = 3) -> Cloud:
    """`hosts` nodes; `allocations` slots spread over the first
    `busy_share` of them across 180 days (about 4 slots per busy node at
    any instant), so that whole free nodes exist for host reservations;
    `classes`: 3 (vCPU, RAM, disk) or 5 (and GPUs and vGPUs).
    """
    rng = random.Random(seed)
    extras = NODE_EXTRAS if classes == 5 else capacity.NO_EXTRAS
    nodes = [capacity.Host('node%05d' % i, NODE, extra_capacity=extras)
             for i in range(hosts)]
    busy = nodes[:max(1, int(hosts * busy_share))]
    ledger = []
    for i in range(allocations):
        start = T0 + rng.uniform(0, 180 * DAY)
        length = rng.uniform(DAY / 24, 14 * DAY)
        ledger.append(capacity.Slot(
            i + 1, 'res%06d' % (i // 10), rng.choice(busy).node, start,
            start + length, SLOT,
            extras=SLOT_EXTRAS[i % 4] if classes == 5 else
            capacity.NO_EXTRAS))
    return Cloud(nodes, ledger)
