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

"""The store on MariaDB through PyMySQL: migrations, the ledger's
compare-and-swap and the atomic claim of events, with the real
``nova-reservation-manage db sync``."""

import datetime
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import sqlalchemy as sa
import testtools

from nova_reservation.db import api as db_api
from nova_reservation.db import migration
from nova_reservation.db import models
from nova_reservation.tests.functional import fixtures as rsv_fixtures


class MariaDBStoreTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        rsv_fixtures.require(self, rsv_fixtures.mariadb_available(),
                             'MariaDB')

    def store(self, migrate: bool = True) -> str:
        return self.useFixture(rsv_fixtures.MariaDBStore(migrate)).url

    def test_manage_db_sync(self):
        self.url = self.store(migrate=False)
        with tempfile.NamedTemporaryFile('w', suffix='.conf') as conf:
            conf.write('[api_database]\nconnection = %s\n' % self.url)
            conf.flush()
            out = subprocess.run(
                [sys.executable, '-c', 'from nova_reservation.cmd import '
                 'manage; raise SystemExit(manage.main())',
                 '--config-file', conf.name, 'db', 'sync'],
                capture_output=True, text=True, timeout=120)
        self.assertEqual(0, out.returncode, out.stderr[-2000:])
        self.assertIn('revision %s' % migration.head(), out.stdout)
        self.assertEqual('0005', migration.head())
        engine = sa.create_engine(self.url)
        self.addCleanup(engine.dispose)
        tables = set(sa.inspect(engine).get_table_names())
        self.assertTrue({'rsv_leases', 'rsv_reservations', 'rsv_allocations',
                         'rsv_events', 'rsv_server_bindings', 'rsv_ledger',
                         'rsv_alembic_version', 'rsv_hosts',
                         'rsv_notices'} <= tables, tables)
        # Sub-second times survive the round trip.
        cols = {c['name']: c for c in sa.inspect(engine).get_columns(
            'rsv_events')}
        self.assertEqual(6, getattr(cols['due_at']['type'], 'fsp', None))

    def test_ledger_and_claims_on_mariadb(self):
        self.store()
        epoch, gen, _, _ = db_api.ledger_changes(None, -1)
        now = db_api.utcnow().replace(microsecond=123456)
        lease = dict(id=str(uuid.uuid4()), name='l1', project_id='p',
                     user_id='u', start_at=now, end_at=now, status='PENDING',
                     on_end='delete', created_at=now)
        res = dict(id=str(uuid.uuid4()), lease_id=lease['id'],
                   project_id='p', resource_type='server', vcpus=1,
                   memory_mb=512, disk_gb=1, amount=1, status='pending')
        db_api.create_lease(gen, lease, [(res, [dict(
            node='n1', start_at=now, end_at=now, vcpus=1, memory_mb=512,
            disk_gb=1)])], [dict(event_type='start', due_at=now)])
        # A writer that planned on the same node before loses; one on
        # another node does not have to plan again.
        for node, conflict in (('n1', True), ('n2', False)):
            other = dict(lease, id=str(uuid.uuid4()))
            write = (db_api.create_lease, gen, other, [(dict(
                res, id=str(uuid.uuid4()), lease_id=other['id']), [dict(
                    node=node, start_at=now, end_at=now, vcpus=1,
                    memory_mb=512, disk_gb=1)])], [])
            if conflict:
                self.assertRaises(db_api.LedgerConflict, *write)
            else:
                write[0](*write[1:])
        event = db_api.due_events(now + datetime.timedelta(seconds=1))[0]
        self.assertEqual(now, event.due_at)
        self.assertTrue(db_api.claim_event(event, 'a', now, 60))
        self.assertFalse(db_api.claim_event(event, 'b', now, 60))
        later = now + datetime.timedelta(seconds=61)
        self.assertTrue(db_api.claim_event(event, 'b', later, 60))

    def test_names_in_every_script_on_a_three_byte_connection(self):
        # Tables made in a utf8mb3 database before 0005, and Nova's usual
        # connection string (charset=utf8: three bytes a character).
        store = self.useFixture(rsv_fixtures.MariaDBStore(
            migrate='0004', charset='utf8', database_charset='utf8mb3'))
        engine = sa.create_engine(store.url)
        self.addCleanup(engine.dispose)

        def charsets():
            query = sa.text(
                'SELECT DISTINCT character_set_name FROM '
                'information_schema.columns WHERE table_schema = '
                'DATABASE() AND table_name IN :tables AND '
                'character_set_name IS NOT NULL').bindparams(
                    sa.bindparam('tables', expanding=True))
            with engine.connect() as conn:
                return set(conn.execute(query, {'tables': list(
                    models.Base.metadata.tables)}).scalars())
        self.assertEqual({'utf8mb3'}, charsets())
        lease_id = self._lease_with_bound_slot('before')
        migration.db_sync(engine)
        self.assertEqual({'utf8mb4'}, charsets())
        # Rows made before the conversion are kept.
        self.assertEqual('before', db_api.get_lease(lease_id).name)
        name = 'l\U0001F600 夜 ñ'
        lease_id = self._lease_with_bound_slot(name)
        self.assertEqual(name, db_api.get_lease(lease_id).name)
        self.assertEqual([name], [x.name for x in db_api.list_leases()
                                  if x.id == lease_id])
        # A look-up by any text is an answer, not an error.
        self.assertIsNone(db_api.get_lease('\U0001F600'))
        self.assertIsNone(db_api.get_reservation('\U0001F600'))
        self.assertIsNone(db_api.reservation_of_flavor('\U0001F600'))

    def _lease_with_bound_slot(self, name: str) -> str:
        now = db_api.utcnow()
        lease_id, res_id = str(uuid.uuid4()), str(uuid.uuid4())
        db_api.create_lease(
            db_api.ledger_changes(None, -1)[1],
            dict(id=lease_id, name=name, project_id='p', user_id='u',
                 start_at=now, end_at=now, status='ACTIVE',
                 on_end='delete', created_at=now),
            [(dict(id=res_id, lease_id=lease_id, project_id='p',
                   resource_type='server', vcpus=1, memory_mb=512,
                   disk_gb=1, amount=1, status='active'),
              [dict(node='n1', start_at=now, end_at=now, vcpus=1,
                    memory_mb=512, disk_gb=1)])],
            [dict(event_type='start', due_at=now),
             dict(event_type='end', due_at=now)])
        db_api.bind_servers(lease_id, res_id, [str(uuid.uuid4())])
        return lease_id

    def test_outcomes_are_written_in_one_transaction(self):
        self.store()
        ended, failed, waiting, lost = [
            self._lease_with_bound_slot(n)
            for n in ('ended', 'failed', 'waiting', 'lost')]
        now = db_api.utcnow()
        claimed = {e.lease_id + e.event_type: e for e in db_api.claim_due(
            'engine-a', now + datetime.timedelta(seconds=1), 60, 100)}
        self.assertEqual(8, len(claimed))
        holder = claimed[ended + 'end'].claimed_by
        # Another engine took this one over.
        with db_api._writer() as session:
            session.execute(sa.update(models.Event).where(
                models.Event.id == claimed[lost + 'end'].id).values(
                claimed_by='engine-b'))
        retry_at = now + datetime.timedelta(seconds=30)
        outcomes = [
            db_api.Outcome(claimed[ended + 'end'].id, holder, db_api.DONE,
                           lease_id=ended, lease_status='TERMINATED',
                           notice=dict(id=str(uuid.uuid4()),
                                       lease_id=ended,
                                       event_type='lease.event.end_lease',
                                       payload='{}', claimed_by='engine-a',
                                       claim_expires=retry_at)),
            db_api.Outcome(claimed[failed + 'end'].id, holder, db_api.ERROR,
                           lease_id=failed, lease_status='ERROR',
                           error='end failed: nova said no'),
            db_api.Outcome(claimed[waiting + 'end'].id, holder,
                           db_api.UNDONE, due_at=retry_at, failed=True,
                           error='end failed: try again'),
            db_api.Outcome(claimed[lost + 'end'].id, holder, db_api.DONE,
                           lease_id=lost, lease_status='TERMINATED')]
        written = db_api.record_events(outcomes)
        self.assertEqual({o.event_id for o in outcomes[:3]}, written)
        events = {e.id: e for lease_id in (ended, failed, waiting, lost)
                  for e in db_api.events_of(lease_id)}
        done = events[claimed[ended + 'end'].id]
        self.assertEqual((db_api.DONE, 1), (done.status, done.runs))
        self.assertIsNotNone(done.finished_at)
        error = events[claimed[failed + 'end'].id]
        self.assertEqual((db_api.ERROR, 0, 'end failed: nova said no'),
                         (error.status, error.runs, error.last_error))
        again = events[claimed[waiting + 'end'].id]
        self.assertEqual((db_api.UNDONE, None, retry_at, 1),
                         (again.status, again.claimed_by, again.due_at,
                          again.attempts))
        self.assertEqual(db_api.IN_PROGRESS,
                         events[claimed[lost + 'end'].id].status)
        self.assertEqual(('TERMINATED', 'ERROR', 'ACTIVE', 'ACTIVE'), tuple(
            db_api.get_lease(i).status
            for i in (ended, failed, waiting, lost)))
        self.assertEqual('end failed: nova said no',
                         db_api.get_lease(failed).status_reason)
        # The ended lease leaves its server as an ordinary one; the others
        # keep theirs.
        bound = {lease_id: [s.instance_uuid for r in db_api.reservations_of(
            lease_id) for s in db_api.allocations_of(r.id)]
            for lease_id in (ended, lost)}
        self.assertEqual([None], bound[ended])
        self.assertIsNotNone(bound[lost][0])
        self.assertEqual([ended], [n.lease_id
                                   for n in db_api.unsent_notices()])

    def test_details_of_many_leases_in_one_query_per_table(self):
        self.store()
        leases = [self._lease_with_bound_slot('l%d' % i) for i in range(20)]
        statements = []

        def count(conn, cursor, statement, *args):
            statements.append(statement)
        engine = db_api.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', count)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        count)
        details = db_api.leases_details(leases + ['no-such-lease'])
        self.assertEqual(4, len(statements), statements)
        self.assertEqual(set(leases), set(details))
        for lease_id, d in details.items():
            self.assertEqual(lease_id, d.lease.id)
            self.assertEqual([lease_id], [r.lease_id for r in d.reservations])
            self.assertEqual(1, len(d.bindings))
            self.assertEqual(['start', 'end'],
                             [e.event_type for e in d.events])
        self.assertIsNone(db_api.lease_details('no-such-lease').lease)

    def test_engine_reads_nova_conf_and_stops_on_sigterm(self):
        self.url = self.store()
        with tempfile.NamedTemporaryFile('w', suffix='.conf') as conf:
            conf.write('[api_database]\nconnection = %s\n'
                       '[reservation]\nauth_type = none\n'
                       'endpoint_override = http://127.0.0.1:9/v2.1\n'
                       'engine_poll_interval = 0.2\n' % self.url)
            conf.flush()
            proc = subprocess.Popen(
                [sys.executable, '-c', 'from nova_reservation.cmd import '
                 'engine; engine.main()', '--config-file', conf.name],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                time.sleep(4)
                self.assertIsNone(proc.poll(), 'the engine exited early')
                proc.send_signal(signal.SIGTERM)
                out, _ = proc.communicate(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
        self.assertEqual(0, proc.returncode, out[-3000:])
        self.assertIn('running', out)
        # Nova is not there: said plainly, and the engine goes on.
        self.assertIn('Could not check the compute nodes', out)
        self.assertNotIn('Traceback', out)
