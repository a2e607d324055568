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

"""benchmarks/run [--quick]: every benchmark, its figures against its
targets, printed as a table and written to benchmarks/results.json.
"""

import argparse
import datetime
import json
import os
import platform
import sys

from benchmarks import blazar_placement
from benchmarks import capacity_math
from benchmarks import claim_delay
from benchmarks import events
from benchmarks import lease_placement
from benchmarks import leases_at_once
from benchmarks import preemption
from benchmarks import scheduler_overhead

RESULTS = os.path.join(os.path.dirname(__file__), 'results.json')
# Scheduling request with / without the filter, (hosts, allocations): the
# fixed cost of a request weighs most on a small cloud.
OVERHEAD_TARGETS = {(100, 0): 1.1, (100, 100_000): 1.2,
                    (1_000, 100_000): 1.1, (10_000, 100_000): 1.05}
# MB that a process (nova-scheduler, nova-api) holds for its copy of the
# ledger, by allocations (on 10,000 hosts).
MEMORY_TARGETS = {100_000: 50.0, 1_000_000: 150.0}


def figure(name: str, value: float, unit: str, target=None,
           better: str = 'lower') -> dict:
    met = None
    if target is not None:
        met = value <= target if better == 'lower' else value >= target
    return dict(name=name, value=round(value, 3), unit=unit, target=target,
                better=better, met=met)


