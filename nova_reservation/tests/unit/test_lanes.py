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

"""The split of the integration suite over the local clouds."""
import json

import testtools
import yaml

from devcloud import accelerators
from devcloud import lanes
from nova_reservation.lease import properties


class LanesTest(testtools.TestCase):

    def test_a_cloud_of_one_lane_keeps_its_names_and_asks_nothing(self):
        self.assertEqual('compute1', lanes.node('compute1', 0, 1))
        self.assertEqual('m1.tiny', lanes.flavor('m1.tiny', 0, 1))
        self.assertEqual({}, lanes.extra_specs(0, 1))
        self.assertEqual('', lanes.requirements(0, 1))
        also = '[">=", "$vcpus", "4"]'
        self.assertEqual(json.loads(also),
                         json.loads(lanes.requirements(0, 1, also)))

    def test_each_lane_its_nodes_flavors_and_trait(self):
        # The first lane keeps the nodes' names, not the flavors': the
        # cloud's own flavors ask for no lane.
        self.assertEqual(['compute1', 'compute1-l1', 'bm3-l2'],
                         [lanes.node('compute1', 0, 3),
                          lanes.node('compute1', 1, 3),
                          lanes.node('bm3', 2, 3)])
        self.assertEqual(['m1.tiny-l0', 'g1.a100-l2'],
                         [lanes.flavor('m1.tiny', 0, 3),
                          lanes.flavor('g1.a100', 2, 3)])
        self.assertEqual({'trait:CUSTOM_LANE_1': 'required'},
                         lanes.extra_specs(1, 3))

    def test_requirements_hold_on_the_lane_s_nodes_only(self):
        def node(name, *traits):
            return {'hypervisor_hostname': name, 'traits': frozenset(traits)}
        own = node('compute1-l1', 'CUSTOM_LANE_1', 'CUSTOM_GPU_A100')
        other = node('compute1-l2', 'CUSTOM_LANE_2', 'CUSTOM_GPU_A100')
        bare = node('compute2-l1', 'CUSTOM_LANE_1')
        only_lane = properties.parse(lanes.requirements(1, 3))
        self.assertEqual([True, False, True],
                         [only_lane(n) for n in (own, other, bare)])
        gpu = properties.parse(lanes.requirements(
            1, 3, ['==', '$traits', 'CUSTOM_GPU_A100']))
        self.assertEqual([True, False, False],
                         [gpu(n) for n in (own, other, bare)])

    def test_a_node_s_provider_config_gives_it_its_lane_s_trait(self):
        config = yaml.safe_load(accelerators.provider_config(
            {accelerators.A100: 2}, (lanes.trait(1, 3),)))
        provider, = config['providers']
        self.assertEqual(['CUSTOM_GPU_A100', 'CUSTOM_LANE_1'],
                         provider['traits']['additional'])

    def test_a_violation_is_a_test_s_when_it_names_what_the_test_owns(self):
        # What an integration test owns: its lane's nodes, its leases,
        # their slots and servers, and what is named with its suffix.
        owns = lanes.names_any(
            ['lease-1', 'slot 12 ', 'server-1', '', 'test_boots-179666'],
            {'compute1-l1', 'bm1-l1'})
        self.assertTrue(owns('node compute1-l1 is promised 9 of its 8'))
        self.assertTrue(owns('server x runs on bm1-l1, its slot 3 on y'))
        for other in ('compute1', 'compute1-l12', 'compute11-l1',
                      'xcompute1-l1'):
            self.assertFalse(owns('node %s is promised 9 of its 8' % other),
                             other)
        self.assertTrue(owns('lease lease-1 is left STARTING'))
        self.assertTrue(owns('slot 12 is held by server y, which is not '
                             'there'))
        self.assertFalse(owns('slot 123 is still held by z'))
        self.assertTrue(owns('volume v has an attachment a (reserved) for '
                             'server server-1, which is not there'))
        self.assertTrue(owns('port p (vm-test_boots-179666) is left'))
        self.assertFalse(owns('port p (10.0.0.5) is kept for Nova '
                              '(compute:nova) with no server'))
        # Nothing owned: nothing is the test's.
        self.assertFalse(lanes.names_any([], [])('node compute1 is x'))
