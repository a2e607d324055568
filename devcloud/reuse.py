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

"""What a process that builds cloud after cloud builds once and sets back
between two clouds, as Nova's harness keeps the schema of its databases:
the compiled SQL statements and the lease tables' schema
(`StatementCache`), nova-api's WSGI application (`Routers`) and Nova's
policy enforcer with its default rules (`Policies`); and the cycle
collector kept off what the process keeps (`collect_less`).  The checks
of request schemas are in `devcloud.schemas`.

nova-api's application is some 400 controllers, each with its compute API,
RPC clients and legacy notifier: building it took longer than any other
part of a cloud.  A built one is kept for its api-paste.ini and the
options it read while it was built, and before a cloud uses it again:

- every object of Nova's (and of the lease API's) in it is set back as it
  was built, so that nothing one cloud left in it (a client made on first
  use, a cache of Neutron's extensions) reaches the next;
- its RPC clients and legacy notifiers are those of the bus of the cloud
  that runs (made again for each: they were made for it when built);
- it is built again if an option it read has another value.
"""

import collections
import contextlib
import copy
import gc
import os
import threading
import types
from typing import Callable, Optional
import uuid

import fixtures
from nova.api import wsgi
import nova.conf
import nova.policy
from nova import rpc
from oslo_config import cfg
import routes
import sqlalchemy
from sqlalchemy import util as sa_util

from nova_reservation.db import api as db_api
from nova_reservation.db import migration
from nova_reservation.db import models

CONF = nova.conf.CONF

# The objects of a built application that are set back: its own.
OWN = ('nova.', 'nova_reservation.hooks.', 'nova_reservation.api.')
# What else is looked through to find them (the middleware, the routes,
# containers); anything else (the options, the lease planner that the
# process shares, database engines, sessions) is neither looked through nor
# set back.
THROUGH = OWN + ('routes.', 'webob.', 'paste.', 'oslo_middleware.',
                 'osprofiler.', 'keystonemiddleware.', 'builtins.',
                 'functools.', 'collections.')
NOT_OWN = ('nova.tests.', 'nova.conf.')
SKIPPED = (type, types.ModuleType, types.FunctionType,
           types.BuiltinFunctionType, types.CodeType, types.FrameType,
           str, bytes, int, float)
CONTAINERS = (dict, list, set)


class StatementCache:
    """What a process that builds cloud after cloud would otherwise do
    again for each: SQLAlchemy's compiling of the same statements (each
    cloud's databases are new engines, and an engine's cache of compiled
    statements is its own), and the migrations of the lease tables (the
    schema they made, replayed, as Nova's harness replays its own).
    """

    def __init__(self) -> None:
        self.dialect = None
        self.compiled = sa_util.LRUCache(5000)
        # (name, CREATE statement) of each lease table and index, and
        # (name, rows) of each table, as the migrations left them.
        self.tables: Optional[list] = None
        self.rows: list = []

    def create_engine(self, url, *args, **kwargs) -> sqlalchemy.Engine:
        """``sqlalchemy.create_engine``, with every SQLite engine on one
        dialect and one cache of compiled statements (the cache's keys
        hold the dialect), and a pool of connections to a file.
        """
        if (kwargs.get('poolclass') is sqlalchemy.pool.NullPool and
                str(url).startswith('sqlite:///')):
            # Nova's harness under native threads puts each database in a
            # file, and oslo.db gives a file no pool: each transaction
            # opened a connection and read the schema again, a third of a
            # test's processor time.  A pool, as a cloud's MySQL has.
            kwargs.update(poolclass=sqlalchemy.pool.QueuePool, pool_size=10,
                          max_overflow=-1)
            kwargs.setdefault('connect_args', {})['check_same_thread'] = False
        engine = self.real_create_engine(url, *args, **kwargs)
        if engine.dialect.name == 'sqlite':
            # The first is initialized on the connection oslo.db tests
            # each new engine with, before any other is made.
            self.dialect = self.dialect or engine.dialect
            engine.dialect = self.dialect
            engine._compiled_cache = self.compiled
            # Before oslo.db's own listener, which then finds the
            # transaction begun.
            sqlalchemy.event.listen(engine, 'begin', _begin)
        return engine

    real_create_engine = staticmethod(sqlalchemy.create_engine)

    def make_tables(self) -> None:
        """The lease tables in Nova's API database (SQLite in the
        harness): migrated the first time, the same schema replayed after.
        """
        with db_api.get_engine().begin() as connection:
            if self.tables is None:
                migration.db_sync(connection.engine)
                self.tables = list(connection.exec_driver_sql(
                    "SELECT name, sql FROM sqlite_master WHERE name LIKE "
                    "'rsv_%' AND sql IS NOT NULL ORDER BY type DESC, rowid"))
                # With the rows the migrations wrote (the version, the
                # ledger's first state).
                self.rows = [(name, connection.exec_driver_sql(
                    'SELECT * FROM %s' % name).fetchall())
                    for name, sql in self.tables
                    if sql.startswith('CREATE TABLE')]
                return
            for name, sql in self.tables:
                connection.exec_driver_sql(sql)
            for name, rows in self.rows:
                if rows:
                    connection.exec_driver_sql(
                        'INSERT INTO %s VALUES (%s)' % (
                            name, ', '.join('?' * len(rows[0]))),
                        [tuple(r) for r in rows])
            # A new store: the ledger's copies (the scheduler's) read it
            # all again, as they do a store the migrations just made.
            connection.execute(models.LedgerState.__table__.update().values(
                epoch=str(uuid.uuid4())))