def run(quick: bool) -> list:
    figures = []
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    for row in capacity_math.run(sizes, budget=0.2 if quick else 0.5):
        n = row['allocations']
        figures += [
            figure('peak usage query, %d allocations' % n, row['peak_us'],
                   'us'),
            figure('peak usage: scan / timeline, %d allocations' % n,
                   row['peak_speedup'], 'x'),
            figure('earliest fitting start, %d allocations' % n,
                   row['earliest_start_us'], 'us',
                   5000.0 if n == 100_000 else None),
            figure('earliest fitting start, search over plans, %d '
                   'allocations' % n, row['earliest_search_us'], 'us'),
            figure('search over plans: instants tried, %d allocations'
                   % n, row['earliest_start_tries'], 'tries')]
    hosts = (100, 1_000) if quick else (100, 1_000, 10_000)
    allocations = (0, 10_000) if quick else (0, 10_000, 100_000)
    for row in scheduler_overhead.run(hosts, allocations,
                                      budget=0.3 if quick else 1.0):
        at = '%d hosts, %d allocations' % (row['hosts'], row['allocations'])
        top = (row['hosts'], row['allocations']) == (hosts[-1],
                                                     allocations[-1])
        figures += [
            figure('scheduling request with / without filter, ' + at,
                   row['ratio'], 'x', OVERHEAD_TARGETS.get(
                       (row['hosts'], row['allocations']))),
            figure('filter cost per host, ' + at,
                   row['filter_us_per_host'], 'us', 20.0 if top else None),
            figure('scheduling request with / without a filter that '
                   'passes every host, ' + at, row['empty_filter_ratio'],
                   'x')]
        if row['hosts'] == hosts[-1] and row['allocations']:
            figures.append(figure(
                'scheduler memory for %d allocations' % row['allocations'],
                row['ledger_mb'], 'MB',
                MEMORY_TARGETS.get(row['allocations'])))
    if not quick:
        # The memory only: Nova's scheduler over 10,000 host states is
        # measured above.
        figures.append(figure(
            'scheduler memory for 1000000 allocations',
            scheduler_overhead.memory(10_000, 1_000_000), 'MB',
            MEMORY_TARGETS[1_000_000]))
    figures += five_classes(quick)
    sizes = [(100, 10_000, 10)] if quick else [(1_000, 100_000, 30),
                                               (10_000, 1_000_000, 10)]
    rows = []
    for size, target in zip(sizes, (20.0, 200.0)):
        row = lease_placement.run(*size)
        rows.append(row)
        at = '%d hosts, %d allocations' % (row['hosts'], row['allocations'])
        figures += [
            figure('capacity reservation (10 slots) p50, ' + at,
                   row['capacity_p50_ms'], 'ms', target),
            figure('host reservation (min 5) p50, ' + at,
                   row['host_p50_ms'], 'ms', target),
            figure('nova-api memory for the ledger and the nodes, ' + at,
                   row['memory_mb'], 'MB',
                   MEMORY_TARGETS.get(size[1]) if size[0] == 10_000
                   else None),
            figure('availability search (10 slots, 10 windows over a '
                   'year) p50, ' + at, row['availability_p50_ms'], 'ms',
                   50.0 if size[:2] == (1_000, 100_000) else None)]
    placed = rows[0]   # the size Blazar is measured at
    figures.append(figure('Placement requests per lease', placed[
        'capacity_placement_requests'], 'requests'))
    racing = leases_at_once.run(
        *((100, 10_000, 10) if quick else (1_000, 100_000, 50)))
    racing_at = '%d clients at once, %d hosts, %d allocations' % (
        racing['clients'], racing['hosts'], racing['allocations'])
    figures += [
        figure('leases per second, ' + racing_at, racing['together_per_s'],
               '/s', better='higher'),
        figure('leases per second, one client alone', racing['alone_per_s'],
               '/s', better='higher'),
        figure('leases refused as busy, ' + racing_at, racing['busy'],
               'leases', 0)]
    blazar = blazar_placement.run(
        placed['hosts'], placed['allocations'], repeat=3 if quick else 5,
        budget_s=10.0 if quick else 60.0)
    at = '%d hosts, %d allocations' % (placed['hosts'],
                                       placed['allocations'])
    figures += [
        figure('Blazar %s host reservation p50, ' % blazar['blazar_version']
               + at, blazar['host_p50_ms'], 'ms'),
        figure('Blazar %s instance reservation p50, '
               % blazar['blazar_version'] + at, blazar['instance_p50_ms'],
               'ms'),
        figure('host reservation: Blazar / nova-reservation',
               blazar['host_p50_ms'] / placed['host_p50_ms'], 'x'),
        figure('capacity reservation: Blazar / nova-reservation',
               blazar['instance_p50_ms'] / placed['capacity_p50_ms'], 'x')]
    count, window = (300, 5.0) if quick else (10_000, 60.0)
    for row in events.run(count, window):
        at = '%d events in %d s, %d engine(s)' % (
            count, window, row['engines'])
        figures += [
            figure('event lateness p50, ' + at, row['lateness_p50_s'], 's'),
            figure('event lateness p99, ' + at, row['lateness_p99_s'], 's',
                   1.0),
            figure('event done (outcome written) p99, ' + at,
                   row['done_lateness_p99_s'], 's', 1.0),
            figure('events per second per engine, all due at once, %d '
                   'engine(s)' % row['engines'],
                   row['events_per_s_per_engine'], '/s', 200.0,
                   better='higher'),
            figure('engine / bare store claim-and-finish, %d engine(s)'
                   % row['engines'], row['engine_vs_store'], 'x')]
    figures += settle_wait(quick)
    return figures + spare_capacity(quick)


