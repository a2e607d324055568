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

"""The split of the integration suite over the local clouds."""

import io
import os
import subprocess
import sys
import types

import fixtures
from stestr.repository import util as stestr_repository
from stestr import scheduler as stestr_scheduler
import testtools

from devcloud import schedule

P = 'nova_reservation.tests.integration.'


class SplitTest(testtools.TestCase):

    def test_longest_first_to_the_least_loaded_lane(self):
        durations = {P + 'a.T.test_a': 300, P + 'b.T.test_b': 200,
                     P + 'c.T.test_c': 150, P + 'd.T.test_d': 100}
        lists = schedule.split(sorted(durations), durations, 2)
        self.assertEqual([[P + 'a.T.test_a', P + 'd.T.test_d'],
                          [P + 'b.T.test_b', P + 'c.T.test_c']], lists)

    def test_a_gabbi_file_stays_together_in_its_order(self):
        gabbi = [P + 'test_blazar_api.leases_post_x.test_request',
                 P + 'test_blazar_api.leases_get_x.test_request',
                 P + 'test_blazar_api.hosts_post_y.test_request']
        other = [P + 'test_a.T.test_one', P + 'test_b.T.test_two']
        durations = dict.fromkeys(gabbi, 1.0)
        durations.update(dict.fromkeys(other, 10.0))
        lists = schedule.split(gabbi + other, durations, 3)
        [with_gabbi] = [x for x in lists if gabbi[0] in x]
        self.assertEqual(gabbi, with_gabbi)

    def test_work_before_the_tests_and_pinned_tests(self):
        durations = {P + 'a.T.test_a': 100, P + 'b.T.test_b': 100,
                     P + 'c.T.test_c': 100}
        lists = schedule.split(sorted(durations), durations, 2,
                               before={0: 1000}, first=[P + 'c.'])
        # Cloud 0 has its own work: only the test pinned to it.
        self.assertEqual([[P + 'c.T.test_c'],
                          [P + 'a.T.test_a', P + 'b.T.test_b']], lists)

    def test_an_unknown_test_counts_as_a_long_one(self):
        durations = {P + 'a.T.test_a': 1.0, P + 'b.T.test_b': 1.0}
        tests = sorted(durations) + [P + 'new.T.test_new']
        lists = schedule.split(tests, durations, 2)
        self.assertEqual([[P + 'new.T.test_new'],
                          [P + 'a.T.test_a', P + 'b.T.test_b']], lists)

    def test_tests_that_share_a_name_run_in_one_lane(self):
        durations = {P + 'a.T.test_a': 300, P + 'b.T.test_b': 200,
                     P + 'c.T.test_c': 150, P + 'd.T.test_d': 100}
        # a and c share alice's project, c and d the floating IPs: all
        # three one after another in one lane, whatever their lengths.
        shares = {P + 'a.T.test_a': ('alice-project',),
                  P + 'c.T.test_c': ('alice-project', 'floating-ips'),
                  P + 'd.T.test_d': ('floating-ips',)}
        lists = schedule.split(sorted(durations), durations, 3,
                               shares=shares)
        self.assertEqual([[P + 'a.T.test_a', P + 'c.T.test_c',
                           P + 'd.T.test_d'], [P + 'b.T.test_b'], []],
                         lists)

    def suite_module(self) -> list:
        """Ids of tests of a module made here: a class that runs alone, one
        that shares the floating IPs, one that shares nothing, and a class
        its module makes when loaded (as gabbi's), which the module's
        ALONE speaks for.
        """
        module = types.ModuleType('lanes_suite')
        module.ALONE = True
        module.Killer = type('Killer', (), {'ALONE': True})
        module.Addresses = type('Addresses', (), {
            'ALONE': False, 'SHARES': ('floating-ips',)})
        module.Plain = type('Plain', (), {'ALONE': False})
        module.After = type('After', (), {'ALONE': False, 'LAST': True})
        sys.modules[module.__name__] = module
        self.addCleanup(sys.modules.pop, module.__name__)
        return ['lanes_suite.Killer.test_kill_nova_api',
                'lanes_suite.Addresses.test_register',
                'lanes_suite.Plain.test_boots',
                'lanes_suite.made_when_loaded.test_request',
                'lanes_suite.After.test_whole_cloud']

    def test_the_classes_say_what_runs_alone_and_what_is_shared(self):
        tests = self.suite_module()
        self.assertEqual([tests[0], tests[3]], schedule.alone(tests))
        self.assertEqual([tests[4]], schedule.last(tests))
        self.assertEqual({tests[1]: ('floating-ips',)},
                         schedule.shares_of(tests))

    def test_the_command_writes_the_alone_and_last_lists_and_each_lane_s(self):
        folder = self.useFixture(fixtures.TempDir()).path
        durations = os.path.join(folder, 'durations.txt')
        with open(durations, 'w') as f:
            f.write('# seconds test\n')
        tests = self.suite_module()
        tests = tests[:3] + tests[4:]
        self.useFixture(fixtures.MonkeyPatch(
            'sys.stdin', io.StringIO(''.join(t + '\n' for t in tests))))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', io.StringIO()))
        cwd = os.getcwd()
        os.chdir(folder)
        self.addCleanup(os.chdir, cwd)
        self.assertEqual(0, schedule.main(['3', durations]))
        written = {}
        for key in ('alone', 'last', 0, 1, 2):
            with open('.stestr-integration-%s.list' % key) as f:
                written[key] = f.read().split()
        self.assertEqual({'alone': tests[:1], 'last': tests[3:],
                          0: tests[1:2], 1: tests[2:3], 2: []}, written)

    def test_durations_recorded_from_a_run(self):
        text = schedule.record([
            dict(test='t.b', status='success',
                 start_time='2026-12-05 02:00:00+00:00',
                 stop_time='2026-12-05 02:01:30.5+00:00'),
            dict(test='t.a', status='fail',
                 start_time='2026-12-05 02:00:00+00:00',
                 stop_time='2026-12-05 02:00:01+00:00')])
        self.assertEqual({'t.b': 90.5},
                         schedule.read_durations(text.splitlines()))


class SubunitTest(testtools.TestCase):
    """Durations told to stestr, which splits a suite's workers by them."""

    DURATIONS = {'t.a': 30.0, 't.b': 20.0, 't.c': 12.5, 't.d': 7.5}

    def load(self) -> object:
        """A stestr repository that has loaded the durations' run."""
        repo = self.useFixture(fixtures.TempDir()).path
        stestr = [sys.executable, '-m', 'stestr.cli', '--repo-url', repo]
        subprocess.run(stestr + ['init'], check=True, capture_output=True)
        stream = io.BytesIO()
        schedule.as_subunit(self.DURATIONS, stream)
        subprocess.run(stestr + ['load'], input=stream.getvalue(),
                       check=True, capture_output=True)
        return stestr_repository.get_repo_open(repo_url=repo)

    def test_stestr_reads_the_durations(self):
        repo = self.load()
        times = repo.get_test_times(list(self.DURATIONS))
        self.assertEqual(set(), times['unknown'])
        self.assertEqual(self.DURATIONS, times['known'])

    def test_stestr_splits_by_them(self):
        workers = stestr_scheduler.partition_tests(
            sorted(self.DURATIONS), 2, self.load(), None)
        # The longest first to the least loaded: 37.5 s and 32.5 s (round
        # robin, as without them: a and c, b and d, 42.5 s and 27.5 s).
        self.assertEqual([['t.a', 't.d'], ['t.b', 't.c']], sorted(workers))