def _begin(connection: sqlalchemy.Connection) -> None:
    """oslo.db's BEGIN of a SQLite transaction (it turns pysqlite's own
    off), sent to the driver: oslo.db sends it as a statement of
    SQLAlchemy's, built and looked up in the cache at each transaction, a
    thirtieth of a functional test's processor time.
    """
    driver = connection.connection.driver_connection
    # Only where oslo.db turned pysqlite's off (its engines).
    if (driver.isolation_level is None and
            'in_transaction' not in connection.info):
        driver.execute('BEGIN')
        connection.info['in_transaction'] = True


STATEMENTS = StatementCache()


class _Current:
    """What `make()` makes, made again when `bus()` is another (a new
    cloud's); it stands for it (its attributes are the made one's).
    """

    def __init__(self, make: Callable, bus: Callable) -> None:
        self._make = make
        self._bus = bus
        self._made_for = self._made = None

    def _current(self):
        bus = self._bus()
        if self._made is None or bus is not self._made_for:
            self._made, self._made_for = self._make(), bus
        return self._made

    def __getattr__(self, name: str):
        return getattr(self._current(), name)


def _client(*args, **kwargs) -> _Current:
    """``nova.rpc.get_client``, on the bus of the cloud that runs."""
    return _Current(lambda: rpc.get_client(*args, **kwargs),
                    lambda: rpc.TRANSPORT)


def _notifier(service: str, host=None) -> _Current:
    """``nova.rpc.get_notifier``, to the notifier of the cloud that runs
    (with the host of the cloud that built it, as Nova's has).
    """
    host = host or CONF.host
    return _Current(lambda: rpc.get_notifier(service, host),
                    lambda: rpc.LEGACY_NOTIFIER)


class _Built:
    """A built application, the options it read and its objects' state."""

    def __init__(self, app, read: dict) -> None:
        self.app = app
        self.read = read
        # (an object's attributes, a copy of them as built)
        self.state = [(vars(obj), self._copy(vars(obj)))
                      for obj in _own(app)]

    @staticmethod
    def _copy(values: dict) -> dict:
        return {name: copy.copy(value) if type(value) in CONTAINERS
                else value for name, value in values.items()}

    def reset(self) -> None:
        """Its objects as they were built."""
        for now, built in self.state:
            # Most are as built: compared (values first by identity) only.
            if now != built:
                now.clear()
                now.update(self._copy(built))


@contextlib.contextmanager
def _reading():
    """{(group, option): value} of Nova's options that this thread read
    meanwhile (the services' threads read theirs too).
    """
    read: dict = {}
    get = cfg.ConfigOpts._get
    reader = threading.get_ident()

    def recorded(conf, option, group=None, namespace=None):
        value = get(conf, option, group, namespace)
        # A group's options are recorded each (a group is no value).
        if (conf is CONF and namespace is None and
                threading.get_ident() == reader and
                not isinstance(value, cfg.ConfigOpts.GroupAttr)):
            read.setdefault((getattr(group, 'name', group), option), value)
        return value
    with fixtures.MonkeyPatch('oslo_config.cfg.ConfigOpts._get', recorded):
        yield read


def _unchanged(read: dict) -> bool:
    """Whether every option of `read` has the value it had."""
    return all(_value(name, group) == value
               for (group, name), value in read.items())


def _value(name: str, group):
    try:
        return getattr(CONF if group is None else CONF[group], name)
    except (cfg.Error, KeyError):
        return _MISSING


_MISSING = object()


