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
        self.assertEqual('0004', migration.head())
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
        # A writer that read the ledger before loses.
        self.assertRaises(db_api.LedgerConflict, db_api.create_lease, gen,
                          dict(lease, id=str(uuid.uuid4())),
                          [(dict(res, id=str(uuid.uuid4())), [])], [])
        event = db_api.due_events(now + datetime.timedelta(seconds=1))[0]
        self.assertEqual(now, event.due_at)
        self.assertTrue(db_api.claim_event(event, 'a', now, 60))
        self.assertFalse(db_api.claim_event(event, 'b', now, 60))
        later = now + datetime.timedelta(seconds=61)
        self.assertTrue(db_api.claim_event(event, 'b', later, 60))

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
