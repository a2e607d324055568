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

"""The local cloud's bare-metal nodes (``up --baremetal``): one fake
nova-compute serving several nodes with UUIDs that outlive a restart,
each reporting one unit of its class and its trait, as Ironic's driver
reports a node's resource class.
"""

import sys
from unittest import mock

from nova.compute import provider_tree
import nova.conf
from nova.virt import fake
from oslo_config import fixture as config_fixture
from oslo_utils import importutils
import testtools

from devcloud import baremetal
from devcloud import nodes_driver


class FakeNodesDriverTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(nova.conf.CONF))

    def driver(self) -> nodes_driver.FakeNodesDriver:
        found = nodes_driver.FakeNodesDriver(fake.FakeVirtAPI())
        found.init_host(baremetal.SERVICE)
        return found

    def test_the_nodes_of_its_option(self):
        self.conf.config(group=nodes_driver.GROUP, nodes=list(
            baremetal.NODES))
        driver = self.driver()
        self.assertEqual(['bm1', 'bm2', 'bm3'], driver.get_available_nodes())
        by_uuid = driver.get_nodenames_by_uuid()
        self.assertEqual(['bm1', 'bm2', 'bm3'], sorted(by_uuid.values()))
        # The node UUID the resource tracker writes is the one the driver
        # says it has, in this process and the next (a restart would
        # otherwise look like a node renamed, which Nova refuses).
        for node in ('bm1', 'bm3'):
            made = driver.get_available_resource(node)['uuid']
            self.assertEqual(node, by_uuid[made])
            self.assertEqual(made, self.driver().get_available_resource(
                node)['uuid'])
        self.assertEqual(3, len(set(by_uuid)))

    def test_without_nodes_one_named_as_its_host(self):
        self.assertEqual([baremetal.SERVICE],
                         self.driver().get_available_nodes())

    def test_nova_loads_it_where_the_cloud_puts_it(self):
        with mock.patch.dict(sys.modules, {
                nodes_driver.MODULE: nodes_driver}):
            self.assertIs(nodes_driver.FakeNodesDriver,
                          importutils.import_class('nova.virt.' +
                                                   baremetal.DRIVER))


class NodeClassTest(testtools.TestCase):

    def test_each_node_reports_one_unit_of_its_class_and_its_trait(self):
        conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        conf.config(group=nodes_driver.GROUP, **baremetal.options())
        driver = nodes_driver.FakeNodesDriver(fake.FakeVirtAPI())
        driver.init_host(baremetal.SERVICE)
        tree = provider_tree.ProviderTree()
        for node, rc in baremetal.NODES.items():
            tree.new_root(node, nodes_driver.node_uuid(node))
            driver.update_provider_tree(tree, node)
            data = tree.data(node)
            self.assertEqual({
                'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
                'step_size': 1, 'allocation_ratio': 1.0},
                data.inventory[rc])
            self.assertIn(rc, data.traits)
            # Its class alone, as Ironic's nodes: no vCPU, RAM or disk.
            self.assertEqual([rc], list(data.inventory))
            resources = driver.get_available_resource(node)
            self.assertEqual((0, 0, 0), (resources['vcpus'],
                                         resources['memory_mb'],
                                         resources['local_gb']))
            self.assertEqual(nodes_driver.node_uuid(node), resources['uuid'])
        # As Ironic's: a node's unit is reserved while a server is on it.
        instance = mock.Mock(uuid='vm1', node='bm1', flavor=mock.Mock(
            vcpus=0, memory_mb=0, root_gb=0))
        instance.name = 'vm1'
        driver.spawn(None, instance, None, [], None, {})
        driver.update_provider_tree(tree, 'bm1')
        self.assertEqual(1, tree.data('bm1').inventory[baremetal.GOLD][
            'reserved'])
        driver.destroy(None, instance, None)
        driver.update_provider_tree(tree, 'bm1')
        self.assertEqual(0, tree.data('bm1').inventory[baremetal.GOLD][
            'reserved'])
        # A bare-metal flavor asks for its class and no standard one.
        specs = baremetal.FLAVORS['bm.gold'][3]
        self.assertEqual({'resources:CUSTOM_BAREMETAL_GOLD': '1',
                          'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                          'resources:DISK_GB': '0'}, specs)