def _own(app) -> list:
    """The objects of `app` to set back: its own, reached through its
    middleware, routes and containers.
    """
    found, seen, todo = [], set(), [app]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, SKIPPED):
            continue
        seen.add(id(obj))
        kind = type(obj).__module__ + '.'
        if isinstance(obj, types.MethodType):
            todo.append(obj.__self__)
            continue
        if not kind.startswith(THROUGH) or kind.startswith(NOT_OWN):
            continue
        # A mapper's routes compiled on its first request are kept.
        if (kind.startswith(OWN) and hasattr(obj, '__dict__') and
                not isinstance(obj, routes.Mapper)):
            found.append(obj)
        todo.extend(gc.get_referents(obj))
    return found


class Routers:
    """nova-api's applications of this process, by application name and
    api-paste.ini text.
    """

    def __init__(self) -> None:
        self._built: dict = collections.defaultdict(list)

    def load_app(self, loader, name: str):
        """``nova.api.wsgi.Loader.load_app``: one built before, set back,
        or a new one.
        """
        with open(loader.config_path) as f:
            key = (name, f.read())
        for built in self._built[key]:
            if _unchanged(built.read):
                built.reset()
                return built.app
        with _reading() as read, \
                fixtures.MonkeyPatch('nova.rpc.get_client', _client), \
                fixtures.MonkeyPatch('nova.rpc.get_notifier', _notifier):
            app = _LOAD_APP(loader, name)
        self._built[key].append(_Built(app, read))
        return app


class Policies:
    """Nova's policy enforcer with its rules registered and loaded, made
    once per process for each value of the options it read meanwhile (the
    policy file's name, whether new defaults are enforced, ...); each cloud
    has a copy of its own, which reads its policy file itself as any
    enforcer does.
    """

    def __init__(self) -> None:
        self._made: list = []

    def init(self, *args, **kwargs) -> None:
        """``nova.policy.init``, the enforcer made first a copy."""
        if (nova.policy._ENFORCER is None and not args and
                set(kwargs) <= {'suppress_deprecation_warnings'}):
            found = [enforcer for asked, read, enforcer in self._made
                     if asked == kwargs and _unchanged(read) and
                     _files_unchanged(enforcer)]
            if found:
                nova.policy._ENFORCER = _copy(found[0])
            else:
                with _reading() as read:
                    _INIT(**kwargs)
                self._made.append(
                    (kwargs, read, _copy(nova.policy._ENFORCER)))
        _INIT(*args, **kwargs)


def _copy(enforcer):
    """`enforcer`, with containers of its own (a cloud's changes of its
    rules and its clearing at the end change only its copy).
    """
    made = copy.copy(enforcer)
    for name, value in vars(enforcer).items():
        if isinstance(value, CONTAINERS):
            setattr(made, name, copy.copy(value))
    # The file cache's entries too: a copy that reads its file again must
    # not change what the others remember of it.
    made._file_cache = {path: dict(entry)
                        for path, entry in enforcer._file_cache.items()}
    return made


def _files_unchanged(enforcer) -> bool:
    """Whether the policy files `enforcer` read are there as it read
    them: a new enforcer would read them again (and skip a file that is
    gone, where a copy that knows its path would fail to read it).
    """
    for path, entry in enforcer._file_cache.items():
        try:
            if os.path.getmtime(path) != entry.get('mtime'):
                return False
        except OSError:
            return False
    return True


# Nova's, before any cloud replaces them.
_LOAD_APP = wsgi.Loader.load_app
_INIT = nova.policy.init
ROUTERS = Routers()
POLICIES = Policies()


def load_app(loader, name: str):
    """``nova.api.wsgi.Loader.load_app`` of a cloud of this process."""
    return ROUTERS.load_app(loader, name)


def policy_init(*args, **kwargs) -> None:
    """``nova.policy.init`` of a cloud of this process."""
    POLICIES.init(*args, **kwargs)


# Python's cycle collector once a process built a cloud: collections
# of the youngest objects every 5,000 allocations instead of 700, full
# ones a tenth as often.
COLLECT_EVERY = (5000, 20, 100)
_clouds = [0]


def collect_less() -> None:
    """Before each cloud of a process: from the second on, what the
    process keeps (its modules, nova-api's application, the policies,
    the compiled statements, all built by the first) is out of the cycle
    collector's reach (``gc.freeze``) and it collects less often.  Its
    full collections went over all of that again and again, a tenth of a
    functional test's processor time.
    """
    _clouds[0] += 1
    if _clouds[0] == 2:
        gc.collect()
        gc.freeze()
        gc.set_threshold(*COLLECT_EVERY)
