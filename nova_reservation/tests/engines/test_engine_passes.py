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

"""One engine's pass on MariaDB: the outcomes of many events are written
together, a slow event does not hold up the others, and a lease's events
run in their order, recorded so even by an engine whose clock is behind
(on SQLite too, where an engine claims events one by one).  Nova's
flavor calls are answered by a stand-in that can be made slow for one
flavor.
"""

import contextlib
import datetime
import threading
import time
import uuid

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from oslo_config import fixture as config_fixture
import sqlalchemy as sa
import testtools

from devcloud import machine
from devcloud import standins
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import changes as db_changes
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import models
from nova_reservation.db import notices as db_notices
from nova_reservation.engine import nova_client
from nova_reservation.engine import service
from nova_reservation import status

STORE = db_api.Context()

SLOW = 1.5


class FlavorCalls:
    """The compute API's flavor calls; those on flavor 'slow' take SLOW s.
    """

    def __init__(self) -> None:
        self.calls: list = []
        self.server = standins.serve(self.app, 0)

    def app(self, environ, start_response):
        self.calls.append((environ['REQUEST_METHOD'], environ['PATH_INFO']))
        environ['wsgi.input'].read(int(environ.get('CONTENT_LENGTH') or 0))
        if '/flavors/slow' in environ['PATH_INFO']:
            time.sleep(SLOW)
        if environ['REQUEST_METHOD'] == 'DELETE':
            start_response('202 Accepted', [('Content-Length', '0')])
            return [b'']
        start_response('200 OK', [('Content-Type', 'application/json'),
                                  ('Content-Length', '21')])
        return [b'{"flavor_access": []}']


class PassCase(testtools.TestCase):
    """An engine on a store of its own, on the flavor stand-in."""

    # The engine's clock.
    clock = staticmethod(time.time)

    def setUp(self) -> None:
        super().setUp()
        self.use_store()
        self.nova = FlavorCalls()
        self.addCleanup(self.nova.server.shutdown)
        self.reported: dict = {}
        client = nova_client.NovaClient(ks_adapter.Adapter(
            ks_session.Session(), endpoint_override='http://127.0.0.1:%d'
            '/v2.1' % self.nova.server.server_port))
        self.engine = service.Engine(client, clock=self.clock,
                                     on_event=self.on_event)
        self.addCleanup(self.engine.close)

    def use_store(self) -> None:
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore())

    def on_event(self, event, lease, outcome, details) -> None:
        self.reported[(lease.name, event.event_type)] = time.monotonic()

    def lease(self, name: str, flavor: str, start_in: float = 0,
              end_in: float = 3600) -> str:
        """A lease of one instance of `flavor` (its start gives the
        project access to it), with its start and end events.
        """
        now = db_api.utcnow()
        start = now + datetime.timedelta(seconds=start_in)
        end = now + datetime.timedelta(seconds=end_in)
        lease_id = str(uuid.uuid4())
        db_leases.create(
            STORE, db_changes.generation(STORE),
            dict(id=lease_id, name=name, project_id='p', user_id='u',
                 start_at=start, end_at=end, status='PENDING',
                 on_end='delete', created_at=now),
            [(dict(id=str(uuid.uuid4()), lease_id=lease_id, project_id='p',
                   resource_type='virtual:instance', flavor_id=flavor,
                   private_flavor_id=flavor,
                   vcpus=1, memory_mb=512, disk_gb=1, amount=1,
                   status='pending'),
              [dict(node='n1', start_at=start, end_at=end, vcpus=1,
                    memory_mb=512, disk_gb=1)])],
            [dict(event_type='start', due_at=start),
                dict(event_type='end', due_at=end)])
        return lease_id

    def statuses(self, lease_id: str) -> dict:
        return {e.event_type: e.status
                for e in db_events.of_lease(STORE, lease_id)}

    def event(self, lease_id: str, event_type: str):
        """The lease's event of that type, as the store has it."""
        return [e for e in db_events.of_lease(STORE, lease_id)
                if e.event_type == event_type][0]

    @contextlib.contextmanager
    def statements(self):
        """The first word of each statement sent to the store meanwhile."""
        sent: list = []

        def count(conn, cursor, statement, *args):
            sent.append(statement.split()[0].upper())
        engine = db_api.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', count)
        try:
            yield sent
        finally:
            sa.event.remove(engine, 'before_cursor_execute', count)


