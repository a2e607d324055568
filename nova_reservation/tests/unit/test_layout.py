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

"""The package's layout: its layers point down and hold no import circle;
the development clouds live in ``devcloud/``, outside the installed
package; the package, the benchmarks, the development clouds and the unit
tests import no test code; the local cloud's services find ``devcloud``
wherever they run.
"""

import ast
import configparser
import functools
import os
import subprocess
import sys
import tempfile
from typing import Optional

import fixtures
import testtools

from devcloud.localcloud import cloud

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def parsed(top: str, skip: tuple = ()) -> dict:
    """{file under `top` (relative to the root): its syntax tree}, leaving
    out the files under the folders `skip`.
    """
    found = {}
    for folder, _, names in os.walk(os.path.join(ROOT, top)):
        if any(folder.startswith(os.path.join(ROOT, s)) for s in skip):
            continue
        for name in names:
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                with open(path) as f:
                    found[os.path.relpath(path, ROOT)] = ast.parse(
                        f.read(), path)
    return found


def modules_imported(top: str, skip: Optional[str] = None) -> dict:
    """{file under `top` (relative to the root): the modules it imports},
    leaving out the files under `skip`.
    """
    found = {}
    for path, tree in parsed(top, (skip,) if skip else ()).items():
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.update('%s.%s' % (node.module, alias.name)
                                for alias in node.names)
        found[path] = imported
    return found


def importing(files: dict, prefix: str, but: str = '\0') -> dict:
    """{file: the modules it imports under `prefix` (but not `but`)}."""
    found = {path: sorted(m for m in modules if m.startswith(prefix) and
                          not m.startswith(but))
             for path, modules in files.items()}
    return {path: modules for path, modules in found.items() if modules}


# The package's layers, from the top: a module may import its own layer's
# and lower ones, never a higher one.  A module's layer is that of the
# longest name below that it starts with.
LAYERS = (
    # The entry points, one per process or plug-in point.
    ('api', 'hooks', 'engine', 'filters', 'dashboard', 'cmd', 'cli'),
    # The lease domain: the lease service, the features it runs, the
    # kinds of reservation; leases in Blazar's shapes, and their
    # notifications.
    ('lease', 'enforcement', 'notifications', 'views'),
    # Each error's HTTP status, for both answers.
    ('http_status',),
    # Each process's ledger copy; the other services' clients.
    ('ledger', 'clients'),
    # The store.
    ('db',),
    # Pure: the capacity math, the lease domain's rules (the names of the
    # reservation kinds, schedules, shares, addresses, host requirements:
    # no I/O, so that the store applies them too), errors, states, marks,
    # schemas, policies, options, release differences.
    ('capacity', 'lease.resource_types', 'lease.schedule',
     'lease.shares', 'lease.floatingips', 'lease.properties', 'exception',
     'status', 'marks', 'schemas', 'validation', 'policies', 'conf',
     'compat', 'deploy'),
)


def module_graph() -> dict:
    """{module of the package (tests left out): the modules of the package
    it imports, type-only imports included}.  ``from a import b`` names
    the module ``a.b`` where there is one, else ``a``.
    """
    files = parsed('nova_reservation', ('nova_reservation/tests',))
    names = {}
    for path in files:
        name = path[:-len('.py')].replace(os.sep, '.')
        names[path] = name[:-len('.__init__')] if name.endswith(
            '.__init__') else name
    modules = set(names.values())
    graph = {}
    for path, tree in files.items():
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.update(
                    '%s.%s' % (node.module, a.name)
                    if '%s.%s' % (node.module, a.name) in modules
                    else node.module for a in node.names)
        graph[names[path]] = {m for m in found if m in modules} - {
            names[path]}
    return graph


# The store's modules that write leases (their reservations and states),
# slots and bindings, under db/.
STORE_MODULES = ('leases', 'bindings', 'ledger', 'waiting', 'holds',
                 'maintenance', 'approvals', 'splits')