def five_classes(quick: bool) -> list:
    """The figures of a cloud of five resource classes: a GPU class on
    each node's provider and vGPUs on two child providers a node, a
    quarter of the slots holding a GPU and a quarter a vGPU; an ordinary
    boot, an ordinary boot of a GPU, and a capacity reservation of a GPU a
    slot.
    """
    figures = []
    hosts, allocations = (((100,), (10_000,)) if quick
                          else ((10_000,), (100_000,)))
    for row in scheduler_overhead.run(hosts, allocations,
                                      budget=0.3 if quick else 1.0,
                                      classes=5):
        at = '5 classes, %d hosts, %d allocations' % (
            row['hosts'], row['allocations'])
        figures += [
            figure('scheduling request with / without filter, ' + at,
                   row['ratio'], 'x', None if quick else 1.1),
            figure('scheduling request of a GPU flavor with / without '
                   'filter, ' + at, row['gpu_ratio'], 'x'),
            figure('Placement requests per scheduling request of a GPU '
                   'flavor, ' + at, row['gpu_placement_requests'],
                   'requests')]
    size = (100, 10_000, 10) if quick else (10_000, 1_000_000, 10)
    if not quick:
        figures.append(figure(
            'scheduler memory for 1000000 allocations, 5 classes',
            scheduler_overhead.memory(10_000, 1_000_000, classes=5), 'MB',
            MEMORY_TARGETS[1_000_000]))
    row = lease_placement.run(*size, classes=5)
    at = '5 classes, %d hosts, %d allocations' % size[:2]
    figures += [
        figure('capacity reservation (10 slots of a GPU each) p50, ' + at,
               row['capacity_p50_ms'], 'ms', None if quick else 200.0),
        figure('nova-api memory for the ledger and the nodes, ' + at,
               row['memory_mb'], 'MB', None if quick else 150.0),
        figure('Placement requests per lease, ' + at,
               row['capacity_placement_requests'], 'requests')]
    return figures


def settle_wait(quick: bool) -> list:
    """The scheduler's filter-to-claim time, which bounds how long a new
    lease waits for the boots in flight (`boot_settle_timeout`).
    """
    row = claim_delay.run(*((4, 2, 4) if quick else (10, 4, 8)))
    at = '%d servers in %d boots, %d nodes' % (
        row['servers'], row['boots'], row['nodes'])
    return [
        figure('scheduler filter-to-claim p50, ' + at, row['p50_ms'], 'ms'),
        figure('scheduler filter-to-claim max, ' + at, row['max_ms'], 'ms',
               1000.0)]


def spare_capacity(quick: bool) -> list:
    """A week (a day: --quick) of leases and preemptible work."""
    row = preemption.run(*((20, 1.0) if quick else (100, 7.0)))
    at = '%d nodes, %g days' % (row['nodes'], row['days'])
    return [
        figure('promised capacity used by preemptible work, of what it '
               'could use, ' + at, 100 * row['promised_share'], '%', 80.0,
               better='higher'),
        figure('lease starts late, %d leases started, ' % row[
            'leases_started'] + at, row['late_starts'], 'leases', 0),
        figure('evictions per lease, ' + at, row['evictions_per_lease'],
               'servers'),
        figure('evictions that were migrations, ' + at,
               100 * row['migrations'] / max(row['evictions'], 1), '%'),
        figure('preemptible jobs lost (on_preempt=shelve), %d done, '
               % row['jobs_done'] + at, row['jobs_lost'], 'jobs', 0)]


def main() -> int:
    parser = argparse.ArgumentParser(prog='benchmarks/run')
    parser.add_argument('--quick', action='store_true',
                        help='Small sizes: that every benchmark works.')
    args = parser.parse_args()
    figures = run(args.quick)
    width = max(len(f['name']) for f in figures)
    for f in figures:
        target = '' if f['target'] is None else '%s %s' % (
            '>=' if f.get('better') == 'higher' else '<=', f['target'])
        met = {None: '', True: 'met', False: 'NOT MET'}[f['met']]
        print('%-*s %12.3f %-8s %-10s %s' % (width, f['name'], f['value'],
                                             f['unit'], target, met))
    if not args.quick:
        with open(RESULTS, 'w') as out:
            json.dump(dict(date=datetime.date.today().isoformat(),
                           machine='%s, %d cores, Python %s' % (
                               platform.machine(), os.cpu_count(),
                               platform.python_version()),
                           figures=figures), out, indent=2)
    return 0 if all(f['met'] is not False for f in figures) or \
        args.quick else 1


if __name__ == '__main__':
    sys.exit(main())
