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

"""nova-compute of the local cloud: Nova's own, with the fake accelerator
driver and the fake driver of several nodes where Nova looks for drivers
(it loads ``nova.virt.<compute_driver>``: ``compute_driver =
fake_accelerators.FakeAcceleratorDriver`` or ``fake_nodes.FakeNodesDriver``).
"""

import sys

# First: it patches the standard library (eventlet or threads) before the
# rest of Nova is imported.
from nova.cmd import compute  # noqa: I100

from devcloud import accelerator_driver
from devcloud import nodes_driver

sys.modules[accelerator_driver.MODULE] = accelerator_driver
sys.modules[nodes_driver.MODULE] = nodes_driver

if __name__ == '__main__':
    sys.exit(compute.main())
