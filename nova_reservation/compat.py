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

"""What differs between the Nova releases the plugin supports: 2025.1
(Nova 31), 2025.2 (32), 2026.1 (33) and 2026.2 (34).

Every piece says which releases need it and why.  Nothing else in the
project reads Nova's version: it asks this module.  Imports are made inside
the functions, so that importing this module patches nothing and decides
nothing before Nova's eventlet or threads choice is made.
"""

from importlib import metadata
import os

# The releases, by Nova's major version.
EPOXY, FLAMINGO, GAZPACHO, HIBISCUS = 31, 32, 33, 34
SUPPORTED = {EPOXY: '2025.1', FLAMINGO: '2025.2', GAZPACHO: '2026.1',
             HIBISCUS: '2026.2'}
NOVA = int(metadata.version('nova').split('.')[0])


def release() -> str:
    """The release series of the Nova installed, e.g. ``2026.1``."""
    return SUPPORTED.get(NOVA, 'Nova %d' % NOVA)


# ----------------------------------------------------------- the services

def flavor_by_flavor_id(ctx, flavor_id: str, read_deleted: str = 'no'):
    """``nova.compute.flavors.get_flavor_by_flavor_id``.

    Nova 34 takes the context first; 31 to 33 take the flavor id first and
    the context as ``ctxt``.
    """
    from nova.compute import flavors
    if NOVA >= HIBISCUS:
        return flavors.get_flavor_by_flavor_id(ctx, flavor_id,
                                               read_deleted=read_deleted)
    return flavors.get_flavor_by_flavor_id(flavor_id, ctxt=ctx,
                                           read_deleted=read_deleted)


def parse_args(argv: list, prog: str, **options) -> None:
    """``nova.config.parse_args`` for a console script named `prog`.

    ``prog`` (the name in --help and the logs) is an argument from Nova 33
    on; before, oslo.config takes the name of the program run.
    """
    from nova import config as nova_config
    if NOVA >= GAZPACHO:
        options['prog'] = prog
    nova_config.parse_args(argv, **options)


def init_threads() -> None:
    """Choose oslo.service's native threads backend before anything asks
    for a backend (which takes eventlet by default); Nova's own choice of
    threads later is then the same one.

    2025.1's oslo.service (4.1) has only eventlet: nothing is chosen there.
    Its version is read, so that nothing is imported before eventlet may
    have to patch.
    """
    if _version('oslo.service') >= (4, 2):
        from oslo_service import backend
        backend.init_backend(backend.BackendType.THREADING)


def console_script_threads() -> bool:
    """Whether the console scripts run on native threads.

    From 2026.1's oslo.service (4.5) on.  2025.2's (4.3) threads backend
    runs a launched service under cotyledon's process manager, which never
    hands back to the engine's main thread; there the scripts run on
    eventlet, as Nova 32's own services do by default, and on 2025.1's,
    which has no threads.
    """
    return _version('oslo.service') >= (4, 5)


