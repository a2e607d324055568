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
``tools/run-tests``), read from stestr's output.
"""

import os
import subprocess
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


class FailedTestsTest(testtools.TestCase):

    def failed_tests(self, logs: dict) -> list:
        """The lines `failed_tests demo` prints where the suite's logs
        are `logs` ({file name: text}).
        """
        with open(os.path.join(ROOT, 'tools', 'run-tests')) as f:
            script = f.read()
        start = script.index('failed_tests() {')
        function = script[start:script.index('\n}\n', start) + 3]
        with tempfile.TemporaryDirectory() as where:
            for name, text in logs.items():
                with open(os.path.join(where, name), 'w') as f:
                    f.write(text)
            return subprocess.run(
                ['bash', '-c', function + 'failed_tests demo'], cwd=where,
                check=True, capture_output=True, text=True
            ).stdout.splitlines()

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
