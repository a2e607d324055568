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

"""The store on MariaDB through PyMySQL: the ledger's compare-and-swap,
the atomic claim of events, transactions and text of every script (its
migrations: ``test_migrations``)."""

import datetime
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import sqlalchemy as sa
import testtools

from devcloud import machine
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import changes as db_changes
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import migration
from nova_reservation.db import models
from nova_reservation.db import notices as db_notices
from nova_reservation import exception
from nova_reservation.lease import outcomes
from nova_reservation import status

STORE = db_api.Context()


class MariaDBStoreTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')

    def store(self, migrate: bool = True) -> str:
        return self.useFixture(machine.MariaDBStore(migrate)).url

    def test_ledger_and_claims_on_mariadb(self):
        self.store()
        gen = db_changes.generation(STORE)
        now = db_api.utcnow().replace(microsecond=123456)
        lease = dict(id=str(uuid.uuid4()), name='l1', project_id='p',
                     user_id='u', start_at=now, end_at=now, status='PENDING',
                     on_end='delete', created_at=now)
        res = dict(id=str(uuid.uuid4()), lease_id=lease['id'],
                   project_id='p', resource_type='server', vcpus=1,
                   memory_mb=512, disk_gb=1, amount=1, status='pending')
        db_leases.create(STORE, gen, lease, [(res, [dict(
            node='n1', start_at=now, end_at=now, vcpus=1, memory_mb=512,
            disk_gb=1)])], [dict(event_type='start', due_at=now)])
        # A writer that planned on the same node before loses; one on
        # another node does not have to plan again.
        for node, conflict in (('n1', True), ('n2', False)):
            other = dict(lease, id=str(uuid.uuid4()))
            write = (db_leases.create, STORE, gen, other, [(dict(
                res, id=str(uuid.uuid4()), lease_id=other['id']), [dict(
                    node=node, start_at=now, end_at=now, vcpus=1,
                    memory_mb=512, disk_gb=1)])], [])
            if conflict:
                self.assertRaises(exception.LedgerConflict, *write)
            else:
                write[0](*write[1:])
        event = db_events.due(STORE, now + datetime.timedelta(seconds=1))[0]
        self.assertEqual(now, event.due_at)
        self.assertTrue(db_events.claim(STORE, event, 'a', now, 60))
        self.assertFalse(db_events.claim(STORE, event, 'b', now, 60))
        later = now + datetime.timedelta(seconds=61)
        self.assertTrue(db_events.claim(STORE, event, 'b', later, 60))

    def test_names_in_every_script_on_a_three_byte_connection(self):
        # Tables made in a utf8mb3 database before 0005, and Nova's usual
        # connection string (charset=utf8: three bytes a character).
        store = self.useFixture(machine.MariaDBStore(
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
        # A lease row of then (this code's reservations have columns added
        # since).
        lease_id, now = str(uuid.uuid4()), db_api.utcnow()
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Lease.__table__).values(
                id=lease_id, name='before', project_id='p', user_id='u',
                start_at=now, end_at=now, status='ACTIVE',
                created_at=now))
        migration.db_sync(engine)
        self.assertEqual({'utf8mb4'}, charsets())
        # Rows made before the conversion are kept.
        self.assertEqual('before', db_leases.get(STORE, lease_id).name)
        name = 'l\U0001F600 夜 ñ'
        lease_id = self._lease_with_bound_slot(name)
        self.assertEqual(name, db_leases.get(STORE, lease_id).name)
        self.assertEqual([name], [x.name for x in db_leases.get_all(STORE)
                                  if x.id == lease_id])
        # A look-up by any text is an answer, not an error.
        self.assertIsNone(db_leases.get(STORE, '\U0001F600'))
        self.assertIsNone(db_leases.reservation(STORE, '\U0001F600'))
        self.assertIsNone(db_leases.reservation_of_flavor(STORE, '\U0001F600'))

    def _lease_with_bound_slot(self, name: str, bound: bool = True,
                               node: str = 'n1') -> str:
        """A lease's id: one slot on `node`, held by a new server if
        `bound`.
        """
        now = db_api.utcnow()
        lease_id, res_id = str(uuid.uuid4()), str(uuid.uuid4())
        db_leases.create(
            STORE, db_changes.generation(STORE),
            dict(id=lease_id, name=name, project_id='p', user_id='u',
                 start_at=now, end_at=now, status='ACTIVE',
                 on_end='delete', created_at=now),
            [(dict(id=res_id, lease_id=lease_id, project_id='p',
                   resource_type='server', vcpus=1, memory_mb=512,
                   disk_gb=1, amount=1, status='active'),
              [dict(node=node, start_at=now, end_at=now, vcpus=1,
                    memory_mb=512, disk_gb=1)])],
            [dict(event_type='start', due_at=now),
                dict(event_type='end', due_at=now)])
        if bound:
            db_bindings.bind_servers(STORE, lease_id, res_id,
                                     [str(uuid.uuid4())])
        return lease_id

    def test_binding_writes_keep_to_the_binding_moves(self):
        # A server that failed or ended is not passed on to a next
        # occurrence, nor bound again: it takes no slot of it.
        self.store()
        first = self._lease_with_bound_slot('first')
        uuid_, = [b.instance_uuid for b in db_bindings.of_lease(STORE, first)]
        following = self._lease_with_bound_slot('next', False, 'n2')
        res_id = db_leases.reservations(STORE, following)[0].id

        def state():
            binding, = db_bindings.of_servers(STORE, [uuid_])
            return binding.lease_id, binding.state

        def holder():
            slot, = db_ledger.slots(STORE, res_id)
            return slot.instance_uuid
        self.assertTrue(db_bindings.set_binding(STORE, uuid_,
                                                state=status.FAILED))
        db_bindings.pass_on(STORE, uuid_, following, res_id)
        self.assertEqual((first, status.FAILED), state())
        self.assertIsNone(holder())
        self.assertTrue(db_bindings.set_binding(STORE, uuid_,
                                                state=status.ENDED))
        db_bindings.bind_servers(STORE, following, res_id, [uuid_])
        self.assertEqual((first, status.ENDED), state())
        self.assertIsNone(holder())
        # From a state that may move to RESERVED, it goes on.
        other = self._lease_with_bound_slot('other')
        uuid_, = [b.instance_uuid for b in db_bindings.of_lease(STORE, other)]
        db_bindings.pass_on(STORE, uuid_, following, res_id)
        self.assertEqual((following, status.RESERVED), state())
        self.assertEqual(uuid_, holder())

    def test_outcomes_are_written_in_one_transaction(self):
        self.store()
        ended, failed, waiting, lost = [
            self._lease_with_bound_slot(n)
            for n in ('ended', 'failed', 'waiting', 'lost')]
        now = db_api.utcnow()
        claimed = {e.lease_id + e.event_type: e for e in db_events.claim_due(
            STORE, 'engine-a', now + datetime.timedelta(seconds=1), 60, 100)}
        self.assertEqual(8, len(claimed))
        claim = claimed[ended + 'end'].claimed_by
        # Another engine took this one over.
        with db_api.writing(STORE) as session:
            session.execute(sa.update(models.Event).where(
                models.Event.id == claimed[lost + 'end'].id).values(
                claimed_by='engine-b'))
        retry_at = now + datetime.timedelta(seconds=30)
        results = [
            outcomes.Outcome(claimed[ended + 'end'].id, claim, status.DONE,
                             lease_id=ended, lease_status='TERMINATED',
                             notice=dict(id=str(uuid.uuid4()),
                                         lease_id=ended,
                                         event_type='lease.event.end_lease',
                                         payload='{}', claimed_by='engine-a',
                                         claim_expires=retry_at)),
            outcomes.Outcome(claimed[failed + 'end'].id, claim, status.ERROR,
                             lease_id=failed, lease_status='ERROR',
                             error='end failed: nova said no'),
            outcomes.Outcome(claimed[waiting + 'end'].id, claim,
                             status.UNDONE, due_at=retry_at, failed=True,
                             error='end failed: try again'),
            outcomes.Outcome(claimed[lost + 'end'].id, claim, status.DONE,
                             lease_id=lost, lease_status='TERMINATED')]
        written = outcomes.record(STORE, results)
        self.assertEqual({o.event_id for o in results[:3]}, written)
        events = {e.id: e for lease_id in (ended, failed, waiting, lost)
                  for e in db_events.of_lease(STORE, lease_id)}
        done = events[claimed[ended + 'end'].id]
        self.assertEqual((status.DONE, 1), (done.status, done.runs))
        self.assertIsNotNone(done.finished_at)
        error = events[claimed[failed + 'end'].id]
        self.assertEqual((status.ERROR, 0, 'end failed: nova said no'),
                         (error.status, error.runs, error.last_error))
        again = events[claimed[waiting + 'end'].id]
        self.assertEqual((status.UNDONE, None, retry_at, 1),
                         (again.status, again.claimed_by, again.due_at,
                          again.attempts))
        self.assertEqual(status.IN_PROGRESS,
                         events[claimed[lost + 'end'].id].status)
        self.assertEqual(('TERMINATED', 'ERROR', 'ACTIVE', 'ACTIVE'), tuple(
            db_leases.get(STORE, i).status
            for i in (ended, failed, waiting, lost)))
        self.assertEqual('end failed: nova said no',
                         db_leases.get(STORE, failed).status_reason)
        # The ended lease leaves its server as an ordinary one; the others
        # keep theirs.
        bound = {lease_id: [
            s.instance_uuid for r in db_leases.reservations(STORE, lease_id)
            for s in db_ledger.slots(STORE, r.id)]
            for lease_id in (ended, lost)}
        self.assertEqual([None], bound[ended])
        self.assertIsNotNone(bound[lost][0])
        self.assertEqual([ended], [n.lease_id
                                   for n in db_notices.unsent(STORE)])

    def test_writes_made_with_one_context_are_one_transaction(self):
        self.store()
        lease_id = self._lease_with_bound_slot('composed')
        uuid_ = db_bindings.of_lease(STORE, lease_id)[0].instance_uuid

        @db_api.writer
        def end_then_fail(ctx):
            db_bindings.servers_gone(ctx, [uuid_])
            db_events.add(ctx, lease_id, [dict(event_type='bind',
                                               due_at=db_api.utcnow())])
            raise RuntimeError('the third write failed')
        self.assertRaises(RuntimeError, end_then_fail, STORE)
        # Nothing of the first two writes is left.
        self.assertEqual(['BOOTING'], [
            b.state for b in db_bindings.of_lease(STORE, lease_id)])
        self.assertEqual([uuid_], [
            s.instance_uuid for r in db_leases.reservations(STORE, lease_id)
            for s in db_ledger.slots(STORE, r.id)])
        self.assertEqual(['start', 'end'], [
            e.event_type for e in db_events.of_lease(STORE, lease_id)])

    def test_an_action_writes_only_with_its_outcome(self):
        self.store()
        kept, lost = (self._lease_with_bound_slot(n) for n in ('kept', 'lost'))
        now = db_api.utcnow()
        claimed = {e.lease_id + e.event_type: e for e in db_events.claim_due(
            STORE, 'engine-a', now + datetime.timedelta(seconds=1), 60, 100)}
        claim = claimed[kept + 'start'].claimed_by
        # Another engine took the lost lease's start over meanwhile.
        with db_api.writing(STORE) as session:
            session.execute(sa.update(models.Event).where(
                models.Event.id == claimed[lost + 'start'].id).values(
                claimed_by='engine-b'))
        results = []
        for lease_id in (kept, lost):
            writes = outcomes.Writes()
            binding = db_bindings.of_lease(STORE, lease_id)[0]
            writes.add(db_bindings.set_binding, binding.instance_uuid,
                       state=status.ACTIVE)
            results.append(outcomes.Outcome(
                claimed[lease_id + 'start'].id, claim, status.DONE,
                lease_id=lease_id, lease_status=status.ACTIVE,
                writes=tuple(writes.calls)))
        self.assertEqual({results[0].event_id},
                         outcomes.record(STORE, results))
        self.assertEqual(
            {kept: [status.ACTIVE], lost: [status.BOOTING]},
            {x: [b.state for b in db_bindings.of_lease(STORE, x)]
             for x in (kept, lost)})

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
        details = db_leases.details(STORE, leases + ['no-such-lease'])
        self.assertEqual(4, len(statements), statements)
        self.assertEqual(set(leases), set(details))
        for lease_id, d in details.items():
            self.assertEqual(lease_id, d.lease.id)
            self.assertEqual([lease_id], [r.lease_id for r in d.reservations])
            self.assertEqual(1, len(d.bindings))
            self.assertEqual(['start', 'end'],
                             [e.event_type for e in d.events])
        self.assertNotIn('no-such-lease', details)

    def test_engine_reads_nova_conf_and_stops_on_sigterm(self):
        self.url = self.store()
        with tempfile.NamedTemporaryFile('w', suffix='.conf') as conf, \
                tempfile.NamedTemporaryFile('w+', suffix='.log') as log:
            conf.write('[api_database]\nconnection = %s\n'
                       '[reservation]\nauth_type = none\n'
                       'endpoint_override = http://127.0.0.1:9/v2.1\n'
                       'engine_poll_interval = 0.2\n' % self.url)
            conf.flush()
            proc = subprocess.Popen(
                [sys.executable, '-c', 'from nova_reservation.cmd import '
                 'engine; engine.main()', '--config-file', conf.name],
                stdout=log, stderr=subprocess.STDOUT, text=True)

            def said(text: str) -> bool:
                deadline = time.time() + 120
                while time.time() < deadline and proc.poll() is None:
                    log.seek(0)
                    if text in log.read():
                        return True
                    time.sleep(0.2)
                return False
            try:
                self.assertTrue(said('Could not check the compute nodes'),
                                'the engine did not start')
                # SIGHUP: the configuration is read again (log levels).
                conf.write('[DEFAULT]\ndebug = true\n')
                conf.flush()
                proc.send_signal(signal.SIGHUP)
                self.assertTrue(said('DEBUG'), 'SIGHUP stopped the engine')
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
            log.seek(0)
            out = log.read()
        self.assertEqual(0, proc.returncode, out[-3000:])
        self.assertIn('running', out)
        before, _, after = out.partition('reading the configuration again')
        self.assertNotIn(' DEBUG ', before)
        self.assertIn(' DEBUG ', after)
        self.assertIn('stopped', after)
        # Nova is not there: said plainly, and the engine goes on.
        self.assertIn('Could not check the compute nodes', out)
        self.assertNotIn('Traceback', out)
