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
import subprocess
import threading
import time
import uuid

from oslo_config import cfg
import oslo_messaging
import pymysql
import sqlalchemy as sa
import testtools

from nova_reservation.db import api as db_api
from nova_reservation.db import models
from nova_reservation.tests.functional import fixtures as rsv_fixtures


class Listener:
    """Collects the notifications that reach the broker."""

    def __init__(self, url: str) -> None:
        conf = cfg.ConfigOpts()
        conf([], project='listener')
        transport = oslo_messaging.get_notification_transport(conf, url=url)
        conf.set_override('amqp_durable_queues', True,
                          group='oslo_messaging_rabbit')
        self.received = []
        self._lock = threading.Lock()
        self._listener = oslo_messaging.get_notification_listener(
            transport, [oslo_messaging.Target(topic='notifications')],
            [self], executor='threading')
        self._listener.start()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self._lock:
            self.received.append((event_type, payload['lease_id'],
                                  metadata['timestamp']))

    def stop(self) -> None:
        self._listener.stop()
        self._listener.wait()


class EnginesTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        rsv_fixtures.require(self, rsv_fixtures.mariadb_available(),
                             'MariaDB')
        rsv_fixtures.require(self, rsv_fixtures.rabbitmq_available(),
                             'RabbitMQ')
        self.store = self.useFixture(rsv_fixtures.MariaDBStore())
        self.vhost = self.useFixture(rsv_fixtures.RabbitVhost())

    def engine(self, claim: int = 300) -> rsv_fixtures.EngineProcess:
        return self.useFixture(rsv_fixtures.EngineProcess(
            rsv_fixtures.engine_conf(self.vhost.url, self.store.url,
                                     claim=claim)))

    def make_leases(self, count: int) -> list:
        """Capacity leases (no servers: the events are the work)."""
        now = db_api.utcnow()
        start = now + datetime.timedelta(hours=1)
        end = start + datetime.timedelta(hours=1)
        ids = []
        for i in range(count):
            lease_id = str(uuid.uuid4())
            gen = db_api.ledger_changes(None, -1)[1]
            db_api.create_lease(
                gen, dict(id=lease_id, name='l%d' % i, project_id='p',
                          user_id='u', start_at=start, end_at=end,
                          status='PENDING', on_end='delete',
                          created_at=now),
                [(dict(id=str(uuid.uuid4()), lease_id=lease_id,
                       project_id='p', resource_type='flavor:instance',
                       vcpus=1, memory_mb=512, disk_gb=1, amount=1,
                       status='pending'),
                  [dict(node='node%d' % (i % 50), start_at=start,
                        end_at=end, vcpus=1, memory_mb=512, disk_gb=1)])],
                [dict(event_type='start', due_at=start),
                 dict(event_type='end', due_at=end)])
            ids.append(lease_id)
        return ids

    def make_due(self, delay: float, spread: float = 5.0) -> None:
        """Every start falls due `delay` s from now, within `spread` s, and
        every end in the `spread` s that follow.
        """
        t0 = db_api.utcnow() + datetime.timedelta(seconds=delay)
        with db_api._writer() as session:
            events = session.execute(sa.select(models.Event)).scalars()
            for n, e in enumerate(events):
                offset = (n % 100) * spread / 100 + (
                    spread + 1 if e.event_type == 'end' else 0)
                e.due_at = e.scheduled_at = t0 + datetime.timedelta(
                    seconds=offset)

    def events(self) -> list:
        return db_api._select(sa.select(models.Event))

    def wait_done(self, timeout: float) -> list:
        deadline = time.time() + timeout
        while time.time() < deadline:
            events = self.events()
            if all(e.status == db_api.DONE for e in events):
                return events
            time.sleep(0.2)
        left = [(e.event_type, e.status, e.claimed_by) for e in self.events()
                if e.status != db_api.DONE]
        self.fail('%d events not done: %s' % (len(left), left[:5]))

    def wait_received(self, listener, count: int, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline and len(listener.received) < count:
            time.sleep(0.1)
        time.sleep(1.0)   # anything sent twice would come now

    def assert_told_once(self, listener, leases) -> None:
        """Each lease's start and end were told once each."""
        told = collections.Counter(
            (event_type, lease_id) for event_type, lease_id, _ in
            listener.received)
        for lease_id in leases:
            for name in ('start_lease', 'end_lease'):
                self.assertEqual(1, told[('lease.event.%s' % name,
                                          lease_id)], (lease_id, name))

    def test_start_and_end_due_after_an_outage_with_three_engines(self):
        leases = self.make_leases(150)
        # The engines were away for the whole of every lease.
        past = db_api.utcnow() - datetime.timedelta(minutes=10)
        with db_api._writer() as session:
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
            self.assertEqual('TERMINATED', db_api.get_lease(lease_id).status)

    def test_three_engines_run_every_event_once_and_on_time(self):
        leases = self.make_leases(500)
        listener = Listener(self.vhost.url)
        self.addCleanup(listener.stop)
        engines = [self.engine() for _ in range(3)]
        workers = {e.worker_id() for e in engines}
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
            x.status for x in db_api.list_leases()})

    def test_a_killed_engine_s_events_are_finished_by_another(self):
        self.make_leases(200)
        listener = Listener(self.vhost.url)
        self.addCleanup(listener.stop)
        doomed = self.engine(claim=5)
        doomed_id = doomed.worker_id()
        self.make_due(delay=0.5, spread=1.0)

        # Freeze the engine in the middle of events, then kill it.
        held = []
        deadline = time.time() + 30
        conn = pymysql.connect(database=self.store.name, autocommit=True,
                               **rsv_fixtures.MARIADB)
        self.addCleanup(conn.close)

        def holding():
            with conn.cursor() as cur:
                cur.execute('SELECT id FROM rsv_events WHERE claimed_by LIKE '
                            '%s AND status = %s', (doomed_id + '%',
                                                   db_api.IN_PROGRESS))
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
            e.worker_id()
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

    def run_through(self, outage, leases: int, claim: int = 300) -> tuple:
        """Two engines run `leases` leases; `outage()` strikes mid-run.

        Returns (lease ids, events once all are done, listener).
        """
        ids = self.make_leases(leases)
        listener = Listener(self.vhost.url)
        self.addCleanup(listener.stop)
        engines = [self.engine(claim=claim) for _ in range(2)]
        for e in engines:
            e.worker_id()
        self.make_due(delay=1.0, spread=6.0)
        time.sleep(3.0)
        outage()
        events = self.wait_done(timeout=180)
        for e in engines:
            self.assertIsNone(e.proc.poll(), 'an engine died')
        # No event lost or run twice.
        self.assertEqual(2 * leases, len(events))
        self.assertEqual({1}, {e.runs for e in events})
        return ids, listener

    def test_database_restart_during_a_run(self):
        self.addCleanup(rsv_fixtures.start_mariadb)   # whatever happens
        leases, listener = self.run_through(rsv_fixtures.restart_mariadb,
                                            150, claim=10)
        self.wait_received(listener, 300, timeout=60)
        self.assert_told_once(listener, leases)

    def test_broker_restart_during_a_run(self):
        ctl = ['rabbitmqctl', '-q']
        self.addCleanup(subprocess.run, ctl + ['start_app'],
                        capture_output=True)

        def restart():
            subprocess.run(ctl + ['stop_app'], check=True,
                           capture_output=True)
            time.sleep(3.0)
            subprocess.run(ctl + ['start_app'], check=True,
                           capture_output=True)
        leases, listener = self.run_through(restart, 100)
        self.wait_received(listener, 200, timeout=20)
        # Nothing told twice.  (A notification on its way while the broker
        # restarts may be lost: README.)
        told = collections.Counter(
            (event_type, lease_id) for event_type, lease_id, _ in
            listener.received)
        self.assertEqual({1}, set(told.values()))
        self.assertLessEqual({lease_id for _, lease_id in told},
                             set(leases))
