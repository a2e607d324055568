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

"""kill -9 of an engine process in the middle of a lease's start, with real
Nova: another engine finishes the start, the server runs on its host, and
Nova was asked to start it once."""

import os
import signal
import socketserver
import sqlite3
import threading
import time
from wsgiref import simple_server

import fixtures
from nova import context as nova_context
from nova import utils

from devcloud import machine
from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation import status
from nova_reservation.tests.functional import base

STORE = db_api.Context()

ENGINE_CONF = """
[api_database]
connection = %(db)s
[reservation]
auth_type = none
endpoint_override = %(nova)s
event_claim_timeout = 5
engine_poll_interval = 0.2
action_poll_interval = 0.2
"""


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


class EngineCrashTest(base.ReservationTestCase):

    def setUp(self) -> None:
        if not utils.concurrency_mode_threading():
            # Engine processes share the harness's database file, which
            # only native threads mode has (tools/run-tests sets it).
            self.skipTest('run with OS_NOVA_DISABLE_EVENTLET_PATCHING=1')
        super().setUp()
        # Nova's API on a real port, so that engine processes reach it; the
        # harness's stand-in for Keystone takes them for the admin.
        fake_ctx = nova_context.RequestContext

        def admin_unless_told(env, **kwargs):
            return fake_ctx(env.get('HTTP_X_AUTH_USER', 'admin'),
                            env.get('HTTP_X_AUTH_PROJECT_ID', 'admin'),
                            is_admin='HTTP_X_AUTH_USER' not in env or
                            env['HTTP_X_AUTH_USER'] == 'admin',
                            roles=env.get('HTTP_X_ROLES',
                                          'admin,member,reader').split(','),
                            **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.auth.NovaKeystoneContext._create_context',
            admin_unless_told))
        server = simple_server.make_server(
            '127.0.0.1', 0, self.api_fixture.app(), server_class=_Server,
            handler_class=_Quiet)
        server.timeout = 0.1
        stop = threading.Event()

        def serve():
            # Nova's harness may run on eventlet's green threads: the loop
            # must yield (time.sleep) and notice the end of the test.
            while not stop.is_set():
                server.handle_request()
                time.sleep(0.001)
        runner = threading.Thread(target=serve, daemon=True)
        runner.start()
        self.addCleanup(server.server_close)
        self.addCleanup(runner.join, 10)
        self.addCleanup(stop.set)
        self.nova_url = 'http://127.0.0.1:%d/v2.1' % server.server_port
        self.db_url = str(db_api.get_engine().url)
        self.db_path = db_api.get_engine().url.database

    def engine_process(self) -> machine.EngineProcess:
        return self.useFixture(machine.EngineProcess(ENGINE_CONF % {
            'db': self.db_url, 'nova': self.nova_url}))

    def kill_9_during(self, lease_id: str, event_type: str,
                      after: str) -> str:
        """The lease's `event_type` falls due now; an engine takes it and
        is killed (kill -9) before it is done; another engine finishes it,
        and the lease reaches `after`.  Returns the killed engine's id.
        """
        with sqlite3.connect(self.db_path) as conn:
            conn.execute("UPDATE rsv_events SET due_at = ? WHERE lease_id = ?"
                         " AND event_type = ?",
                         (str(db_api.utcnow()), lease_id, event_type))
        doomed = self.engine_process()
        doomed_id = doomed.engine_id()

        def claimed() -> bool:
            with sqlite3.connect(self.db_path) as conn:
                return bool(conn.execute(
                    "SELECT id FROM rsv_events WHERE claimed_by = ? AND "
                    "status = 'IN_PROGRESS'", (doomed_id,)).fetchall())
        deadline = time.time() + 30
        while not claimed() and time.time() < deadline:
            time.sleep(0.005)
        os.kill(doomed.proc.pid, signal.SIGSTOP)
        self.assertTrue(claimed(), 'the engine never took the %s'
                        % event_type)
        doomed.kill()

        survivor = self.engine_process()
        survivor.engine_id()
        deadline = time.time() + 60
        while time.time() < deadline:
            if db_leases.get(STORE, lease_id).status == after:
                break
            time.sleep(0.2)
        self.assertEqual(after, db_leases.get(STORE, lease_id).status,
                         survivor.output()[-3000:])
        return doomed_id

    def test_kill_9_during_a_start(self):
        uuid = self.boot_reserved()
        lease = db_leases.get(
            STORE, self.api.get_server(uuid)['reservation']['lease_id'])
        slot = db_ledger.slot_of(
            STORE, db_leases.reservations(STORE, lease.id)[0].id, uuid)
        doomed_id = self.kill_9_during(lease.id, 'start', 'ACTIVE')
        start = next(e for e in db_events.of_lease(STORE, lease.id)
                     if e.event_type == 'start')
        self.assertEqual((status.DONE, 1), (start.status, start.runs))
        self.assertNotEqual(doomed_id, start.claimed_by)
        server = self.admin_api.get_server(uuid)
        self.assertEqual(('ACTIVE', slot.host),
                         (server['status'], server['OS-EXT-SRV-ATTR:host']))
        actions = [a['action'] for a in self.admin_api.api_get(
            '/servers/%s/os-instance-actions' % uuid).body[
            'instanceActions']]
        self.assertEqual(1, actions.count('unshelve'), actions)
        # The lease runs, whole, on the reserved node.
        after = db_leases.get(STORE, lease.id)
        self.assertEqual((status.ACTIVE, False),
                         (after.status, after.degraded))
        self.assertEqual([uuid], [s.instance_uuid for s in db_ledger.slots(
            STORE, slot.reservation_id) if s.host == slot.host])

    def test_kill_9_during_an_end(self):
        resp = self.boot(base.params('now', base.when(60)))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        lease_id = resp.body['server']['reservation']['lease_id']
        self._wait_for_state_change(self.api.get_server(uuid), 'ACTIVE')
        self.run_engine()
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease_id).status)
        doomed_id = self.kill_9_during(lease_id, 'end', 'TERMINATED')
        end = next(e for e in db_events.of_lease(STORE, lease_id)
                   if e.event_type == 'end')
        self.assertEqual((status.DONE, 1), (end.status, end.runs))
        self.assertNotEqual(doomed_id, end.claimed_by)
        self.wait_gone(uuid)
        self.assertEqual([], [
            a for r in db_leases.reservations(STORE, lease_id)
            for a in db_ledger.slots(STORE, r.id) if a.instance_uuid])

    def test_sigterm_during_a_start_lets_it_finish(self):
        uuid = self.boot_reserved()
        lease_id = self.api.get_server(uuid)['reservation']['lease_id']
        with sqlite3.connect(self.db_path) as conn:
            conn.execute("UPDATE rsv_events SET due_at = ? WHERE lease_id = ?"
                         " AND event_type = 'start'",
                         (str(db_api.utcnow()), lease_id))
        engine = self.engine_process()
        engine_id = engine.engine_id()
        deadline = time.time() + 30
        while time.time() < deadline and not [
                e for e in db_events.of_lease(STORE, lease_id)
                if e.event_type == 'start' and e.claimed_by == engine_id]:
            time.sleep(0.005)
        engine.proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, engine.proc.wait(60), engine.output()[-3000:])
        # Its outcome was written before it left: nothing waits for the
        # claim to expire (as after a kill -9).
        start = next(e for e in db_events.of_lease(STORE, lease_id)
                     if e.event_type == 'start')
        self.assertNotEqual(status.IN_PROGRESS, start.status,
                            engine.output()[-3000:])
        self.assertIn('stopped', engine.output())
        self.assertNotIn('Traceback', engine.output())
        survivor = self.engine_process()
        survivor.engine_id()
        deadline = time.time() + 60
        while time.time() < deadline and db_leases.get(
                STORE, lease_id).status != status.ACTIVE:
            time.sleep(0.2)
        self.assertEqual(status.ACTIVE, db_leases.get(STORE, lease_id).status)
