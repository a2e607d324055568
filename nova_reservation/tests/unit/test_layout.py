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

"""Where the development clouds live: in ``devcloud/``, outside the
installed package; the package, the benchmarks, the development clouds and
the unit tests import no test code; the local cloud's services find
``devcloud`` wherever they run.
"""

import ast
import configparser
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


class LayoutTest(testtools.TestCase):

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
