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

"""The integration suite split over the lanes of one local cloud
(`devcloud.lanes`), one test at a time in each lane and the lanes side by
side: a test has capacity of its own (its leases never meet another
test's), and the suite takes about its sum over the number of lanes
instead of the sum.

``python -m devcloud.schedule LANES DURATIONS < test ids`` writes the
list of each lane (``.stestr-integration-N.list``): the longest first to
the lane with the least work so far, from the seconds each test took in
a run before (DURATIONS, "seconds test-id" lines; a test not in it counts
as ``UNKNOWN`` seconds).  The tests of a gabbi YAML file stay together, in
their order, in one lane; so do the tests whose classes name one thing in
``SHARES`` (what lanes do not split, such as alice's project's quotas);
the tests of classes that are ``ALONE`` (they stop or measure what every
lane shares) are listed apart (``.stestr-integration-alone.list``), to run
before the lanes start; those of classes that are ``LAST`` (they look at
what every lane left) too (``.stestr-integration-last.list``), to run
once the lanes are done.  A lane's own work before its tests is given as
``--before N=SECONDS``; tests that must run in the first lane are given
as ``--first PREFIX``.

``python -m devcloud.schedule --record < CSV`` prints DURATIONS from the
CSV of a run's results (``stestr last --subunit | subunit2csv``).

``python -m devcloud.schedule --subunit DURATIONS`` prints them as a run's
subunit stream, for ``stestr load``: stestr splits a suite over its
workers by the seconds each test took in the runs its repository holds
(the longest first to the least loaded), and round robin without them,
which left one worker of a functional suite running a minute after the
others.
"""

import argparse
import csv
import datetime
import importlib
import re
import sys
from typing import Iterable, Optional

from subunit import v2 as subunit_v2

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


def declared(test_id: str, name: str, default):
    """What the class of the test `test_id` (module.Class.method) says of
    `name` (``ALONE``, ``SHARES``); for a test whose class its module makes
    when loaded (gabbi's), what the module says.
    """
    path, _, _ = test_id.rpartition('.')
    path, _, cls = path.rpartition('.')
    try:
        module = importlib.import_module(path)
    except ImportError:
        return default
    return getattr(getattr(module, cls, module), name,
                   getattr(module, name, default))


def shares_of(tests: Iterable[str]) -> dict:
    """{test id: what its class `SHARES`} of those that share something."""
    found = {}
    for test in tests:
        names = tuple(declared(test, 'SHARES', ()))
        if names:
            found[test] = names
    return found


def alone(tests: Iterable[str]) -> list:
    """Those of `tests` whose classes run `ALONE`."""
    return [t for t in tests if declared(t, 'ALONE', False)]


def last(tests: Iterable[str]) -> list:
    """Those of `tests` whose classes run `LAST`."""
    return [t for t in tests if declared(t, 'LAST', False)]


def split(tests: list, durations: dict, clouds: int, before: dict = None,
          first: Iterable[str] = (), shares: Optional[dict] = None) -> list:
    """`tests` as `clouds` lists (lanes), each in the order given; the
    tests that `shares` ({test id: names}) gives a name in common in one.
    """
    groups: dict = {}
    for test in tests:
        groups.setdefault(group_of(test), []).append(test)
    # Groups that share a name run as one (a union of sets).
    parent = {group: group for group in groups}

    def root(group: str) -> str:
        while parent[group] != group:
            group = parent[group]
        return group
    named: dict = {}
    for test, names in sorted((shares or {}).items()):
        if group_of(test) not in parent:
            continue
        for name in names:
            one = root(named.setdefault(name, group_of(test)))
            other = root(group_of(test))
            parent[other] = one
    merged: dict = {}
    for group, tests_of in groups.items():
        merged.setdefault(root(group), []).extend(tests_of)
    groups = merged
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


def as_subunit(durations: dict, stream) -> None:
    """`durations` as a run of their tests, each its seconds long, in
    subunit v2 on the binary `stream`.
    """
    out = subunit_v2.StreamResultToBytes(stream)
    began = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    for test, seconds in sorted(durations.items()):
        out.status(test_id=test, test_status='inprogress', timestamp=began)
        out.status(test_id=test, test_status='success',
                   timestamp=began + datetime.timedelta(seconds=seconds))


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv == ['--record']:
        sys.stdout.write(record(csv.DictReader(sys.stdin)))
        return 0
    if argv[:1] == ['--subunit'] and len(argv) == 2:
        with open(argv[1]) as f:
            as_subunit(read_durations(f), sys.stdout.buffer)
        return 0
    parser = argparse.ArgumentParser(prog='python -m devcloud.schedule')
    parser.add_argument('lanes', type=int)
    parser.add_argument('durations')
    parser.add_argument('--before', action='append', default=[],
                        help='N=SECONDS: work of cloud N before its tests')
    parser.add_argument('--first', action='append', default=[],
                        help='a test id prefix that runs on cloud 0')
    parser.add_argument('--out', default='.stestr-integration-%s.list')
    args = parser.parse_args(argv)
    with open(args.durations) as f:
        durations = read_durations(f)
    tests = [line.strip() for line in sys.stdin if line.strip()]
    before = {int(k): float(v) for k, v in
              (item.split('=', 1) for item in args.before)}
    lists = {'alone': alone(tests), 'last': last(tests)}
    rest = [t for t in tests
            if t not in lists['alone'] and t not in lists['last']]
    lists.update(enumerate(split(rest, durations, args.lanes, before,
                                 args.first, shares_of(rest))))
    for key, tests_of in lists.items():
        with open(args.out % key, 'w') as f:
            f.write(''.join(t + '\n' for t in tests_of))
        print('%s: %d tests, about %d s' % (
            key if isinstance(key, str) else 'lane %d' % key, len(tests_of),
            sum(durations.get(t, UNKNOWN) for t in tests_of)),
            file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
