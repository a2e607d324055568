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

"""Several engine processes on the machine's MariaDB, telling RabbitMQ:
every event runs exactly once, on time, and survives an engine's death."""

import collections
import datetime
import os
import signal
import time

import pymysql
import sqlalchemy as sa

from devcloud import machine
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import models
from nova_reservation import status
from nova_reservation.tests.engines import base

STORE = db_api.Context()


class EnginesTest(base.EnginesTestCase):

    def test_start_and_end_due_after_an_outage_with_three_engines(self):
        leases = self.make_leases(150)
        # The engines were away for the whole of every lease.
        past = db_api.utcnow() - datetime.timedelta(minutes=10)
        with db_api.writing(STORE) as session:
            for e in session.execute(sa.select(models.Event)).scalars():
                e.due_at = e.scheduled_at = past + datetime.timedelta(
                    seconds=60 if e.event_type == 'end' else 0)
        for _ in range(3):
            self.engine()
        events = self.wait_done(90)
        by_lease = collections.defaultdict(dict)
        for e in events:
            by_lease[e.lease_id][e.event_type] = e
        for lease_id in leases:
            start, end = by_lease[lease_id]['start'], by_lease[lease_id][
                'end']
            self.assertEqual((1, 1), (start.runs, end.runs))
            self.assertLessEqual(start.finished_at, end.started_at)
            self.assertEqual('TERMINATED',
                             db_leases.get(STORE, lease_id).status)

    def test_three_engines_run_every_event_once_and_on_time(self):
        leases = self.make_leases(500)
        listener = base.Listener(self.vhost.url)
        self.addCleanup(listener.stop)
        engines = [self.engine() for _ in range(3)]
        workers = {e.engine_id() for e in engines}
        self.make_due(delay=2.0)
        events = self.wait_done(timeout=120)
        self.wait_received(listener, 1000, timeout=30)
        for e in engines:
            self.assertEqual(0, e.stop(), e.output()[-2000:])

        self.assertEqual(1000, len(events))
        self.assertEqual({1}, {e.runs for e in events})
        self.assertLessEqual({e.claimed_by.split('/')[0] for e in events},
                             workers)
        lateness = sorted((e.started_at - e.scheduled_at).total_seconds()
                          for e in events)
        p99 = lateness[int(len(lateness) * 0.99) - 1]
        self.assertLessEqual(p99, 1.0, 'lateness p50 %.3f s, p99 %.3f s'
                             % (lateness[len(lateness) // 2], p99))

        told = collections.defaultdict(list)
        for event_type, lease_id, _ in listener.received:
            told[lease_id].append(event_type)
        self.assertEqual(set(leases), set(told))
        for lease_id in leases:
            self.assertEqual(['lease.event.start_lease',
                              'lease.event.end_lease'], told[lease_id])
        self.assertEqual({'TERMINATED'}, {
            x.status for x in db_leases.get_all(STORE)})

    def test_a_killed_engine_s_events_are_finished_by_another(self):
        self.make_leases(200)
        listener = base.Listener(self.vhost.url)
        self.addCleanup(listener.stop)
        doomed = self.engine(claim=5)
        doomed_id = doomed.engine_id()
        self.make_due(delay=0.5, spread=1.0)

        # Freeze the engine in the middle of events, then kill it.
        held = []
        deadline = time.time() + 30
        conn = pymysql.connect(database=self.store.name, autocommit=True,
                               **machine.MARIADB)
        self.addCleanup(conn.close)

        def holding():
            with conn.cursor() as cur:
                cur.execute('SELECT id FROM rsv_events WHERE claimed_by LIKE '
                            '%s AND status = %s', (doomed_id + '%',
                                                   status.IN_PROGRESS))
                return [row[0] for row in cur.fetchall()]
        while not held and time.time() < deadline:
            if holding():
                os.kill(doomed.proc.pid, signal.SIGSTOP)
                held = holding()
                if not held:
                    os.kill(doomed.proc.pid, signal.SIGCONT)
            time.sleep(0.002)
        self.assertTrue(held, 'the engine never held an event: %s'
                        % doomed.output()[-3000:])
        doomed.kill()

        survivors = [self.engine(), self.engine()]
        for e in survivors:
            e.engine_id()
        events = self.wait_done(timeout=120)
        self.wait_received(listener, 400, timeout=30)
        self.assertEqual({1}, {e.runs for e in events})
        taken_over = [e for e in events if e.id in held]
        self.assertTrue(taken_over)
        self.assertNotIn(doomed_id, {e.claimed_by.split('/')[0]
                                     for e in taken_over})
        told = collections.Counter(
            (event_type, lease_id) for event_type, lease_id, _ in
            listener.received)
        for e in taken_over:
            name = 'lease.event.%s_lease' % e.event_type
            self.assertEqual(1, told[(name, e.lease_id)], e.event_type)
