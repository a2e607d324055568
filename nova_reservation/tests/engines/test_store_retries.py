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

"""Transactions that MariaDB rolls back for a deadlock (as a Galera cluster
does for a certification conflict) run again whole: the callers see
neither the error nor half of a write.
"""

import datetime
import threading

from oslo_db import exception as db_exception
import sqlalchemy as sa
import testtools

from devcloud import machine
from nova_reservation.db import api as db_api
from nova_reservation.db import models

T = models.Turn


@db_api.writer
def crossing(ctx, case: 'DeadlockTest', order: str) -> None:
    """Take the two rows in `order`; the two writers meet between their
    first and second row on the first attempt only: a deadlock.
    """
    case.attempts[order] += 1
    first, second = order
    ctx.session.execute(sa.update(T).where(T.name == first).values(
        engine=order))
    if case.attempts[order] == 1:
        case.meet.wait()
    ctx.session.execute(sa.update(T).where(T.name == second).values(
        engine=order))


@db_api.writer
def around(ctx, case: 'DeadlockTest', order: str) -> None:
    """`crossing` inside a transaction of its own."""
    crossing(ctx, case, order)


class DeadlockTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore())
        until = datetime.datetime(2030, 1, 1)
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.insert(T), [
                dict(name=n, engine='nobody', until=until) for n in 'ab'])
        self.meet = threading.Barrier(2, timeout=30)
        self.attempts = {'ab': 0, 'ba': 0}

    def run_both(self, write=crossing) -> dict:
        """Both writers at once; {order: the error it met}."""
        errors = {}

        def run(order):
            try:
                write(db_api.Context(), self, order)
            except Exception as e:
                errors[order] = e
        threads = [threading.Thread(target=run, args=(o,))
                   for o in ('ab', 'ba')]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        return errors

    def owners(self) -> set:
        with db_api.get_engine().connect() as conn:
            return {e for e, in conn.execute(sa.select(T.engine))}

    def test_the_loser_of_a_deadlock_runs_again(self):
        self.assertEqual({}, self.run_both())
        # One writer ran once; the other was rolled back and ran again.
        self.assertEqual([1, 2], sorted(self.attempts.values()))
        # Each transaction whole: both rows are the last writer's.
        self.assertEqual(1, len(self.owners()))

    def test_a_write_within_a_transaction_runs_again_with_it(self):
        self.assertEqual({}, self.run_both(around))
        self.assertEqual([1, 2], sorted(self.attempts.values()))
        self.assertEqual(1, len(self.owners()))

    def test_a_deadlock_each_time_is_raised_at_last(self):
        self.patch(db_api, 'DEADLOCK_RETRIES', 0)
        errors = self.run_both()
        self.assertEqual(1, len(errors), errors)
        self.assertIsInstance(next(iter(errors.values())),
                              db_exception.DBDeadlock)
