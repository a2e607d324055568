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

"""Every source file of the project starts with the Apache 2.0 header."""

import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
HEADER = '''\
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
'''
PYTHON_TREES = ('nova_reservation', 'benchmarks', 'devcloud')
SCRIPTS = ('.ci/run', 'benchmarks/run', 'devstack/plugin.sh', 'tools/demo',
           'tools/localcloud', 'tools/run-tests', 'tools/setup-env')
# The store takes its headers with its split into a package; flake8's H102
# is relaxed there (tox.ini) for the same reason. Remove both together.


def python_files() -> list:
    """The project's Python files, relative to the repository root."""
    found = ['setup.py']
    for tree in PYTHON_TREES:
        for path, dirs, files in os.walk(os.path.join(ROOT, tree)):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            found += [os.path.relpath(os.path.join(path, f), ROOT)
                      for f in files if f.endswith('.py')]
    return sorted(found)


def has_header(text: str) -> bool:
    """True if `text` starts with the header (after a shebang line), or is
    empty (a bare package marker has nothing to license).
    """
    if text.startswith('#!'):
        text = text.partition('\n')[2]
    return not text or text.startswith(HEADER)


def without_header(paths) -> list:
    """The files among `paths` that lack the header."""
    missing = []
    for rel in paths:
        with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
            if not has_header(f.read()):
                missing.append(rel)
    return missing


class LicenseHeaderTest(unittest.TestCase):

    def test_license_file_is_apache_2(self):
        with open(os.path.join(ROOT, 'LICENSE'), encoding='utf-8') as f:
            text = f.read()
        self.assertIn('Apache License\n', text)
        self.assertIn('Version 2.0, January 2004', text)

    def test_python_files_have_the_header(self):
        files = python_files()
        # The walk found the tree itself, not an empty or wrong directory.
        self.assertIn('nova_reservation/policies.py', files)
        self.assertEqual([], without_header(files))

    def test_scripts_have_the_header(self):
        self.assertEqual([], without_header(SCRIPTS))

    def test_the_check(self):
        self.assertTrue(has_header(''))
        self.assertTrue(has_header(HEADER + '\n"""A module."""\n'))
        self.assertTrue(has_header('#!/bin/bash\n' + HEADER + '\nset -e\n'))
        self.assertFalse(has_header('"""A module."""\n'))
        self.assertFalse(has_header('#!/bin/bash\nset -e\n'))
        # Below the docstring is too late.
        self.assertFalse(has_header('"""A module."""\n' + HEADER))
