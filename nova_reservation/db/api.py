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

"""Transactions of the store.

The tables live in Nova's API database and go through Nova's own engine
facade for it, so that nova-api, nova-scheduler and the engine share one
configuration (``[api_database] connection``) and Nova's test fixtures
cover them too.

Every function of the store's modules takes a `Context` first and is
decorated with `reader` or `writer`: calls made with one context inside a
`writer` share its transaction, so that a caller composes several writes
into one all-or-nothing unit::

    @api.writer
    def _write(ctx):
        gen = ledger.bump(ctx)
        leases.add(ctx, ...)
        events.add(ctx, ...)

    _write(api.Context())

Reads return the models' rows, detached from the session.
"""

import contextlib
import datetime
import functools
import random
import time
from typing import Callable

from nova.db.api import api as nova_api_db
from oslo_db import exception as db_exception
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from nova_reservation import conf

CONF = conf.CONF
# Pool settings of [api_database] that the store's own engine keeps.
STORE_DB_OPTIONS = ('max_pool_size', 'max_overflow', 'pool_timeout',
                    'connection_recycle_time', 'mysql_sql_mode',
                    'max_retries', 'retry_interval')
# How many times a transaction rolled back for a deadlock runs again.
DEADLOCK_RETRIES = 5
# What the APIs answer with a 503 that says to try again: the store did
# not answer (its server failed over, say), or a write lost to others
# every time it ran.
UNAVAILABLE = (db_exception.DBConnectionError, db_exception.DBDeadlock)
UNAVAILABLE_MESSAGE = ('the reservation store could not be reached or was '
                       'too busy; nothing was changed, try again')
# MySQL's errors of a connection that failed or was cut (the server went
# away, a Galera node left its cluster or is not synced yet), which oslo.db
# leaves as a plain DBError where they happen as a connection is opened;
# and a commit that failed (1180: a Galera node that lost its cluster's
# primary component), whose transaction is rolled back.
CONNECTION_ERRORS = frozenset((1047, 1053, 1180, 1927, 2002, 2003, 2006,
                               2013, 2055))


def unavailable(error: BaseException) -> bool:
    """Whether `error` means that the database did not answer or gave
    way to another writer: nothing was changed, and the request may be
    tried again.
    """
    # Nova wraps what oslo.db raised in DBError again (flavor.create).
    while isinstance(error, db_exception.DBError):
        if isinstance(error, UNAVAILABLE):
            return True
        error = error.inner_exception
    if not isinstance(error, sa.exc.DBAPIError):
        return False
    code = error.orig.args[0] if error.orig is not None and \
        error.orig.args else None
    return error.connection_invalidated or code in CONNECTION_ERRORS


@enginefacade.transaction_context_provider
class Context:
    """A unit of work on the store: its transaction, per thread."""


# Per engine of Nova's API database: the store's own context manager on
# it, or None to share Nova's.
_STORES: dict = {}


def _context_manager():
    """The store's transactions: Nova's API database, in full UTF-8.

    Nova's connection string usually asks for ``charset=utf8``, which on
    MySQL/MariaDB is three bytes a character and can not carry every name
    (an emoji, some scripts); the store's tables are utf8mb4.  There the
    store opens its own connections to the same database with
    ``charset=utf8mb4``, leaving Nova's own as they are.
    """
    nova_engine = nova_api_db.get_engine()
    key = id(nova_engine)
    if key not in _STORES:
        url = nova_engine.url
        store = None
        if url.get_backend_name() == 'mysql' and \
                url.query.get('charset') != 'utf8mb4':
            store = enginefacade.transaction_context()
            options = {k: v for k, v in CONF.api_database.items()
                       if k in STORE_DB_OPTIONS}
            options['connection'] = url.update_query_dict(
                {'charset': 'utf8mb4'}).render_as_string(
                    hide_password=False)
            store.configure(**options)
        _STORES[key] = store
    return _STORES[key] or nova_api_db.context_manager


def get_engine() -> sa.engine.Engine:
    return _context_manager().writer.get_engine()


def writing(ctx) -> contextlib.AbstractContextManager:
    """A write transaction on `ctx` (its own, or the one `ctx` is in);
    gives the session.
    """
    return _context_manager().writer.using(ctx)


def reading(ctx) -> contextlib.AbstractContextManager:
    """A read transaction on `ctx`, or the one `ctx` is in."""
    return _context_manager().reader.using(ctx)


def _in_transaction(ctx) -> bool:
    try:
        ctx.session
    except db_exception.NoEngineContextEstablished:
        return False
    return True


def writer(fn: Callable) -> Callable:
    """`fn(ctx, ...)` runs in `writing(ctx)`.

    A transaction of its own (not one `ctx` is in already) that the
    database rolled back for a deadlock, or a Galera cluster for a
    certification conflict with a write on another node (reported as a
    deadlock), is run again whole, at most `DEADLOCK_RETRIES` times.
    """
    @functools.wraps(fn)
    def wrapped(ctx, *args, **kwargs):
        if _in_transaction(ctx):
            with writing(ctx):
                return fn(ctx, *args, **kwargs)
        for attempt in range(DEADLOCK_RETRIES + 1):
            try:
                with writing(ctx):
                    return fn(ctx, *args, **kwargs)
            except db_exception.DBDeadlock:
                if attempt == DEADLOCK_RETRIES:
                    raise
                # Apart, so that the two writers do not meet again.
                time.sleep(random.uniform(0, 0.02 * 2 ** attempt))
    return wrapped


def reader(fn: Callable) -> Callable:
    """`fn(ctx, ...)` runs in `reading(ctx)`."""
    @functools.wraps(fn)
    def wrapped(ctx, *args, **kwargs):
        with reading(ctx):
            return fn(ctx, *args, **kwargs)
    return wrapped


def utcnow() -> datetime.datetime:
    """Now, as the store keeps times: naive UTC."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


@reader
def rows(ctx, query) -> list:
    """The model rows a SELECT gives."""
    return list(ctx.session.execute(query).scalars())


@reader
def row(ctx, query):
    """The first model row a SELECT gives, or None."""
    return ctx.session.execute(query.limit(1)).scalars().first()