@functools.lru_cache(maxsize=None)
def store_writes(module: str) -> frozenset:
    """The writes of the store's module `module`: its public functions
    decorated as writers, or that call a private writer of its own (a
    retry around a transaction).
    """
    with open(os.path.join(ROOT, 'nova_reservation', 'db',
                           module + '.py')) as f:
        tree = ast.parse(f.read())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    writers = {n.name for n in functions if any(
        ast.unparse(d).split('.')[-1] == 'writer'
        for d in n.decorator_list)}
    return frozenset(
        n.name for n in functions if not n.name.startswith('_') and (
            n.name in writers or any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and
                c.func.id.startswith('_') and c.func.id in writers
                for c in ast.walk(n))))


def store_writes_in(tree: ast.Module) -> list:
    """The store's writes of leases, slots and bindings that a module (its
    syntax tree) calls or hands on to be called (`writes.add(
    db_bindings.set_binding, ...)`), sorted.
    """
    writes = {m: store_writes(m) for m in STORE_MODULES}
    names = {}   # {name in the module: store module}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and \
                node.module == 'nova_reservation.db':
            names.update((a.asname or a.name, a.name) for a in node.names
                         if a.name in writes)
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith('nova_reservation.db.'):
            module = node.module.rsplit('.', 1)[1]
            found += ['%s.%s' % (node.module, a.name) for a in node.names
                      if a.name in writes.get(module, ())]
        elif isinstance(node, ast.Import):
            names.update((a.asname or a.name, a.name.rsplit('.', 1)[1])
                         for a in node.names
                         if a.name.startswith('nova_reservation.db.'))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = names.get(ast.unparse(node.value))
            if node.attr in writes.get(owner, ()):
                found.append(ast.unparse(node))
    return sorted(found)


def layer_of(module: str) -> Optional[int]:
    rest = module.split('.', 1)[1] if '.' in module else ''
    best, found = -1, None
    for index, names in enumerate(LAYERS):
        for name in names:
            if (rest == name or rest.startswith(name + '.')) and \
                    len(name) > best:
                best, found = len(name), index
    return found


