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

"""What the functional harness builds once per process (Nova's policy
enforcer, reused only where a new one would read the same rules; the check
of Placement's request schemas), and what keeps native threads cheap in
it: a pool of connections to each database file, and thread pools whose
idle workers do not poll.
"""

import json
import os
import threading
import time

from unittest import mock

import fixtures
import futurist
from futurist import _thread as futurist_thread
import jsonschema
from nova.api.validation import validators as nova_validators
from nova import exception as nova_exception
import nova.policy
from nova import test
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines as oslo_engines
from placement import util as placement_util
import sqlalchemy

from devcloud import reuse
from devcloud import schemas
from devcloud import thread_pools
from nova_reservation.lease import write as lease_write
from nova_reservation.tests.functional import base

RULE = 'os_compute_api:os-migrate-server:migrate_live'


class PolicyReuseTest(test.NoDBTestCase):

    def setUp(self):
        super().setUp()
        self.policies = reuse.Policies()
        nova.policy.reset()
        self.addCleanup(nova.policy.reset)

    def enforcer(self):
        """The enforcer a cloud gets now, as the harness makes it."""
        nova.policy.reset()
        self.policies.init()
        return nova.policy._ENFORCER

    def policy_file(self, rules: dict) -> str:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'policy.yaml')
        with open(path, 'w') as f:
            json.dump(rules, f)
        self.flags(policy_file=path, group='oslo_policy')
        return path

    def rule(self, enforcer) -> str:
        enforcer.load_rules()
        return str(enforcer.rules[RULE])

    def test_a_copy_for_the_same_options(self):
        self.policy_file({RULE: '!'})
        first = self.enforcer()
        again = self.enforcer()
        self.assertIsNot(first, again)
        self.assertEqual('!', self.rule(again))

    def test_a_policy_file_gone_is_not_read_by_the_next(self):
        # Older oslo.policy fails on a known path whose file is gone; a new
        # enforcer would look for the file and go on with the defaults.
        path = self.policy_file({RULE: '!'})
        self.assertEqual('!', self.rule(self.enforcer()))
        os.remove(path)
        self.assertNotEqual('!', self.rule(self.enforcer()))

    def test_a_changed_policy_file_is_read_again(self):
        path = self.policy_file({RULE: '!'})
        self.assertEqual('!', self.rule(self.enforcer()))
        first = os.path.getmtime(path)
        with open(path, 'w') as f:
            json.dump({RULE: '@'}, f)
        os.utime(path, (1, os.path.getmtime(path) + 10))
        self.assertEqual('@', self.rule(self.enforcer()))
        # The copy that read it changed none of what the others remember.
        made = self.policies._made[0][2]
        self.assertEqual('!', str(made.rules[RULE]))
        self.assertEqual(first, made._file_cache[path]['mtime'])


class FilePoolTest(test.NoDBTestCase):
    """oslo.db gives a database file no pool (a connection for each
    transaction); the harness gives it one.
    """

    def engine(self, url: str, poolclass) -> sqlalchemy.Engine:
        engine = reuse.STATEMENTS.create_engine(url, poolclass=poolclass)
        self.addCleanup(engine.dispose)
        return engine

    def test_a_file_keeps_its_connections(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.sqlite')
        engine = self.engine('sqlite:///' + path, sqlalchemy.pool.NullPool)
        self.assertIsInstance(engine.pool, sqlalchemy.pool.QueuePool)
        with engine.connect() as connection:
            first = connection.connection.dbapi_connection
            connection.exec_driver_sql('CREATE TABLE t (x INTEGER)')
            connection.commit()
        with engine.connect() as connection:
            self.assertIs(first, connection.connection.dbapi_connection)
        # A pooled connection serves the next thread that asks (each
        # service of the cloud runs in threads of its own).
        seen = []

        def write():
            with engine.begin() as connection:
                connection.exec_driver_sql('INSERT INTO t VALUES (1)')
                seen.append(connection.connection.dbapi_connection)
        thread = threading.Thread(target=write)
        thread.start()
        thread.join()
        self.assertEqual([first], seen)
        with engine.connect() as connection:
            self.assertEqual(1, connection.exec_driver_sql(
                'SELECT count(*) FROM t').scalar())

    def test_memory_keeps_its_static_pool(self):
        engine = self.engine('sqlite://', sqlalchemy.pool.StaticPool)
        self.assertIsInstance(engine.pool, sqlalchemy.pool.StaticPool)


class SQLiteBeginTest(test.NoDBTestCase):
    """oslo.db begins each SQLite transaction itself; in the harness the
    BEGIN goes to the driver, not through SQLAlchemy's statements, and a
    transaction is one as before.
    """

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'sqlalchemy.create_engine', reuse.STATEMENTS.create_engine))
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.sqlite')
        self.engine = oslo_engines.create_engine('sqlite:///' + path)
        self.addCleanup(self.engine.dispose)
        self.sent = []
        sqlalchemy.event.listen(
            self.engine, 'before_cursor_execute',
            lambda conn, cursor, statement, *args: self.sent.append(
                statement))
        with self.engine.begin() as connection:
            connection.exec_driver_sql('CREATE TABLE t (x INTEGER)')

    def count(self) -> int:
        with self.engine.connect() as connection:
            return connection.exec_driver_sql(
                'SELECT count(*) FROM t').scalar()

    def test_no_begin_statement_and_a_rollback_undoes(self):
        with self.engine.begin() as connection:
            connection.exec_driver_sql('INSERT INTO t VALUES (1)')
        connection = self.engine.connect()
        connection.exec_driver_sql('INSERT INTO t VALUES (2)')
        self.assertTrue(connection.connection.driver_connection
                        .in_transaction)
        connection.rollback()
        connection.close()
        self.assertEqual(1, self.count())
        self.assertNotIn('BEGIN', self.sent)

    def test_a_failed_transaction_leaves_nothing(self):
        def fail():
            with self.engine.begin() as connection:
                connection.exec_driver_sql('INSERT INTO t VALUES (1)')
                connection.exec_driver_sql('INSERT INTO missing VALUES (1)')
        self.assertRaises(db_exc.DBError, fail)
        self.assertEqual(0, self.count())


