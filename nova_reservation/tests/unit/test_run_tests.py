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

"""What the test command prints last when tests failed: each one's name,
the last line of its error and where its log is (``failed_tests`` of
``tools/run-tests``), read from stestr's output; and the tests a run never
reached, a test process having died (``unrun``).
"""

import os
import subprocess
import sys
import tempfile

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# stestr's output of a run where a test, a class's set-up and a testtools
# matcher failed (their tracebacks cut short), one passed, then its
# summary of the failures.
LOG = '''\
{0} pkg.test_a.A.test_bad [0.000071s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "pkg/test_a.py", line 4, in test_bad
    def test_bad(self): self.assertEqual(1, 2, 'one is not two')

    AssertionError: 1 != 2 : one is not two

{0} pkg.test_a.A.test_ok [0.000047s] ... ok
{0} setUpClass (pkg.test_a.B) [0.000000s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "pkg/test_a.py", line 7, in setUpClass
    def setUpClass(cls): raise RuntimeError('class setup broke')

    RuntimeError: class setup broke

{0} pkg.test_a.C.test_mm [0.000515s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

    testtools.matchers._impl.MismatchError: {'a': 1} != {'a': 2}


==============================
Failed 3 tests - output below:
==============================

pkg.test_a.A.test_bad
---------------------

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    AssertionError: 1 != 2 : one is not two
'''


