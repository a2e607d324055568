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

"""What every lane left: while tests run side by side, each checks the
invariants of what it owns (`checks.InvariantChecks.owner`); once the
lanes are done, this checks them on the whole cloud, so that what no
test owns (a port Nova kept, an address) is not left unchecked.
"""

from nova_reservation.tests.integration import base


class WholeCloudTest(base.CloudTestCase):
    LAST = True

    def setUp(self) -> None:
        super().setUp()
        # Every test is done: what does not hold now was left by one.
        self.earlier = set()

    def test_every_invariant_holds_once_the_lanes_are_done(self):
        self.assert_invariants()