class CollectLessTest(test.NoDBTestCase):
    """From a process's second cloud on, what it built first is frozen out
    of the cycle collector's reach, once, and it collects less often.
    """

    def test_once_from_the_second_cloud(self):
        self.useFixture(fixtures.MockPatch('devcloud.reuse._clouds', [0]))
        collector = self.useFixture(fixtures.MockPatch(
            'devcloud.reuse.gc')).mock
        reuse.collect_less()
        self.assertEqual([], collector.mock_calls)
        reuse.collect_less()
        self.assertEqual([mock.call.collect(), mock.call.freeze(),
                          mock.call.set_threshold(*reuse.COLLECT_EVERY)],
                         collector.mock_calls)
        reuse.collect_less()
        self.assertEqual(3, len(collector.mock_calls))


class PlacementSchemasTest(test.NoDBTestCase):
    """Placement validates each request with ``jsonschema.validate``; in
    the harness each of its schemas is checked once, and every request is
    validated as before.
    """

    SCHEMA = {'type': 'object', 'properties': {'name': {
        'type': 'string', 'maxLength': 5}}, 'required': ['name']}

    def setUp(self):
        super().setUp()
        self.schemas = schemas.PlacementSchemas()
        self.checks = self.useFixture(fixtures.MockPatchObject(
            jsonschema.Draft202012Validator, 'check_schema',
            wraps=jsonschema.Draft202012Validator.check_schema)).mock

    def test_a_schema_is_checked_once_every_request_validated(self):
        self.schemas.validate({'name': 'a'}, self.SCHEMA)
        self.schemas.validate({'name': 'b'}, self.SCHEMA)
        self.assertEqual(1, self.checks.call_count)
        for bad in ({}, {'name': 'longer'}, {'name': 1}, []):
            self.assertRaises(jsonschema.ValidationError,
                              self.schemas.validate, bad, self.SCHEMA)
        # What Placement asks of the module besides `validate`.
        self.assertIs(jsonschema.FormatChecker, self.schemas.FormatChecker)
        self.assertIs(jsonschema.ValidationError,
                      self.schemas.ValidationError)

    def test_a_bad_schema_is_refused_each_time(self):
        bad = {'type': 'object', 'maxLength': 'five'}
        for _ in range(2):
            self.assertRaises(jsonschema.SchemaError, self.schemas.validate,
                              {}, bad)
        self.assertEqual(2, self.checks.call_count)


class NovaSchemasTest(test.NoDBTestCase):
    """nova-api builds a validator class for each request; in the harness
    one per validator and checks, and every request is validated as
    before.
    """

    SCHEMA = {'type': 'object', 'properties': {'count': {
        'type': ['integer', 'string'], 'minimum': 1, 'maximum': 3}},
        'required': ['count'], 'additionalProperties': False}

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.validation.validators.jsonschema',
            schemas.NovaSchemas()))

    def validator(self, relax=False):
        return nova_validators._SchemaValidator(self.SCHEMA, relax)

    def test_one_class_per_checks_each_request_validated(self):
        first, again = self.validator(), self.validator()
        self.assertIs(type(first.validator), type(again.validator))
        self.assertIsNot(type(first.validator),
                         type(self.validator(relax=True).validator))
        again.validate({'count': '2'})
        for bad in ({'count': '7'}, {'count': 0}, {}, {'count': 1, 'x': 1}):
            self.assertRaises(nova_exception.ValidationError,
                              again.validate, bad)
        # Relaxed: an unknown property is dropped, not refused.
        body = {'count': 2, 'x': 1}
        self.validator(relax=True).validate(body)
        self.assertEqual({'count': 2}, body)