def circles(graph: dict) -> list:
    """The strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            ring = []
            while True:
                w = stack.pop()
                on.discard(w)
                ring.append(w)
                if w == v:
                    break
            if len(ring) > 1:
                found.append(sorted(ring))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


class LayoutTest(testtools.TestCase):

    def test_every_module_has_a_layer(self):
        self.assertEqual([], sorted(
            m for m in module_graph()
            if m != 'nova_reservation' and layer_of(m) is None))

    def test_no_module_imports_a_higher_layer(self):
        upward = {}
        for module, imported in module_graph().items():
            mine = layer_of(module)
            wrong = sorted(m for m in imported
                           if mine is not None and layer_of(m) is not None
                           and layer_of(m) < mine)
            if wrong:
                upward[module] = wrong
        self.assertEqual({}, upward)

    def test_no_import_circles(self):
        self.assertEqual([], circles(module_graph()))

    def test_errors_are_defined_in_one_module(self):
        # nova_reservation.exception, named by what went wrong; beside it
        # only the lease API's HTTP answer itself and signals private to
        # one module.
        kept = {('nova_reservation/api/wsgi.py', 'Fault'),
                ('nova_reservation/engine/actions.py', 'Pending'),
                ('nova_reservation/db/ledger.py', '_TooFew')}
        found = set()
        for path, tree in parsed('nova_reservation', (
                'nova_reservation/tests',)).items():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and any(
                        ast.unparse(b).split('.')[-1] in (
                            'Exception', 'ValueError', 'ReservationError')
                        for b in node.bases) and \
                        path != 'nova_reservation/exception.py':
                    found.add((path, node.name))
        self.assertEqual(kept, found)

    def test_the_package_root_holds_a_dozen_modules_at_most(self):
        # Beside its folders: what the rest shares (states, marks, views,
        # notifications, validation, policies, release differences).
        root = [n for n in os.listdir(os.path.join(ROOT, 'nova_reservation'))
                if n.endswith('.py')]
        self.assertLessEqual(len(root), 12, sorted(root))

    def test_a_concept_has_one_name_in_every_folder(self):
        # The store's module of a concept and the lease domain's, say,
        # are named alike (approvals, quotas, splits), never one in the
        # singular and the other in the plural.  A kind's module names
        # one kind of reservation.
        names = {name[:-len('.py')]
                 for path in parsed('nova_reservation', (
                     'nova_reservation/tests',
                     'nova_reservation/lease/kinds',
                     'nova_reservation/db/migrations'))
                 for name in [os.path.basename(path)]}
        self.assertEqual([], sorted(
            (name, name + 's') for name in names if name + 's' in names))

    def test_the_layer_checks_see_what_they_look_for(self):
        # A circle and an upward import, made up, are found.
        self.assertEqual([['a', 'b', 'c']],
                         circles({'a': {'b'}, 'b': {'c'}, 'c': {'a'},
                                  'd': {'a'}}))
        self.assertEqual(5, layer_of('nova_reservation.lease.shares'))
        self.assertEqual(1, layer_of('nova_reservation.lease.service'))
        self.assertEqual(0, layer_of('nova_reservation.engine.service'))
        self.assertEqual(4, layer_of('nova_reservation.db.leases'))
        self.assertIsNone(layer_of('nova_reservation.nowhere'))
        # A store write handed on to be made later is found, as one made
        # now; a read is not.  A retry around a writer writes.
        self.assertEqual(
            ['db_bindings.set_binding', 'ledger.unbind',
             'nova_reservation.db.leases.set_status'],
            store_writes_in(ast.parse(
                'from nova_reservation.db import bindings as db_bindings\n'
                'from nova_reservation.db import ledger\n'
                'import nova_reservation.db.leases\n'
                'writes.add(db_bindings.set_binding, uuid, state=s)\n'
                'ledger.unbind(ctx, [lease_id])\n'
                'ledger.slots(ctx, reservation_id)\n'
                'nova_reservation.db.leases.set_status(ctx, [i], s)\n')))
        self.assertIn('claim_slots', store_writes('ledger'))
        self.assertNotIn('bound_servers', store_writes('bindings'))

    def test_only_the_tests_import_test_code(self):
        outside = {}
        for top, skip in (('nova_reservation', 'nova_reservation/tests'),
                          ('devcloud', None), ('benchmarks', None)):
            outside.update(modules_imported(top, skip))
        self.assertEqual({}, importing(outside, 'nova_reservation.tests'))

    def test_no_test_module_imports_another(self):
        # Helpers live in base modules (and devcloud), not in test modules.
        tests = modules_imported('nova_reservation/tests')
        self.assertEqual({}, {
            path: [m for m in modules
                   if m.rsplit('.', 1)[-1].startswith('test_')]
            for path, modules in importing(
                tests, 'nova_reservation.tests').items()
            if any(m.rsplit('.', 1)[-1].startswith('test_')
                   for m in modules)})

    def test_imports_point_one_way(self):
        # The entry points (the boot hook, the lease API, the engine, the
        # filter, the dashboard) import none of each other; what they share
        # lies below them, and imports none of them.
        package = modules_imported('nova_reservation',
                                   'nova_reservation/tests')
        entries = ('hooks', 'api', 'engine', 'filters', 'dashboard')
        crossing = {}
        for path, modules in package.items():
            parts = path.split(os.sep)
            mine = parts[1] if len(parts) > 2 else None
            if mine == 'cmd':
                continue
            wrong = sorted(
                m for m in modules for entry in entries
                if entry != mine and (
                    m.startswith('nova_reservation.%s.' % entry) or
                    m == 'nova_reservation.%s' % entry))
            if wrong:
                crossing[path] = wrong
        self.assertEqual({}, crossing)

    def test_leases_are_written_through_the_lease_service(self):
        # The hook, the API and the engine make, change and place leases
        # by `nova_reservation.lease.service` only: no other module calls
        # the writes below it.
        writes = {'create_or_wait', 'create_series', 'create_many',
                  'hold_waiting', 'placed'}
        by_store = {('db_leases', 'create'), ('db_leases', 'change'),
                    ('lease_write', 'change'), ('lease_write', 'place'),
                    ('lease_write', 'create')}
        found = {}
        for path, tree in parsed('nova_reservation', (
                'nova_reservation/lease', 'nova_reservation/db',
                'nova_reservation/tests')).items():
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and
                        isinstance(node.func, ast.Attribute)):
                    continue
                owner = ast.unparse(node.func.value).split('.')[0]
                if node.func.attr in writes or (
                        owner, node.func.attr) in by_store:
                    found.setdefault(path, []).append(
                        ast.unparse(node.func))
        self.assertEqual({}, found)

    def test_only_the_lease_domain_writes_leases_slots_or_bindings(self):
        # The entry points (the hook, the API, the engine, the filter, the
        # commands) ask the lease domain (`lease.bindings`,
        # `lease.outcomes`, the lease service, ...); the store's writes of
        # leases, slots and bindings are its.
        found = {}
        for path, tree in parsed('nova_reservation', (
                'nova_reservation/lease', 'nova_reservation/db',
                'nova_reservation/tests')).items():
            writes = store_writes_in(tree)
            if writes:
                found[path] = writes
        self.assertEqual({}, found)

    def test_no_module_is_over_450_lines(self):
        # A module that grows past this holds more than one concept.
        longer = {}
        for folder, _, names in os.walk(os.path.join(ROOT,
                                                     'nova_reservation')):
            for name in names:
                if name.endswith('.py'):
                    path = os.path.join(folder, name)
                    with open(path) as f:
                        count = sum(1 for _ in f)
                    if count > 450:
                        longer[os.path.relpath(path, ROOT)] = count
        self.assertEqual({}, longer)

    def test_suites_are_folders(self):
        # tools/run-tests picks suites by folder, never by a name pattern.
        with open(os.path.join(ROOT, 'tools', 'run-tests')) as f:
            script = f.read()
        self.assertNotIn('--exclude-regex', script)
        for suite in ('unit', 'functional', 'engines', 'outages',
                      'integration'):
            self.assertTrue(os.path.isdir(os.path.join(
                ROOT, 'nova_reservation', 'tests', suite)), suite)
            self.assertIn(suite, script)

    def test_unit_tests_import_no_other_test_code(self):
        unit = modules_imported('nova_reservation/tests/unit')
        self.assertEqual({}, importing(unit, 'nova_reservation.tests',
                                       but='nova_reservation.tests.unit'))

    def test_the_development_clouds_are_not_installed(self):
        setup = configparser.ConfigParser()
        setup.read(os.path.join(ROOT, 'setup.cfg'))
        self.assertEqual(['nova_reservation'],
                         setup['files']['packages'].split())
        self.assertTrue(os.path.isfile(os.path.join(
            ROOT, 'devcloud', 'localcloud', 'cloud.py')))
        self.assertEqual([], [
            path for path in modules_imported('nova_reservation')
            if os.path.basename(path) in ('demo.py', 'cloud.py',
                                          'embedded.py')])

    def test_local_cloud_services_import_devcloud_from_their_directory(self):
        # Services run in the cloud's own directory, with the environment
        # of whoever started it (here: nothing on the import path).
        self.useFixture(fixtures.EnvironmentVariable('PYTHONPATH'))
        with tempfile.TemporaryDirectory() as elsewhere:
            run = subprocess.run(
                [sys.executable, '-c', 'import devcloud.standins'],
                cwd=elsewhere, env=cloud._environ(), capture_output=True,
                text=True)
        self.assertEqual(0, run.returncode, run.stderr)
