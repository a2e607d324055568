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

"""requirements.txt lists what nova-api, nova-scheduler and the engine run
with the plugin, and nothing that only the tests need; the ``dashboard``
extra of setup.cfg what the Horizon plugin (nova_reservation/dashboard)
imports besides."""

import ast
import configparser
from importlib import metadata
import importlib.util
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PACKAGE = 'nova_reservation'
# Runs inside Horizon, with the dashboard extra.
DASHBOARD = os.path.join(PACKAGE, 'dashboard')
# Needed in production without an import statement.
NOT_IMPORTED = {
    'pbr': 'builds the package and gives its version',
    'pymysql': 'the MySQL/MariaDB driver, named by the connection URL',
}


def canonical(name: str) -> str:
    return re.sub(r'[-_.]+', '-', name).lower()


def requirements(filename: str) -> set:
    """The canonical distribution names a requirements file lists."""
    names = set()
    with open(os.path.join(ROOT, filename)) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                names.add(canonical(re.match(r'[A-Za-z0-9_.-]+',
                                             line).group()))
    return names


def extra(name: str) -> set:
    """The canonical distribution names of an extra of setup.cfg."""
    setup = configparser.ConfigParser()
    setup.read(os.path.join(ROOT, 'setup.cfg'))
    return {canonical(re.match(r'[A-Za-z0-9_.-]+', line).group())
            for line in setup['extras'][name].split('\n') if line.strip()}


def production_imports(top: str = PACKAGE, skip: tuple = (DASHBOARD,)
                       ) -> set:
    """Top-level modules the production code under `top` (not its tests,
    nor what is under `skip`) imports.
    """
    modules = set()
    for path, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [d for d in dirs if d not in ('tests', '__pycache__') and
                   os.path.relpath(os.path.join(path, d), ROOT) not in skip]
        for name in files:
            if not name.endswith('.py'):
                continue
            with open(os.path.join(path, name)) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules.update(a.name.split('.')[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    modules.add(node.module.split('.')[0])
    return {m for m in modules
            if m != PACKAGE and m not in sys.stdlib_module_names}


class RequirementsTest(unittest.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.runtime = requirements('requirements.txt')
        self.imported = self.distributions(production_imports())

    @staticmethod
    def distributions(modules: set) -> dict:
        """{canonical distribution name: the module imported from it}."""
        found = {}
        distributions = metadata.packages_distributions()
        for module in modules:
            for dist in distributions.get(module, [module]):
                found[canonical(dist)] = module
        return found

    def test_every_import_is_a_requirement(self):
        self.assertIn('nova', self.imported)
        self.assertEqual([], sorted(set(self.imported) - self.runtime))

    def test_every_requirement_is_imported(self):
        self.assertEqual([], sorted(
            self.runtime - set(self.imported) - set(NOT_IMPORTED)))

    def test_the_dashboard_imports_are_its_extra(self):
        dashboard = set(self.distributions(production_imports(
            DASHBOARD, skip=())))
        self.assertIn('horizon', dashboard)
        self.assertEqual(sorted(dashboard - self.runtime),
                         sorted(extra('dashboard')))

    def test_what_only_the_tests_need_is_a_test_requirement(self):
        tests = requirements('test-requirements.txt')
        self.assertIn('openstack-placement', tests)
        self.assertEqual(set(), self.runtime & tests)


class CompiledTest(unittest.TestCase):
    """tools/setup-env leaves every module compiled, Nova's and the
    project's: where Python writes no bytecode (PYTHONDONTWRITEBYTECODE),
    each process would otherwise compile all it imports each time.
    """

    def test_installed_and_own_modules_are_compiled(self):
        import nova.exception
        import nova_reservation.lease.write
        for module in (nova.exception, nova_reservation.lease.write):
            self.assertTrue(os.path.exists(importlib.util.cache_from_source(
                module.__file__)), module.__name__)
