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

"""The integration suite split over several local clouds that run side by
side, one test at a time on each: a test then has its cloud to itself (its
leases never meet another test's), and the suite takes about its sum over
the number of clouds instead of the sum.

``python -m devcloud.schedule CLOUDS DURATIONS < test ids`` writes the
list of each cloud (``.stestr-integration-N.list``): the longest first to
the cloud with the least work so far, from the seconds each test took in
a run before (DURATIONS, "seconds test-id" lines; a test not in it counts
as ``UNKNOWN`` seconds).  The tests of a gabbi YAML file stay together, in
their order, on one cloud; a cloud's own work before its tests (the
topology suite on the cloud of a Galera cluster) is given as
``--before N=SECONDS``; tests that must run on the first cloud (its shape
is what they measure) are given as ``--first PREFIX``.

``python -m devcloud.schedule --record < CSV`` prints DURATIONS from the
CSV of a run's results (``stestr last --subunit | subunit2csv``).
"""

import argparse
import csv
import datetime
import re
import sys
from typing import Iterable

UNKNOWN = 60.0
# A gabbi test's id: module.<yaml file>_<test name>.test_request.
_GABBI = re.compile(r'^(.*\.test_[a-z_]+)\.[^.]+\.test_request$')


def group_of(test_id: str) -> str:
    """The tests that run together, in order: a gabbi file's, or one."""
    match = _GABBI.match(test_id)
    return match.group(1) if match else test_id


def read_durations(lines: Iterable[str]) -> dict:
    durations = {}
    for line in lines:
        fields = line.split()
        if len(fields) == 2 and not line.startswith('#'):
            durations[fields[1]] = float(fields[0])
    return durations


def record(rows: Iterable[dict]) -> str:
    """DURATIONS of the tests that passed, from subunit2csv's rows."""
    lines = []
    for row in rows:
        if row['status'] == 'success':
            took = (datetime.datetime.fromisoformat(row['stop_time']) -
                    datetime.datetime.fromisoformat(row['start_time']))
            lines.append('%.1f %s\n' % (took.total_seconds(), row['test']))
    return '# seconds test\n' + ''.join(sorted(
        lines, key=lambda x: x.split()[1]))


def split(tests: list, durations: dict, clouds: int, before: dict = None,
          first: Iterable[str] = ()) -> list:
    """`tests` as `clouds` lists, each in the order given."""
    groups: dict = {}
    for test in tests:
        groups.setdefault(group_of(test), []).append(test)
    load = [float((before or {}).get(i, 0)) for i in range(clouds)]
    lists: list = [[] for _ in range(clouds)]

    def cost(group: str) -> float:
        return sum(durations.get(t, UNKNOWN) for t in groups[group])
    for group in sorted(groups, key=lambda g: (-cost(g), g)):
        pinned = any(group.startswith(p) for p in first)
        cloud = 0 if pinned else min(range(clouds), key=lambda i: load[i])
        lists[cloud].extend(groups[group])
        load[cloud] += cost(group)
    return lists


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv == ['--record']:
        sys.stdout.write(record(csv.DictReader(sys.stdin)))
        return 0
    parser = argparse.ArgumentParser(prog='python -m devcloud.schedule')
    parser.add_argument('clouds', type=int)
    parser.add_argument('durations')
    parser.add_argument('--before', action='append', default=[],
                        help='N=SECONDS: work of cloud N before its tests')
    parser.add_argument('--first', action='append', default=[],
                        help='a test id prefix that runs on cloud 0')
    parser.add_argument('--out', default='.stestr-integration-%d.list')
    args = parser.parse_args(argv)
    with open(args.durations) as f:
        durations = read_durations(f)
    tests = [line.strip() for line in sys.stdin if line.strip()]
    before = {int(k): float(v) for k, v in
              (item.split('=', 1) for item in args.before)}
    for i, tests_of in enumerate(split(tests, durations, args.clouds,
                                       before, args.first)):
        with open(args.out % i, 'w') as f:
            f.write(''.join(t + '\n' for t in tests_of))
        print('cloud %d: %d tests, about %d s' % (i, len(tests_of), sum(
            durations.get(t, UNKNOWN) for t in tests_of)), file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