def shell(functions: str, call: str, logs: dict) -> list:
    """The lines the test command's `functions` (names, space-separated)
    print when `call`ed in a folder that holds `logs` ({file path: text}).
    """
    with open(os.path.join(ROOT, 'tools', 'run-tests')) as f:
        script = f.read()
    body = ''
    for function in functions.split():
        start = script.index('\n%s() {' % function) + 1
        body += script[start:script.index('\n}\n', start) + 3]
    with tempfile.TemporaryDirectory() as where:
        for name, text in logs.items():
            path = os.path.join(where, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
        return subprocess.run(
            ['bash', '-c', body + call], cwd=where, check=True,
            capture_output=True, text=True).stdout.splitlines()


class FailedTestsTest(testtools.TestCase):

    def failed_tests(self, logs: dict) -> list:
        """The lines `failed_tests demo` prints where the suite's logs
        are `logs`.
        """
        return shell('failed_tests', 'failed_tests demo', logs)

    def test_each_failure_with_its_error_then_the_log(self):
        self.assertEqual([
            'demo: pkg.test_a.A.test_bad: AssertionError: 1 != 2 : one is '
            'not two',
            'demo: setUpClass (pkg.test_a.B): RuntimeError: class setup '
            'broke',
            "demo: pkg.test_a.C.test_mm: testtools.matchers._impl."
            "MismatchError: {'a': 1} != {'a': 2}",
            'demo: its log is .stestr-demo.log'],
            self.failed_tests({'.stestr-demo.log': LOG}))

    def test_a_fixture_s_set_up_error_is_named_by_its_cause(self):
        log = '''\
{1} pkg.test_b.D.test_setup [1.2s] ... FAILED

Captured traceback:
~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "nova/objects/service.py", line 680, in get_minimum_version
    raise exception.CellTimeout()

    nova.exception.CellTimeout: Timeout waiting for response from cell


Captured traceback-1:
~~~~~~~~~~~~~~~~~~~~~
    Traceback (most recent call last):

      File "fixtures/fixture.py", line 302, in useFixture
    fixture.setUp()

    fixtures.fixture.SetupError: {}

'''
        self.assertEqual([
            'demo: pkg.test_b.D.test_setup: nova.exception.CellTimeout: '
            'Timeout waiting for response from cell',
            'demo: its log is .stestr-demo.log'],
            self.failed_tests({'.stestr-demo.log': log}))

    def test_a_retry_s_failures_are_those_that_remain(self):
        retry = LOG[:LOG.index('{0} pkg.test_a.A.test_ok')]
        self.assertEqual([
            'demo: pkg.test_a.A.test_bad: AssertionError: 1 != 2 : one is '
            'not two',
            'demo: its log is .stestr-demo.retry.log'],
            self.failed_tests({'.stestr-demo.log': LOG,
                               '.stestr-demo.retry.log': retry}))


class FunctionalSuitesTest(testtools.TestCase):
    """The functional suites are taken by two lanes at once (the
    processor's and, at its end, the clouds'): each suite runs once, and
    every release in its modes is among them.
    """

    RELEASES = ('2025.1    31.3.1  13.0.0  eventlet\n'
                '2026.1    33.0.2  15.0.0  threads\n')

    def taken(self, call: str) -> list:
        return shell('take mode functional_list', 'SERIES="2025.1 2026.1"\n'
                     + call, {'tools/constraints/releases': self.RELEASES})

    def test_each_release_in_its_modes(self):
        self.assertEqual(['functional .venv',
                          'functional-threads .venv',
                          'functional-2025.1 .venv-2025.1 2025.1',
                          'functional-threads-2026.1 .venv-2026.1 2026.1'],
                         self.taken('functional_list'))

    def test_two_lanes_take_each_suite_once(self):
        lines = self.taken(
            'lane() { functional_list | while read -r name rest; do\n'
            '  take $name && echo "$1 $name"; sleep 0.0$RANDOM; done; }\n'
            'lane a & lane b & wait')
        suites = sorted(line.split()[1] for line in lines)
        self.assertEqual(sorted(['functional', 'functional-threads',
                                 'functional-2025.1',
                                 'functional-threads-2026.1']), suites)


class TestsInTest(testtools.TestCase):
    """Every suite of a folder (each release, each mode) has the same
    tests: they are listed once, by the first suite to ask, and each
    suite gets the count.
    """

    # A stand-in for stestr: `list` prints two tests and notes the call.
    STESTR = ('#!/bin/bash\n'
              'case "$*" in *" list") echo listed >>calls;\n'
              '  sleep 0.2; printf "nova_reservation.a\\n'
              'nova_reservation.b\\n";; esac\n')

    def test_two_suites_of_a_folder_list_it_once(self):
        lines = shell('take tests_in',
                      'chmod +x v/bin/stestr\n'
                      'tests_in v functional & tests_in v functional &\n'
                      'tests_in v unit; wait; cat calls',
                      {'v/bin/stestr': self.STESTR})
        self.assertEqual(['2', '2', '2', 'listed', 'listed'],
                         sorted(lines))


# Three tests one worker runs in turn; the second ends its process (as a
# crash in a fixture's clean-up did), so that the third never runs.
DYING = """\
import os
import unittest


class Dies(unittest.TestCase):

    def test_1_dies(self):
        os._exit(3)

    def test_2_never_runs(self):
        pass


class Alive(unittest.TestCase):

    def test_lives(self):
        pass
"""


# stestr's last lines after the run of LOG.
TOTALS = """
======
Totals
======
Ran: 4 tests in 0.0010 sec.
 - Passed: 1
 - Skipped: 0
 - Expected Fail: 0
 - Unexpected Success: 0
 - Failed: 3
"""


class UnrunTest(testtools.TestCase):

    def unrun(self, log: str, listed: int) -> int:
        return int(shell('unrun', 'unrun run.log %d' % listed,
                         {'run.log': log})[0])

    def test_what_a_dead_test_process_took_with_it_is_counted(self):
        with tempfile.TemporaryDirectory() as where:
            os.mkdir(os.path.join(where, 'pkg'))
            for name, text in (('__init__.py', ''), ('test_x.py', DYING)):
                with open(os.path.join(where, 'pkg', name), 'w') as f:
                    f.write(text)
            stestr = [os.path.join(os.path.dirname(sys.executable),
                                   'stestr'), '--test-path', './pkg',
                      '--top-dir', '.']
            subprocess.run(stestr + ['init'], cwd=where, check=True,
                           capture_output=True)
            run = subprocess.run(stestr + ['run', '--concurrency', '1'],
                                 cwd=where, capture_output=True, text=True)
        # stestr counts neither as failed: the one that died is "in
        # progress", the one after it is nowhere.
        log = run.stdout + run.stderr
        self.assertIn(' - Failed: 0', log)
        self.assertNotIn('test_2_never_runs', log)
        self.assertEqual(2, self.unrun(log, 3))

    def test_a_whole_run_leaves_none(self):
        self.assertEqual(0, self.unrun(LOG + TOTALS, 4))

    def test_a_run_that_reports_nothing_leaves_every_test(self):
        self.assertEqual(7, self.unrun('ImportError: no module\n', 7))