class EnginePassTest(PassCase):

    def test_the_outcomes_of_a_pass_are_written_together(self):
        # Long enough for every outcome of the pass to wait for the others,
        # however loaded the machine is.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_reservation.engine.service.RECORD_DELAY', 30))
        leases = [self.lease('l%d' % i, 'f%d' % i) for i in range(60)]
        with self.statements() as statements:
            self.assertEqual(60, self.engine.run_once())
        # A few statements for the pass, not a few per event: the store
        # would otherwise cap what one engine can do.  The writes: the
        # claim, then the events and the leases.
        self.assertLess(len(statements), 15, statements)
        self.assertEqual(3, statements.count('UPDATE'), statements)
        for lease_id in leases:
            self.assertEqual(status.DONE, self.statuses(lease_id)['start'])
            self.assertEqual('ACTIVE', db_leases.get(STORE, lease_id).status)
        self.assertEqual(60, len(self.nova.calls))

    def test_a_slow_event_does_not_hold_up_the_others(self):
        self.lease('slow-one', 'slow')
        for i in range(5):
            self.lease('quick%d' % i, 'f%d' % i)
        began = time.monotonic()
        done = threading.Thread(target=self.engine.run_once)
        done.start()
        done.join(SLOW * 4)
        self.assertEqual(6, len(self.reported), self.reported)
        for i in range(5):
            self.assertLess(self.reported[('quick%d' % i, 'start')] - began,
                            SLOW * 0.6)
        self.assertGreaterEqual(self.reported[('slow-one', 'start')] - began,
                                SLOW)

    def test_a_lease_s_events_run_in_their_order(self):
        # Both due (the engine was away for the whole lease).
        late = self.lease('late', 'f1', start_in=-20, end_in=-10)
        on_time = self.lease('on-time', 'f2')
        self.assertEqual(2, self.engine.run_once())
        self.assertEqual({'start': status.DONE, 'end': status.UNDONE},
                         self.statuses(late))
        self.assertEqual(status.DONE, self.statuses(on_time)['start'])
        self.assertIsNone(self.event(late, 'end').claimed_by)
        self.assertEqual(1, self.engine.run_once())
        self.assertEqual({'start': status.DONE, 'end': status.DONE},
                         self.statuses(late))
        self.assertEqual('TERMINATED', db_leases.get(STORE, late).status)
        self.assertLess(self.reported[('late', 'start')],
                        self.reported[('late', 'end')])
        self.assertEqual(sorted([('POST', '/v2.1/flavors/f1/action'),
                                 ('POST', '/v2.1/flavors/f2/action'),
                                 ('DELETE', '/v2.1/flavors/f1')]),
                         sorted(self.nova.calls))
        self.assertEqual([], db_api.rows(STORE, sa.select(models.Event).where(
            models.Event.status == status.IN_PROGRESS)))


