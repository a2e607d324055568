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

"""Two schedulers' decisions on MariaDB, at once: the second waits for the
first's lock and sees its pass (`nova_reservation.db.passes`).
"""

import datetime
import threading
import time

import testtools

from devcloud import machine
from nova_reservation import capacity
from nova_reservation.db import api as db_api
from nova_reservation.db import passes as db_passes

NEED = capacity.Resources(1, 512, 1)


class PassesLockTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore(True))

    def test_decisions_at_once_are_made_one_after_the_other(self):
        seen = {}
        inside = threading.Event()
        since = db_api.utcnow() - datetime.timedelta(minutes=1)

        def decide(name: str, hold: float) -> None:
            def judge(others, now):
                seen[name] = sorted(r.instance_uuid for r in others)
                inside.set()
                time.sleep(hold)   # the other decision comes meanwhile
                return {'node1'}, True
            db_passes.decide(db_api.Context(), name, ['node1'], since,
                             NEED, judge)

        first = threading.Thread(target=decide, args=('first', 1.0))
        first.start()
        self.assertTrue(inside.wait(30))
        began = time.monotonic()
        decide('second', 0)
        first.join(30)
        self.assertEqual({'first': [], 'second': ['first']}, seen)
        self.assertGreater(time.monotonic() - began, 0.5)

    def test_a_decision_that_is_not_final_writes_nothing(self):
        since = db_api.utcnow() - datetime.timedelta(minutes=1)
        db_passes.decide(db_api.Context(), 'waiting', ['node1'], since,
                         NEED, lambda others, now: ({'node1'}, False))
        seen = []
        db_passes.decide(db_api.Context(), 'next', ['node1'], since, NEED,
                         lambda others, now: (seen.extend(others) or set(),
                                              True))
        self.assertEqual([], seen)
