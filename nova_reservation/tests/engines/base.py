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

"""What the engine-process tests share: engines on the machine's MariaDB
and a RabbitMQ vhost of their own, leases made straight in the store, and
a listener of the notifications that reach the broker."""

import collections
import datetime
import threading
import time

from oslo_config import cfg
import oslo_messaging
import sqlalchemy as sa
import testtools

from devcloud import invariants
from devcloud import machine
from nova_reservation.db import api as db_api
from nova_reservation.db import models
from nova_reservation import status

STORE = db_api.Context()


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


class EnginesTestCase(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        machine.require(self, machine.rabbitmq_available(), 'RabbitMQ')
        self.store = self.useFixture(machine.MariaDBStore())
        self.vhost = self.useFixture(machine.RabbitVhost())
        self.addCleanup(self.assert_invariants)

    def assert_invariants(self) -> None:
        """What must hold after any scenario (`devcloud.invariants`): the
        store's part, as Nova is not here (no servers, no nodes).
        """
        self.assertEqual([], invariants.violations(
            db_api.get_engine(), [], lambda path: {'resource_providers': []},
            db_api.utcnow()))

    def engine(self, claim: int = 300) -> machine.EngineProcess:
        return self.useFixture(machine.EngineProcess(
            machine.engine_conf(self.vhost.url, self.store.url,
                                claim=claim)))

    def make_leases(self, count: int) -> list:
        """Capacity leases (no servers: the events are the work)."""
        now = db_api.utcnow()
        start = now + datetime.timedelta(hours=1)
        end = start + datetime.timedelta(hours=1)
        return [machine.capacity_lease(STORE, 'l%d' % i, 'node%d' % (i % 50),
                                       start, end) for i in range(count)]

    def make_due(self, delay: float, spread: float = 5.0) -> None:
        """Every start falls due `delay` s from now, within `spread` s, and
        every end in the `spread` s that follow.
        """
        t0 = db_api.utcnow() + datetime.timedelta(seconds=delay)
        with db_api.writing(STORE) as session:
            events = session.execute(sa.select(models.Event)).scalars()
            for n, e in enumerate(events):
                offset = (n % 100) * spread / 100 + (
                    spread + 1 if e.event_type == 'end' else 0)
                e.due_at = e.scheduled_at = t0 + datetime.timedelta(
                    seconds=offset)

    def events(self) -> list:
        return db_api.rows(STORE, sa.select(models.Event))

    def wait_done(self, timeout: float) -> list:
        deadline = time.time() + timeout
        while time.time() < deadline:
            events = self.events()
            if all(e.status == status.DONE for e in events):
                return events
            time.sleep(0.2)
        left = [(e.event_type, e.status, e.claimed_by) for e in self.events()
                if e.status != status.DONE]
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

    def run_through(self, outage, leases: int, claim: int = 300) -> tuple:
        """Two engines run `leases` leases; `outage()` strikes mid-run.

        Returns (lease ids, events once all are done, listener).
        """
        ids = self.make_leases(leases)
        listener = Listener(self.vhost.url)
        self.addCleanup(listener.stop)
        engines = [self.engine(claim=claim) for _ in range(2)]
        for e in engines:
            e.engine_id()
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
