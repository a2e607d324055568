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

import types
import unittest

from nova_reservation import capacity
from nova_reservation import exception
from nova_reservation.lease import properties


class PropertiesTest(unittest.TestCase):

    def test_numbers_compare_as_numbers(self):
        match = properties.parse('[">=", "$vcpus", "16"]')
        self.assertTrue(match({'vcpus': 32}))
        self.assertTrue(match({'vcpus': '32'}))
        self.assertFalse(match({'vcpus': 8}))
        self.assertFalse(match({}))

    def test_text_and_combinations(self):
        match = properties.parse(
            '["and", ["==", "$hypervisor_type", "fake"], '
            '["or", ["=", "$gpu", "true"], ["<", "$memory_mb", 4096]]]')
        self.assertTrue(match({'hypervisor_type': 'fake', 'gpu': 'true'}))
        self.assertTrue(match({'hypervisor_type': 'fake',
                               'memory_mb': 2048}))
        self.assertFalse(match({'hypervisor_type': 'QEMU', 'gpu': 'true'}))

    def test_a_property_of_several_values_holds_if_one_does(self):
        gpu = properties.parse('["==", "$traits", "CUSTOM_GPU"]')
        not_gpu = properties.parse('["!=", "$traits", "CUSTOM_GPU"]')
        big = properties.parse('[">=", "$sizes", "16"]')
        for traits, has in ((['CUSTOM_GPU', 'HW_X'], True), (['HW_X'], False),
                            ([], False)):
            self.assertEqual(has, gpu({'traits': traits}))
            self.assertEqual(not has, not_gpu({'traits': traits}))
        self.assertTrue(big({'sizes': ['8', 32]}))
        self.assertFalse(big({'sizes': ['8', 'x']}))

    def test_a_node_s_traits_are_its_tree_s(self):
        node = capacity.Host(
            node='bm1', capacity=capacity.ZERO,
            traits=frozenset({'COMPUTE_NODE', 'CUSTOM_BAREMETAL_GOLD'}),
            child_traits=(('gpu0', frozenset({'CUSTOM_A100'})),))
        row = types.SimpleNamespace(
            vcpus=0, memory_mb=0, local_gb=0, hypervisor_type='ironic',
            hypervisor_version=1, hypervisor_hostname='bm1',
            service_name='ironic-compute',
            extra_capabilities='{"node_type": "gpu_a100"}')
        every = {'COMPUTE_NODE', 'CUSTOM_BAREMETAL_GOLD', 'CUSTOM_A100'}
        self.assertEqual(every, properties.hypervisor(node, row)['traits'])
        self.assertEqual({'traits': every, 'node_type': 'gpu_a100'},
                         properties.resource(node, row))
        # An operator's capability of that name is the one matched.
        row.extra_capabilities = '{"traits": "mine"}'
        self.assertEqual({'traits': 'mine'}, properties.resource(node, row))

    def test_names_asked_about_may_be_limited(self):
        names = properties.NODE_NAMES
        match = properties.parse(
            '["or", ["==", "$traits", "X"], ["==", "$hypervisor_hostname", '
            '"n1"]]', names)
        self.assertTrue(match({'traits': ['X']}))
        for text in ('[">=", "$vcpus", "2"]',
                     '["and", ["==", "$traits", "X"], ["==", "$gpu", "1"]]'):
            self.assertRaises(exception.InvalidRequirements,
                              properties.parse, text, names)
            properties.parse(text)   # for a host, any

    def test_empty_matches_all(self):
        self.assertTrue(properties.parse('')({}))
        self.assertTrue(properties.parse('[]')({}))

    def test_malformed(self):
        for text in ('[">="', '["~", "$a", 1]', '[">=", "a", 1]',
                     '{"a": 1}', '["and"]', '[">=", "$a"]'):
            self.assertRaises(exception.InvalidRequirements,
                              properties.parse, text)
