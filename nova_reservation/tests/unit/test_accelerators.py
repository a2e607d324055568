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

"""The fake accelerators of the local cloud, read back through Nova's own
provider tree and provider config parser.
"""

import os
import sys
import tempfile
from unittest import mock

from nova.compute import provider_config
from nova.compute import provider_tree as provider_tree_mod
import nova.conf
from nova.virt import fake
from oslo_config import fixture as config_fixture
from oslo_utils import importutils
import testtools

from devcloud import accelerator_driver
from devcloud import accelerators

NODE = 'compute1'


class FakeAcceleratorDriverTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        self.driver = accelerator_driver.FakeAcceleratorDriver(
            fake.FakeVirtAPI())

    def tree(self) -> provider_tree_mod.ProviderTree:
        tree = provider_tree_mod.ProviderTree()
        tree.new_root(NODE, '00000000-0000-4000-8000-000000000001')
        # As the resource tracker does: once, then again on each update.
        for _ in range(2):
            self.driver.update_provider_tree(tree, NODE)
        return tree

    @staticmethod
    def names(tree) -> list:
        return sorted(tree.data(uuid).name for uuid in
                      tree.get_provider_uuids_in_tree(NODE))

    def test_a_plain_node(self):
        tree = self.tree()
        self.assertEqual([NODE], self.names(tree))
        self.assertEqual({'VCPU', 'MEMORY_MB', 'DISK_GB'},
                         set(tree.data(NODE).inventory))

    def test_physical_gpus_are_children_with_vgpus(self):
        self.conf.config(group=accelerator_driver.GROUP, physical_gpus=2,
                         vgpus_per_gpu=3)
        tree = self.tree()
        children = ['%s_pgpu%d' % (NODE, n) for n in range(2)]
        self.assertEqual(sorted([NODE] + children), self.names(tree))
        for child in children:
            data = tree.data(child)
            self.assertEqual(tree.data(NODE).uuid, data.parent_uuid)
            self.assertEqual({'VGPU'}, set(data.inventory))
            self.assertEqual(3, data.inventory['VGPU']['total'])
        self.assertNotIn('VGPU', tree.data(NODE).inventory)

    def test_dedicated_cpus_beside_shared_ones(self):
        self.conf.config(group=accelerator_driver.GROUP, pcpus=4)
        inventory = self.tree().data(NODE).inventory
        self.assertEqual(4, inventory['PCPU']['total'])
        self.assertEqual({'VCPU', 'MEMORY_MB', 'DISK_GB', 'PCPU'},
                         set(inventory))


class ProviderConfigTest(testtools.TestCase):

    def test_nova_reads_the_custom_class_and_its_trait(self):
        with tempfile.TemporaryDirectory() as location:
            with open(os.path.join(location, 'gpus.yaml'), 'w') as f:
                f.write(accelerators.provider_config({accelerators.A100: 2}))
            found = provider_config.get_provider_configs(location)
        self.assertEqual(['$COMPUTE_NODE'], list(found))
        provider = found['$COMPUTE_NODE']
        self.assertEqual([{accelerators.A100: {
            'total': 2, 'reserved': 0, 'min_unit': 1, 'max_unit': 2,
            'step_size': 1, 'allocation_ratio': 1.0}}],
            provider['inventories']['additional'])
        self.assertEqual([accelerators.A100],
                         provider['traits']['additional'])

    def test_the_cloud_names_the_driver_and_its_options(self):
        self.assertEqual(accelerators.DRIVER_GROUP, accelerator_driver.GROUP)
        # Where the local cloud's nova-compute puts it for Nova to load.
        with mock.patch.dict(sys.modules, {
                accelerator_driver.MODULE: accelerator_driver}):
            self.assertIs(accelerator_driver.FakeAcceleratorDriver,
                          importutils.import_class('nova.virt.' +
                                                   accelerators.DRIVER))
        options = {o.name for o in accelerator_driver.OPTS}
        for number in accelerators.COMPUTES:
            self.assertLessEqual(
                set(accelerators.of_compute(number)[0]), options)

    def test_each_compute_of_a_cloud_reports_one_kind(self):
        self.assertEqual(accelerators.of_compute(1),
                         accelerators.of_compute(4))
        kinds = [accelerators.of_compute(i) for i in (1, 2, 3)]
        self.assertEqual(({'physical_gpus': 2, 'vgpus_per_gpu': 1}, {}),
                         kinds[0])
        self.assertEqual(({}, {accelerators.A100: 2}), kinds[1])
        self.assertEqual(({'pcpus': 4}, {}), kinds[2])