def init_console_script() -> str:
    """Choose the console scripts' oslo.service backend before anything
    imports ``oslo_service.service`` (which binds one); returns its name.
    """
    if not console_script_threads():
        # As that release's own services start: Nova 31 patches when
        # nova.monkey_patch is imported, 32 when its patch() is called.
        from nova import monkey_patch
        if NOVA == FLAMINGO:
            monkey_patch.patch()
        return 'eventlet'
    # Nova's API package patches with eventlet when imported (the engine
    # reaches it) unless told not to.
    os.environ['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = '1'
    init_threads()
    return 'threading'


def _version(distribution: str) -> tuple:
    return tuple(int(part) for part in
                 metadata.version(distribution).split('.')[:2])


# ------------------------------------------------ Nova's functional harness
#
# Used by the embedded cloud (``devcloud.embedded``) and the tests only.

def patch_as_nova_tests() -> None:
    """Eventlet or native threads as Nova's functional tests choose them
    (``OS_NOVA_DISABLE_EVENTLET_PATCHING``), before anything else is
    imported.

    2025.2's ``nova.tests.functional`` leaves the patching to the first
    import of ``nova.api.openstack``: by then oslo.db is imported unpatched
    and shares its transaction state between green threads (concurrent
    boots fail).  31 patches in ``nova.tests.functional``, 33 and 34 too.
    Native threads are refused before 33: 31 has none, 32's are
    experimental and its harness does not run on them.
    """
    if (os.environ.get('OS_NOVA_DISABLE_EVENTLET_PATCHING', '').lower()
            in ('1', 'true', 'yes') and NOVA < GAZPACHO):
        raise RuntimeError(
            'OS_NOVA_DISABLE_EVENTLET_PATCHING: Nova %d (%s) runs its '
            'functional harness on eventlet only; native threads from Nova '
            '33 (2026.1) on' % (NOVA, release()))
    if NOVA == FLAMINGO:
        from nova import monkey_patch
        monkey_patch.patch()
    import nova.tests.functional  # noqa: F401


def test_case_id_fixtures(name: str) -> list:
    """The fixtures that tie what Nova sends (notifications) to the test
    named `name`, so that a late one from an earlier test is caught.

    They follow eventlet's greenlets.  Under native threads, 34's harness
    leaves them out; 33's still walks the greenlets and fails on every
    notification (no parent), so there they are left out as in 34 (with
    `harness_patches`).
    """
    from nova.tests import fixtures as nova_fixtures
    if NOVA == GAZPACHO and _native_threads():
        return []
    return [nova_fixtures.PropagateTestCaseIdToChildEventlets(name)]


def harness_patches(name: str, directory: str) -> dict:
    """{dotted path: replacement} for the harness of the test named
    `name`, whose files go in `directory`.

    On 33 under native threads, what 34's harness does there:

    - the versioned notifier takes every sender for this test (a static
      method, kept so);
    - every database is a file in WAL mode, not in memory: an in-memory
      SQLite database is one connection, shared by every thread, so that
      concurrent transactions (two boots, a compute's update beside the
      scheduler's claim) interleave on it (cells' servers not built,
      claims refused);
    - writes to one database are one at a time (SQLite has one writer;
      a second would fail with "database is locked" after a few seconds);
      writes to two databases still run together.
    """
    if NOVA == GAZPACHO and _native_threads():
        return {
            'nova.tests.fixtures.notifications.FakeVersionedNotifier.'
            '_get_sender_test_case_id': lambda: name,
            'oslo_db.sqlalchemy.engines.create_engine':
                _file_databases(directory),
            'oslo_db.sqlalchemy.enginefacade._TransactionContextManager.'
            '_transaction_scope': _one_writer_per_database(),
            'nova.tests.fixtures.CellDatabases._cache_schema':
                _cell_schema_learnt_apart(),
        }
    return {}


def _file_databases(directory: str):
    """oslo.db's ``create_engine``, with every in-memory SQLite database
    made a new file of `directory` in WAL mode (readers beside a writer).
    """
    import tempfile

    from oslo_db.sqlalchemy import engines
    create_engine = engines.create_engine

    def create_file_engine(sql_connection, *args, **kwargs):
        if str(sql_connection) in ('sqlite://', 'sqlite:///:memory:'):
            fd, path = tempfile.mkstemp(suffix='.sqlite', dir=directory)
            os.close(fd)
            _empty_database(path)
            sql_connection = 'sqlite:///' + path
            # Nothing of a test's database outlives the test: no fsync.
            kwargs['sqlite_synchronous'] = False
        return create_engine(sql_connection, *args, **kwargs)
    return create_file_engine


def _empty_database(path: str) -> None:
    """Make the SQLite file `path` an empty database in WAL mode."""
    import contextlib
    import sqlite3

    for stale in (path + '-wal', path + '-shm'):
        if os.path.exists(stale):
            os.remove(stale)
    open(path, 'w').close()
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute('PRAGMA journal_mode=WAL')


def _cell_schema_learnt_apart():
    """33's ``CellDatabases._cache_schema``, for file databases: 33 learns
    the cell schema by migrating the first cell's database, then disposes
    of its engine (which empties one in memory) and applies what it learnt
    to it; a file keeps its tables (34 applies the schema only to the later
    cells), so it is emptied first.
    """
    from nova.tests import fixtures as nova_fixtures
    cache_schema = nova_fixtures.CellDatabases._cache_schema

    def cache_schema_apart(databases, connection: str) -> None:
        learnt = bool(nova_fixtures.DB_SCHEMA[('main', None)])
        cache_schema(databases, connection)
        if not learnt:
            engine = databases._ctxt_mgrs[connection].writer.get_engine()
            engine.dispose()
            _drop_tables(engine)
    return cache_schema_apart


def _drop_tables(engine) -> None:
    """Drop every table of a SQLite database, through its engine: other
    connections to its file may be open (a pool keeps them).
    """
    with engine.connect() as connection:
        tables = [name for (name,) in connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND "
            "name NOT LIKE 'sqlite_%'")]
        for name in tables:
            connection.exec_driver_sql('DROP TABLE "%s"' % name)
        connection.commit()


