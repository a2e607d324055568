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

"""Two schedulers' records of passes on MariaDB, at once: the second
waits for the first's lock, and finds the passes it decided on changed
(`nova_reservation.db.passes`).
"""

import datetime
import threading
import time

import sqlalchemy as sa
import testtools

from devcloud import machine
from nova_reservation import capacity
from nova_reservation.db import api as db_api
from nova_reservation.db import models
from nova_reservation.db import passes as db_passes

NEED = capacity.Resources(1, 512, 1)


class PassesLockTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore(True))

    def test_a_record_made_meanwhile_sends_the_other_back(self):
        since = db_api.utcnow() - datetime.timedelta(minutes=1)
        inside = threading.Event()

        @db_api.writer
        def first(ctx) -> None:
            # Another scheduler's record, its lock held a second.
            db_passes.take_lock(ctx, db_passes.LOCK)
            ctx.session.execute(sa.insert(models.Pass).values(
                instance_uuid='first', node='node1', vcpus=1, memory_mb=512,
                disk_gb=1, created_at=db_api.utcnow()))
            inside.set()
            time.sleep(1.0)

        errors = []
        thread = threading.Thread(target=lambda: self._run(first, errors))
        thread.start()
        self.assertTrue(inside.wait(30))
        began = time.monotonic()
        # Decided on no other pass: waits for the lock, then finds one.
        self.assertFalse(db_passes.record(
            db_api.Context(), 'second', ['node1'], since, NEED,
            capacity.NO_EXTRAS, set(), ['node1']))
        self.assertGreater(time.monotonic() - began, 0.5)
        thread.join(30)
        self.assertFalse(thread.is_alive())
        self.assertEqual([], errors)
        # Decided again on what is there: recorded.
        rows = db_passes.others(db_api.Context(), 'second', ['node1'], since)
        self.assertEqual(['first'], [r.instance_uuid for r in rows])
        self.assertTrue(db_passes.record(
            db_api.Context(), 'second', ['node1'], since, NEED,
            capacity.NO_EXTRAS, {r.id for r in rows}, ['node1']))
        rows = db_passes.others(db_api.Context(), 'first', ['node1'], since)
        self.assertEqual(['second'], [r.instance_uuid for r in rows])

    def test_a_boot_s_passes_replace_its_earlier_ones(self):
        since = db_api.utcnow() - datetime.timedelta(minutes=1)
        gpu = capacity.extras({('', 'CUSTOM_GPU_A100'): 1})
        for nodes in (['node1', 'node2'], ['node2']):
            self.assertTrue(db_passes.record(
                db_api.Context(), 'boot', ['node1', 'node2'], since, NEED,
                gpu, set(), nodes))
        rows = db_passes.others(db_api.Context(), 'another',
                                ['node1', 'node2'], since)
        self.assertEqual([('node2', NEED, gpu)], [
            (r.node, db_passes.need_of(r), db_passes.extras_of(r))
            for r in rows])

    @staticmethod
    def _run(fn, errors: list) -> None:
        try:
            fn(db_api.Context())
        except Exception as error:
            errors.append(error)
