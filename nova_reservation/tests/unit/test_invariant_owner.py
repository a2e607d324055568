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

"""Which violations of the local cloud's invariants an integration test
owns while other lanes' tests run beside it.
"""

import testtools

from nova_reservation.tests.integration import checks


class LaneTest(checks.InvariantChecks):
    """A test of lane 1 with one lease (two servers bound to it, one slot)
    and a server of its own named with its suffix.
    """
    suffix = 'test_boots-1796665509'

    def __init__(self, alone: bool = False) -> None:
        self.alone = alone
        self.asked: list = []

    def alone_on_cloud(self) -> bool:
        return self.alone

    def store(self, query: str, *args) -> list:
        self.asked.append(args)
        if 'rsv_allocations' in query:
            return [{'id': 12}]
        return [{'lease': 'lease-1', 'reservation': 'rsv-1',
                 'server': 'server-1'},
                {'lease': 'lease-1', 'reservation': 'rsv-1',
                 'server': None}]

    def rest(self, url: str) -> dict:
        self.asked.append(url)
        return {'servers': [{'id': 'server-2'}]}

    @staticmethod
    def lane_nodes() -> set:
        return {'compute1-l1', 'bm1-l1'}


class OwnerTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.test = LaneTest()
        self.owns = self.test.owner()

    def test_its_lane_s_nodes_and_no_other_s(self):
        self.assertTrue(self.owns('node compute1-l1 is promised 9 of its 8'))
        self.assertTrue(self.owns('server x runs on bm1-l1, its slot 3 on '
                                  'bm2-l1'))
        for other in ('compute1', 'compute1-l12', 'compute11-l1',
                      'xcompute1-l1'):
            self.assertFalse(self.owns('node %s is promised 9 of its 8'
                                       % other), other)

    def test_its_leases_their_slots_and_servers(self):
        self.assertTrue(self.owns('lease lease-1 is left STARTING'))
        self.assertTrue(self.owns('slot 12 is held by server y, which is '
                                  'not there'))
        self.assertFalse(self.owns('slot 123 is still held by z'))
        self.assertTrue(self.owns('volume v has an attachment a (reserved)'
                                  ' for server server-1, which is not '
                                  'there'))
        self.assertTrue(self.owns('server server-2 outlives its lease q '
                                  '(DELETED)'))
        self.assertFalse(self.owns('port p (10.0.0.5) is kept for Nova '
                                   '(compute:nova) with no server'))
        # Found by the suffix in their names.
        self.assertIn(('%test_boots-1796665509%',), self.test.asked)
        self.assertIn('name=test_boots-1796665509', self.test.asked[-1])

    def test_every_violation_of_a_test_alone_is_its_own(self):
        self.assertIsNone(LaneTest(alone=True).owner())
