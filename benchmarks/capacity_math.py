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

"""Capacity math on one node's timeline: the highest usage over an
interval, and the earliest start at which a slot fits.

The timeline answers a peak query in O(log n) after an O(n log n) build;
the baseline, measured in the same run, is a sweep over the allocations
that meet the interval, found by a scan of all of them (O(n) per query).
The earliest fitting start of one slot (or slots kept together) is the
node's own search: after a window that fails it starts again where the
last step too high for the slot ends, O(log n + w) a window of w steps.
The search over any plan (slots spread over nodes) tries instants where
usage drops, in order, each at O(log n) plus a search of the steps of the
interval at its peak, and jumps past them when the try fails: O(k (log n
+ w)) for k tries.  k depends on how busy the node is, so it is reported
too; both answer the same, which the run checks.
"""

import random

from benchmarks import timing
from nova_reservation import capacity
from nova_reservation.capacity import timeline as timeline_mod

SLOT = capacity.Resources(1, 1024, 10)
HOURS = 3600.0


def timeline_of(count: int, seed: int = 1) -> list:
    """`count` allocations of one slot each, over a year, that keep the
    node busy at about 8 slots at any time.
    """
    rng = random.Random(seed)
    span = 365 * 24 * HOURS
    mean = span * 8 / count
    allocations = []
    for i in range(count):
        start = rng.uniform(0, span)
        allocations.append(capacity.Slot(
            i, 'r%d' % i, 'node', start, start + rng.expovariate(1 / mean),
            SLOT))
    return allocations


def scan_peak(allocations: list, start: float, end: float) -> float:
    """The baseline peak in O(n log n): one sweep over the allocations
    that meet the interval.
    """
    edges = []
    for a in allocations:
        if a.start < end and a.end > start:
            edges.append((max(a.start, start), 1))
            edges.append((a.end, -1))
    level = best = 0
    for _, delta in sorted(edges):
        level += delta
        best = max(best, level)
    return best


def run(sizes=(1_000, 10_000, 100_000), budget: float = 0.5) -> list:
    rng = random.Random(2)
    rows = []
    for n in sizes:
        allocations = timeline_of(n)
        timeline = timeline_mod.Timeline(allocations)
        timeline.peak(0, 1)   # built once, as the ledger keeps it
        span = 365 * 24 * HOURS
        queries = [(s, s + 8 * HOURS) for s in
                   (rng.uniform(0, span) for _ in range(200))]
        for s, e in queries[:20]:
            assert timeline.peak(s, e).vcpus == scan_peak(
                allocations, s, e)
        peak_us = 1e6 * timing.per_call(timeline.peak, queries, budget)
        baseline_us = 1e6 * timing.per_call(lambda s, e: scan_peak(
            allocations, s, e), queries[:5], budget)

        host = capacity.Host('node', capacity.Resources(10, 10240, 100))
        timelines = {'node': timeline}

        tries = []

        def place(a, b):
            tries.append(a)
            return [] if capacity.fits(host, timeline, SLOT.scaled(3), a,
                                       b) else None

        def search(s, e):
            return capacity.earliest_start(timelines, s, e - s, span, place)

        def earliest(s, e):
            return capacity.earliest_fit([host], timelines, SLOT.scaled(3),
                                         s, e - s, span)
        for s, e in queries[:20]:
            assert earliest(s, e) == search(s, e)
        earliest_us = 1e6 * timing.per_call(earliest, queries[:20], budget)
        search_us = 1e6 * timing.per_call(search, queries[:20], budget)
        calls = len(tries)
        for s, e in queries[:20]:
            search(s, e)
        rows.append(dict(allocations=n, peak_us=peak_us,
                         peak_scan_us=baseline_us,
                         peak_speedup=baseline_us / peak_us,
                         earliest_start_us=earliest_us,
                         earliest_search_us=search_us,
                         earliest_start_tries=(len(tries) - calls) / 20))
    return rows


if __name__ == '__main__':
    for row in run():
        print(row)
