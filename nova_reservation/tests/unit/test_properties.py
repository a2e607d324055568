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

import unittest

from nova_reservation import properties


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

    def test_empty_matches_all(self):
        self.assertTrue(properties.parse('')({}))
        self.assertTrue(properties.parse('[]')({}))

    def test_malformed(self):
        for text in ('[">="', '["~", "$a", 1]', '[">=", "a", 1]',
                     '{"a": 1}', '["and"]', '[">=", "$a"]'):
            self.assertRaises(properties.InvalidRequirements,
                              properties.parse, text)
