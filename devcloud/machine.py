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

"""The machine's own MariaDB and RabbitMQ, each user (a test, a benchmark)
with a database and a vhost of its own, and engines as real processes on
them.
"""

import datetime
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional, Union
import unittest
import uuid

import fixtures
from nova.db.api import api as nova_api_db
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import test_fixtures as db_fixtures
import pymysql
import sqlalchemy as sa

from devcloud import mariadb
from nova_reservation.db import api as db_api
from nova_reservation.db import changes as db_changes
from nova_reservation.db import leases as db_leases
from nova_reservation.db import migration
from nova_reservation import status

MARIADB = dict(host='127.0.0.1', user='root', password='',
               **mariadb.CONNECT)


def store_url(database: str, charset: str) -> str:
    """The URL of `database` on the machine's MariaDB."""
    return 'mysql+pymysql://root:@127.0.0.1/%s?charset=%s&%s' % (
        database, charset, mariadb.URL_QUERY)


def mariadb_available() -> bool:
    try:
        pymysql.connect(**MARIADB).close()
        return True
    except pymysql.err.MySQLError:
        return False


def rabbitmq_available() -> bool:
    return subprocess.run(['rabbitmqctl', '-q', 'status'],
                          capture_output=True).returncode == 0


def require(test: unittest.TestCase, available: bool, what: str) -> None:
    """Fail in CI (where the service must be there), skip elsewhere."""
    if not available:
        if os.environ.get('CI'):
            test.fail('%s is not running' % what)
        test.skipTest('%s is not running' % what)


class MariaDBStore(fixtures.Fixture):
    """A fresh database (with nova-reservation's tables if `migrate`), used
    by this process's store too.
    """

    def __init__(self, migrate: Union[bool, str] = True,
                 charset: str = 'utf8mb4',
                 database_charset: str = 'utf8mb4') -> None:
        # `migrate`: True (to the head), False, or a revision.
        self.migrate = migrate
        self.charset, self.database_charset = charset, database_charset

    def _setUp(self) -> None:
        self.name = 'rsv_test_%s' % uuid.uuid4().hex[:12]
        self._sql('CREATE DATABASE %s CHARACTER SET %s'
                  % (self.name, self.database_charset))
        self.addCleanup(self._sql, 'DROP DATABASE IF EXISTS %s' % self.name)
        self.url = store_url(self.name, self.charset)
        if self.migrate:
            engine = sa.create_engine(self.url)
            migration.db_sync(engine, 'head' if self.migrate is True
                              else self.migrate)
            engine.dispose()
        facade = enginefacade.transaction_context()
        facade.configure(connection=self.url, max_pool_size=20)
        self.useFixture(db_fixtures.ReplaceEngineFacadeFixture(
            nova_api_db.context_manager, facade))

    @staticmethod
    def _sql(statement: str) -> None:
        conn = pymysql.connect(**MARIADB)
        try:
            with conn.cursor() as cur:
                cur.execute(statement)
        finally:
            conn.close()


def capacity_lease(ctx, name: str, node: str, start: datetime.datetime,
                   end: datetime.datetime) -> str:
    """A PENDING capacity lease of one small slot on `node`, with its start
    and end events, written straight in the store (no servers: the events
    are the work); its id.
    """
    lease_id = str(uuid.uuid4())
    db_leases.create(
        ctx, db_changes.generation(ctx),
        dict(id=lease_id, name=name, project_id='p', user_id='u',
             start_at=start, end_at=end, status=status.PENDING,
             on_end='delete', created_at=db_api.utcnow()),
        [(dict(id=str(uuid.uuid4()), lease_id=lease_id, project_id='p',
               resource_type='flavor:instance', vcpus=1, memory_mb=512,
               disk_gb=1, amount=1, status='pending'),
          [dict(node=node, start_at=start, end_at=end, vcpus=1,
                memory_mb=512, disk_gb=1)])],
        [dict(event_type='start', due_at=start),
         dict(event_type='end', due_at=end)])
    return lease_id