def _one_writer_per_database():
    """oslo.db's transaction scope, holding a lock of its database (its
    engine facade's factory) while it writes; re-entrant, as a writer may
    nest writers.
    """
    import collections
    import contextlib
    import threading

    from oslo_db.sqlalchemy import enginefacade
    scope = enginefacade._TransactionContextManager._transaction_scope
    locks: dict = collections.defaultdict(threading.RLock)
    guard = threading.Lock()

    @contextlib.contextmanager
    def writer_scope(manager, context):
        if manager._mode != enginefacade._WRITER:
            with scope(manager, context) as found:
                yield found
            return
        with guard:
            lock = locks[id(manager._factory)]
        with lock, scope(manager, context) as found:
            yield found
    return writer_scope


def _native_threads() -> bool:
    """Whether this process runs Nova on native threads (not patched)."""
    from nova import monkey_patch
    return not monkey_patch.is_patched()


def harness_fixtures(name: str) -> list:
    """The fixtures of ``nova.test.TestCase.setUp`` that differ per
    release, in its order: the executors of the test named `name`.

    31 isolates green pools (no executors yet); 32 on executors, 33 on
    also delays the executors' cleanup wrapper.
    """
    from nova.tests import fixtures as nova_fixtures
    if NOVA == EPOXY:
        return [nova_fixtures.IsolatedGreenPoolFixture(name)]
    found = [nova_fixtures.IsolatedExecutorFixture(name)]
    if NOVA >= GAZPACHO:
        found.append(nova_fixtures.DelayingExecutorWrapperCleanupFixture())
    return found


def rpc_fixtures() -> list:
    """The fixtures beside ``RPCFixture``: 33 on stops the RPC pollers'
    threads at the end (none before 33).
    """
    from nova.tests import fixtures as nova_fixtures
    if NOVA >= GAZPACHO:
        return [nova_fixtures.RPCPollerCleanupFixture()]
    return []


def reset_nova_globals() -> None:
    """Nova's process-wide caches that ``nova.test.TestCase.setUp``
    resets and that differ per release.
    """
    from nova import context
    import nova.limit.utils
    if NOVA >= GAZPACHO:
        context.reset_globals()
    else:
        # 31, 32: the cell caches are module globals.
        context.CELL_CACHE = {}
        context.CELLS = []
    if NOVA == EPOXY:
        nova.limit.utils.ENDPOINT = None
    else:
        nova.limit.utils.IDENTITY_CLIENT = None
    if NOVA >= GAZPACHO:
        import nova.service_auth
        nova.service_auth.reset_globals()


def compute_service_options() -> dict:
    """What ``nova.test.TestCase.start_service`` adds for a compute
    service: 33 on, a second RPC server on the alternative topic (the
    compute RPC API's 6.x versions); none before 33.
    """
    from nova.compute import rpcapi as compute_rpcapi
    if NOVA >= GAZPACHO:
        return {'topic_alt': compute_rpcapi.RPC_TOPIC_ALT}
    return {}
