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

"""The store's migrations on MariaDB: the real ``nova-reservation-manage db
sync``, the tables they make against the models, and rows written by an
earlier release kept through them."""

import datetime
import subprocess
import sys
import tempfile
import uuid

from alembic import autogenerate
from alembic import migration as alembic_migration
from oslo_utils import uuidutils
import sqlalchemy as sa
import testtools

from devcloud import machine
from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import changes as db_changes
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import migration
from nova_reservation.db import models
from nova_reservation.db import passes as db_passes
from nova_reservation.db import quotas as db_quotas
from nova_reservation.lease import quotas as lease_quotas
from nova_reservation.ledger import memory as ledger_mod

STORE = db_api.Context()


class MigrationTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')

    def store(self, migrate: bool = True) -> str:
        return self.useFixture(machine.MariaDBStore(migrate)).url

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
        self.assertEqual('0020', migration.head())
        engine = sa.create_engine(self.url)
        self.addCleanup(engine.dispose)
        tables = set(sa.inspect(engine).get_table_names())
        self.assertTrue({'rsv_leases', 'rsv_reservations', 'rsv_allocations',
                         'rsv_events', 'rsv_server_bindings', 'rsv_ledger',
                         'rsv_alembic_version', 'rsv_hosts',
                         'rsv_notices', 'rsv_host_properties',
                         'rsv_turns', 'rsv_passes', 'rsv_locks'} <= tables,
                        tables)
        # Sub-second times survive the round trip.
        cols = {c['name']: c for c in sa.inspect(engine).get_columns(
            'rsv_events')}
        self.assertEqual(6, getattr(cols['due_at']['type'], 'fsp', None))

    def test_the_migrations_make_the_tables_the_models_describe(self):
        engine = sa.create_engine(self.store())
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            found = autogenerate.compare_metadata(
                alembic_migration.MigrationContext.configure(
                    conn, opts={'compare_type': True}),
                models.Base.metadata)
        # Alembic's own table is the migrations', not the models'.
        self.assertEqual([], [d for d in found if not (
            d[0] == 'remove_table' and d[1].name == 'rsv_alembic_version')])

    def test_events_of_before_0007_get_a_uuid_and_a_creation_time(self):
        store = self.useFixture(machine.MariaDBStore(migrate='0006'))
        engine = sa.create_engine(store.url)
        self.addCleanup(engine.dispose)
        lease_id = str(uuid.uuid4())
        created = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901)
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Lease.__table__).values(
                id=lease_id, name='before', project_id='p', user_id='u',
                start_at=created, end_at=created, status='PENDING',
                created_at=created))
            # Rows of then: the columns 0006 has.
            for kind in ('start', 'end'):
                conn.execute(sa.text(
                    "INSERT INTO rsv_events (lease_id, event_type, due_at, "
                    "status, attempts, runs) VALUES (:l, :k, :d, 'UNDONE', "
                    "0, 0)"), dict(l=lease_id, k=kind, d=created))
        migration.db_sync(engine)
        events = db_events.of_lease(STORE, lease_id)
        self.assertEqual(2, len({e.uuid for e in events}))
        for e in events:
            self.assertTrue(uuidutils.is_uuid_like(e.uuid), e.uuid)
            self.assertEqual(created, e.created_at)
        # A new event gets its own.
        db_events.add(STORE, lease_id, [dict(event_type='before_end',
                                             due_at=created)])
        self.assertEqual(3, len({e.uuid for e in db_events.of_lease(
            STORE, lease_id)}))

    def test_slots_before_0018_hold_no_extras_and_new_ones_keep_theirs(self):
        store = self.useFixture(machine.MariaDBStore(migrate='0017'))
        engine = sa.create_engine(store.url)
        self.addCleanup(engine.dispose)
        start = datetime.datetime(2030, 1, 2, 3, 0, 0)
        end = start + datetime.timedelta(hours=2)
        gpu = capacity.extras({('', 'CUSTOM_GPU_A100'): 1,
                               ('child-1', 'VGPU'): 2})

        def lease(name: str) -> tuple:
            lease_id = str(uuid.uuid4())
            return (dict(id=lease_id, name=name, project_id='p',
                         user_id='u', start_at=start, end_at=end,
                         status='PENDING', on_end='delete',
                         created_at=start),
                    dict(id=str(uuid.uuid4()), lease_id=lease_id,
                         project_id='p', resource_type='server', vcpus=1,
                         memory_mb=512, disk_gb=1, amount=1,
                         status='pending'),
                    dict(node='n1', start_at=start, end_at=end, vcpus=1,
                         memory_mb=512, disk_gb=1))

        # A slot written by the release before: its row as it was.
        values, reservation, slot = lease('before')
        gen = db_changes.generation(STORE)
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Lease.__table__).values(**values))
            conn.execute(sa.insert(models.Reservation.__table__).values(
                generation=gen, **reservation))
            conn.execute(sa.insert(models.Slot.__table__).values(
                reservation_id=reservation['id'], generation=gen,
                deleted=False, **slot))
        migration.db_sync(engine)
        ledger = ledger_mod.Ledger()
        ledger.refresh()
        timeline = ledger.timelines['n1']
        self.assertEqual([capacity.NO_EXTRAS],
                         [s.extras for s in timeline.slots()])
        values, reservation, slot = lease('gpu')
        db_leases.create(STORE, db_changes.generation(STORE), values, [(
            reservation, [dict(slot, extras=db_ledger.extras_column(gpu))])],
            [])
        ledger.refresh()
        timeline = ledger.timelines['n1']
        self.assertEqual([capacity.NO_EXTRAS, gpu],
                         [s.extras for s in timeline.slots()])
        at = epoch.to_epoch(start)
        self.assertEqual({('', 'CUSTOM_GPU_A100'): 1, ('child-1', 'VGPU'): 2},
                         timeline.peak_extras(at, at + 3600))
        self.assertEqual((2, 1024, 2), tuple(timeline.peak(at, at + 3600)))

    def test_quotas_before_0019_stay_and_a_class_s_long_name_fits(self):
        store = self.useFixture(machine.MariaDBStore(migrate='0018'))
        engine = sa.create_engine(store.url)
        self.addCleanup(engine.dispose)
        now = datetime.datetime(2026, 12, 6)
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Quota.__table__).values(
                project_id='p', name='vcpu_hours_per_month', most=100,
                updated_at=now))
        migration.db_sync(engine)
        name = 'CUSTOM_BAREMETAL_GOLD_NODES_OF_RACK_7' + lease_quotas.HOURS
        db_quotas.set_overrides(STORE, 'p', {name: 24})
        self.assertEqual({'vcpu_hours_per_month': 100, name: 24},
                         db_quotas.overrides(STORE, 'p'))

    def test_passes_before_0020_stay_and_take_no_extras(self):
        store = self.useFixture(machine.MariaDBStore(migrate='0019'))
        engine = sa.create_engine(store.url)
        self.addCleanup(engine.dispose)
        now = db_api.utcnow()
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Pass.__table__).values(
                instance_uuid='boot', node='n1', vcpus=1, memory_mb=512,
                disk_gb=1, created_at=now))
        migration.db_sync(engine)
        row, = db_passes.others(STORE, 'another', ['n1'],
                                now - datetime.timedelta(minutes=1))
        self.assertEqual((capacity.Resources(1, 512, 1), capacity.NO_EXTRAS),
                         (db_passes.need_of(row), db_passes.extras_of(row)))