class SQLiteStore(fixtures.Fixture):
    """A database in a file of its own, used by this process's store too;
    with nova-reservation's tables if `migrate`, else without (other
    processes make them).
    """

    def __init__(self, migrate: bool = False) -> None:
        self.migrate = migrate

    def _setUp(self) -> None:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'store.db')
        self.url = 'sqlite:///%s' % path
        if self.migrate:
            engine = sa.create_engine(self.url)
            migration.db_sync(engine, 'head')
            engine.dispose()
        facade = enginefacade.transaction_context()
        facade.configure(connection=self.url)
        self.useFixture(db_fixtures.ReplaceEngineFacadeFixture(
            nova_api_db.context_manager, facade))


class RabbitVhost(fixtures.Fixture):

    def _setUp(self) -> None:
        self.name = 'rsv_test_%s' % uuid.uuid4().hex[:12]
        ctl = ['rabbitmqctl', '-q']
        subprocess.run(ctl + ['add_vhost', self.name], check=True,
                       capture_output=True)
        self.addCleanup(subprocess.run, ctl + ['delete_vhost', self.name],
                        capture_output=True)
        subprocess.run(ctl + ['set_permissions', '-p', self.name, 'guest',
                              '.*', '.*', '.*'], check=True,
                       capture_output=True)
        self.url = 'rabbit://guest:guest@127.0.0.1:5672/%s' % self.name


def engine_conf(transport: str, db: str, claim: int = 300,
                nova: str = 'http://127.0.0.1:9/v2.1') -> str:
    """nova.conf of an engine on this store and vhost (notifications on
    RabbitMQ), acting on the compute API at `nova`.
    """
    return """
[DEFAULT]
transport_url = %(transport)s
[api_database]
connection = %(db)s
[oslo_messaging_notifications]
driver = messagingv2
[oslo_messaging_rabbit]
# Notifications that wait in the broker survive its restart.
amqp_durable_queues = true
[reservation]
auth_type = none
endpoint_override = %(nova)s
event_claim_timeout = %(claim)d
""" % dict(transport=transport, db=db, claim=claim, nova=nova)


class ConfFile(fixtures.Fixture):
    """A configuration file with this text (``path``), removed after."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _setUp(self) -> None:
        conf = tempfile.NamedTemporaryFile('w', suffix='.conf',
                                           delete=False)
        conf.write(self.text)
        conf.close()
        self.path = conf.name
        self.addCleanup(os.unlink, conf.name)


class EngineProcess(fixtures.Fixture):
    """``nova-reservation-engine`` as its own process, on a nova.conf
    (its text, or the path of a file), run as `command` (by default
    ``engine.main`` of the package imported here).
    """

    def __init__(self, conf_text: str = '', conf_file: str = '',
                 command: Optional[list] = None) -> None:
        self.conf_text, self.conf_file = conf_text, conf_file
        self.command = command or [sys.executable, '-c',
                                   'from nova_reservation.cmd import '
                                   'engine; engine.main()']

    def _setUp(self) -> None:
        conf = self.conf_file or self.useFixture(
            ConfFile(self.conf_text)).path
        self.log = tempfile.NamedTemporaryFile('w+', suffix='.log',
                                               delete=False)
        self.addCleanup(os.unlink, self.log.name)
        self.proc = subprocess.Popen(
            self.command + ['--config-file', conf],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop)

    def engine_id(self, timeout: float = 180) -> str:
        # Ends when the engine says it runs: a long timeout costs nothing,
        # and holds where a loaded machine took over a minute to start it.
        deadline = time.time() + timeout
        while time.time() < deadline:
            match = re.search(r'Engine (\S+) running', self.output())
            if match:
                return match.group(1)
            if self.proc.poll() is not None:
                raise RuntimeError('engine exited: %s' % self.output())
            time.sleep(0.1)
        raise RuntimeError('engine did not start: %s' % self.output())

    def output(self) -> str:
        with open(self.log.name) as f:
            return f.read()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def restart_mariadb(down_for: float = 2.0) -> None:
    """Stop the machine's MariaDB and start it again, as its operator
    would; returns once it answers.
    """
    subprocess.run(['mariadb-admin', 'shutdown'], check=True,
                   capture_output=True)
    time.sleep(down_for)
    start_mariadb()


def start_mariadb() -> None:
    subprocess.run(['start-stop-daemon', '--start', '--oknodo',
                    '--background', '--exec', '/usr/sbin/mariadbd'],
                   check=True, capture_output=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if mariadb_available():
            return
        time.sleep(0.5)
    raise RuntimeError('MariaDB did not come back')