class CloudPlacementSchemasTest(base.ReservationTestCase):
    """A cloud's Placement validates with the harness's schemas."""

    NODES = ('host1',)

    def test_checked_once_bad_bodies_refused(self):
        self.assertIs(schemas.PLACEMENT_SCHEMAS, placement_util.jsonschema)
        # And nova-api's validators are made once per checks, its bodies
        # still refused.
        self.assertIs(schemas.NOVA_SCHEMAS, nova_validators.jsonschema)
        resp = self.api.api_post('/os-keypairs', {'keypair': {
            'name': 'k', 'bogus': 1}}, check_response_status=False)
        self.assertEqual(400, resp.status, resp.content)
        self.assertIn("'bogus' was unexpected", str(resp.body))
        validator = jsonschema.validators.validator_for({})
        with mock.patch.object(validator, 'check_schema',
                               wraps=validator.check_schema) as check:
            for name in ('rp-1', 'rp-2'):
                resp = self.placement.post('/resource_providers',
                                           {'name': name}, version='1.20')
                self.assertEqual(200, resp.status, resp.body)
            resp = self.placement.post('/resource_providers',
                                       {'name': 'rp-3', 'bogus': 1},
                                       version='1.20')
            self.assertEqual(400, resp.status, resp.body)
            self.assertIn('JSON does not validate', str(resp.body))
        # That body's schema was checked by an earlier cloud of this
        # process, or once here.
        self.assertLessEqual(check.call_count, 1)


class QuickStopTest(test.NoDBTestCase):
    """Idle workers of a native thread pool wait a second between looks
    (Nova's test case makes it 0.01 s), and a pool that stops wakes them.
    """

    WORKERS = 4

    def setUp(self):
        super().setUp()
        self.useFixture(thread_pools.QuickStop())
        self.executor = futurist.ThreadPoolExecutor(self.WORKERS)
        self.addCleanup(self.executor.shutdown)

    def test_idle_workers_do_not_poll(self):
        looks = []
        real = futurist_thread.ThreadWorker._is_dying

        def counted(worker):
            looks.append(worker)
            return real(worker)
        self.useFixture(fixtures.MonkeyPatch(
            'futurist._thread.ThreadWorker._is_dying', counted))
        for future in [self.executor.submit(time.sleep, 0.01)
                       for _ in range(self.WORKERS)]:
            future.result()
        before = len(looks)
        time.sleep(0.5)
        # This pool's (other pools of the process may have workers left).
        mine = [w for w in looks[before:] if w in self.executor._workers]
        # At most a look after its last work and one when its second ends;
        # at 0.01 s it is some fifty each.
        self.assertLessEqual(len(mine), 2 * self.WORKERS)

    def test_a_stopping_pool_runs_what_is_queued_and_wakes_its_workers(self):
        done = []
        gate = threading.Event()
        self.executor.submit(gate.wait)
        for n in range(8):
            self.executor.submit(done.append, n)
        workers = list(self.executor._workers)
        gate.set()
        started = time.monotonic()
        self.executor.shutdown(wait=True)
        self.assertEqual(list(range(8)), sorted(done))
        self.assertEqual([], [w for w in workers if w.is_alive()])
        # Woken, not waited for: each would take its second.
        self.assertLess(time.monotonic() - started, thread_pools.IDLE / 2)
        # A pool stopped twice stops once.
        self.executor.shutdown(wait=True)


# nova-api's planner as the process had it before any cloud.
PROCESS_PLANNERS = lease_write._SHARED


class PlannerPerCloudTest(base.ReservationsTestCase):
    """Each cloud has nova-api's planner anew, as a new nova-api process
    has: its view of the nodes kept from the cloud before would take this
    cloud's nodes (same UUIDs, same generations) for what it read then.
    """

    def test_the_planner_is_the_cloud_s_own(self):
        resp = self.rsv('POST', '/leases', base.flavor_lease(1))
        self.assertEqual(201, resp.status_code, resp.text)
        planner = lease_write.shared()
        self.assertNotIn('planner', PROCESS_PLANNERS)
        self.assertEqual({'host1', 'host2'},
                         {h.node for h in planner.pools()[0]})


class LateManagerStopTest(base.ReservationTestCase):
    """A manager's stop that outlives its cloud (Nova 34 runs it in a
    thread of its own) leaves the process's executors running.
    """

    def setUp(self) -> None:
        self.factory = thread_pools.nova_executors()
        if self.factory is None:
            self.skipTest('this Nova does not shut its executors down')
        # Registered before the cloud: run once it is down.
        self.addCleanup(self.stop_late)
        super().setUp()

    def stop_late(self) -> None:
        factory = self.factory.FACTORY
        # What a manager's thread calls last, after its service.
        self.factory.shutdown_all_executors()
        stopped, factory._shutdown = factory._shutdown, False
        self.assertFalse(stopped)

    def test_the_executors_outlive_a_late_manager_stop(self):
        self.assertFalse(self.factory.FACTORY._shutdown)