class IdleLookTest(PassCase):
    """An engine with nothing due reads two times per look and writes
    nothing; an event another engine runs is not due again till
    that engine's claim expires (the engines had looked at it without a
    pause, a pass after a pass, while it ran).
    """

    def setUp(self) -> None:
        super().setUp()
        self.config = self.useFixture(config_fixture.Config(conf.CONF))

    def claim_start(self, lease_id: str, ttl: float) -> None:
        """Another engine takes the lease's start for `ttl` seconds."""
        self.assertTrue(db_events.claim(STORE, self.event(lease_id, 'start'),
                                        'other', db_api.utcnow(), ttl))

    def test_an_event_another_engine_runs_waits_for_its_claim(self):
        self.config.config(engine_poll_interval=60, group='reservation')
        lease_id = self.lease('l1', 'f1')
        self.claim_start(lease_id, ttl=20)
        self.assertGreater(self.engine.sleep_time(), 15)
        self.assertLessEqual(self.engine.sleep_time(), 20)
        self.assertGreater(self.engine.step(), 15)
        self.assertEqual([], self.nova.calls)
        start = self.event(lease_id, 'start')
        self.assertEqual((status.IN_PROGRESS, 'other'),
                         (start.status, start.claimed_by))

    def test_an_expired_claim_is_taken_over(self):
        lease_id = self.lease('l1', 'f1')
        self.claim_start(lease_id, ttl=-1)
        self.assertEqual(0, self.engine.sleep_time())
        self.assertEqual(0, self.engine.step())
        self.assertEqual(status.DONE, self.statuses(lease_id)['start'])

    def test_a_stored_notice_wakes_the_engine_when_its_claim_expires(self):
        self.config.config(engine_poll_interval=60, group='reservation')
        self.lease('l1', 'f1', start_in=3600)
        db_notices.add(STORE, [dict(
            id=str(uuid.uuid4()), lease_id='l1', event_type='lease.update',
            payload='{}', claimed_by='other',
            claim_expires=db_api.utcnow() + datetime.timedelta(seconds=20))],
            db_api.utcnow())
        self.assertGreater(self.engine.sleep_time(), 15)
        self.assertLessEqual(self.engine.sleep_time(), 20)

    def test_looks_with_nothing_due_only_read(self):
        self.config.config(engine_poll_interval=0.1, group='reservation')
        lease_id = self.lease('later', 'f1', start_in=3600)
        # Due now, but run by another engine for a minute.
        self.claim_start(self.lease('taken', 'f2'), ttl=60)
        with self.statements() as statements:
            runner = threading.Thread(target=self.engine.run_forever)
            runner.start()
            try:
                time.sleep(1.5)
            finally:
                self.engine.stop()
                runner.join(10)
        self.assertFalse(runner.is_alive())
        # About fifteen looks (fewer on a busy machine), two SELECTs each
        # (when the next event and the next notice fall due), and their
        # transaction's ROLLBACK where the driver sends one.
        selects = statements.count('SELECT')
        self.assertGreater(selects, 6, statements)
        self.assertLessEqual(selects, 32, statements)
        self.assertEqual({'SELECT'}, set(statements) - {'ROLLBACK'},
                         statements)
        self.assertEqual([], self.nova.calls)
        self.assertEqual(status.UNDONE, self.statuses(lease_id)['start'])


class ClockBehindTest(PassCase):
    """An engine whose clock is behind the store's (its host's clock a
    little slow, or a pass that took longer than its engine counted): a
    lease's event is never recorded as started before the one before it
    finished.  On MariaDB a pass claims its events in one UPDATE.
    """

    clock = staticmethod(lambda: time.time() - 5)

    def test_an_event_starts_after_the_one_before_it_finished(self):
        lease_id = self.lease('late', 'f1', start_in=-20, end_in=-10)
        self.assertEqual(1, self.engine.run_once())
        self.assertEqual(1, self.engine.run_once())
        ran = {e.event_type: e for e in db_events.of_lease(STORE, lease_id)}
        self.assertEqual({'start': status.DONE, 'end': status.DONE},
                         {k: e.status for k, e in ran.items()})
        self.assertLessEqual(ran['start'].finished_at, ran['end'].started_at)


class ClockBehindOnSQLiteTest(ClockBehindTest):
    """The same where the engine claims events one by one (SQLite)."""

    def use_store(self) -> None:
        self.useFixture(machine.SQLiteStore(migrate=True))
