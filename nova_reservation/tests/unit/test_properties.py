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
