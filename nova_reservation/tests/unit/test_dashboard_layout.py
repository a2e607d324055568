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

"""The ledger calendar's drawing (nova_reservation.dashboard.calendar.layout),
from answers shaped as GET /v1/ledger's.
"""

import datetime

import testtools

from nova_reservation.dashboard.calendar import layout

AFTER = datetime.datetime(2026, 11, 24, 18, 0)


def at(hours: float) -> str:
    """The API's date `hours` after AFTER."""
    return (AFTER + datetime.timedelta(hours=hours)).strftime(layout.API_DATE)


def allocation(start: float, end, vcpus: int = 2, kind='flavor:instance',
               **extra) -> dict:
    return dict(dict(
        type=kind, start=at(start), end=None if end is None else at(end),
        vcpus=vcpus, memory_mb=1024 * vcpus, disk_gb=10, lease_id='l1',
        lease_name='lease-1', reservation_id='r1', project_id='p1',
        server_id=None, held=False), **extra)


def ledger(nodes=(), free=(), hours: float = 7 * 24) -> dict:
    return {'after': at(0), 'before': at(hours), 'nodes': list(nodes),
            'free': list(free)}


def node(*allocations, vcpus: int = 8, name: str = 'compute1') -> dict:
    return {'name': name, 'reservable': False, 'allocations': list(
        allocations), 'capacity': {'vcpus': vcpus, 'memory_mb': 16384,
                                   'disk_gb': 100}}


def flavor(*steps) -> dict:
    return {'flavor_id': '1', 'flavor_name': 'm1.tiny', 'vcpus': 1,
            'memory_mb': 512, 'disk_gb': 1,
            'steps': [{'start': at(h), 'count': n} for h, n in steps]}


class BarsTest(testtools.TestCase):

    def bars(self, *allocations, hours: float = 100, vcpus: int = 8
             ) -> list:
        drawn = layout.calendar(ledger([node(*allocations, vcpus=vcpus)],
                                       hours=hours))
        return drawn.nodes[0].bars

    def test_position_and_height(self):
        bar, = self.bars(allocation(10, 30, vcpus=2))
        self.assertAlmostEqual(10.0, bar.left)
        self.assertAlmostEqual(20.0, bar.width)
        self.assertAlmostEqual(0.0, bar.bottom)
        self.assertAlmostEqual(25.0, bar.height)
        self.assertEqual(layout.COLOURS['flavor:instance'], bar.colour)
        self.assertEqual(AFTER + datetime.timedelta(hours=10), bar.start)

    def test_clipped_to_the_period(self):
        bar, = self.bars(allocation(-5, 120))
        self.assertEqual((0.0, 100.0), (bar.left, bar.width))
        # The tooltip keeps the allocation's own dates.
        self.assertIn(at(-5)[:16].replace('T', ' '), bar.title)
        self.assertIn('lease-1', bar.title)

    def test_outside_the_period_is_not_drawn(self):
        self.assertEqual([], self.bars(allocation(-10, -1),
                                       allocation(100, 110),
                                       allocation(-10, 0)))

    def test_no_end_is_the_end_of_the_period(self):
        bar, = self.bars(allocation(0, None, kind=layout.SERVERS))
        self.assertEqual((0.0, 100.0), (bar.left, bar.width))
        self.assertIsNone(bar.end)
        self.assertIn('...', bar.title)

    def test_overlapping_bars_stack(self):
        servers, a, b = self.bars(
            allocation(20, 60, vcpus=4), allocation(0, None, vcpus=2,
                                                    kind=layout.SERVERS),
            allocation(40, 80, vcpus=2))
        # Ordinary servers at the bottom, the rest above in start order.
        self.assertEqual(layout.SERVERS, servers.kind)
        self.assertEqual((0.0, 25.0), (servers.bottom, servers.height))
        self.assertEqual((25.0, 50.0), (a.bottom, a.height))
        self.assertEqual((75.0, 25.0), (b.bottom, b.height))

    def test_a_freed_place_is_reused(self):
        first, second, third = self.bars(
            allocation(0, 20, vcpus=4), allocation(10, 50, vcpus=4),
            allocation(30, 60, vcpus=4))
        self.assertEqual(50.0, second.bottom)
        self.assertEqual(0.0, third.bottom)

    def test_stacking_never_over_100_percent(self):
        # First fit leaves a hole too small for the last: the row grows to
        # hold it rather than drawing outside.
        bars = self.bars(
            allocation(0, 50, vcpus=3), allocation(0, 100, vcpus=3),
            allocation(60, 100, vcpus=4), vcpus=8)
        self.assertTrue(all(b.bottom + b.height <= 100.0 + 1e-9
                            for b in bars), bars)
        self.assertAlmostEqual(100.0, max(b.bottom + b.height for b in bars))

    def test_no_capacity_the_peak_fills_the_row(self):
        project_node = dict(node(allocation(0, 50, vcpus=2),
                                 allocation(25, 75, vcpus=2)),
                            capacity=None, reservable=None)
        bars = layout.calendar(ledger([project_node])).nodes[0].bars
        self.assertEqual([0.0, 50.0], [b.bottom for b in bars])
        self.assertEqual([50.0, 50.0], [b.height for b in bars])

    def test_a_bare_metal_node_s_slot_fills_the_row(self):
        # No vCPU on the node, none in its slots: each is drawn as one.
        bar, = self.bars(allocation(10, 30, vcpus=0), vcpus=0)
        self.assertEqual((0.0, 100.0, 0), (bar.bottom, bar.height,
                                           bar.vcpus))

    def test_style_is_not_localized(self):
        bar, = self.bars(allocation(10, 30, vcpus=1))
        self.assertEqual('left:10.000%;width:20.000%;bottom:0.000%;'
                         'height:12.500%', bar.style)

    def test_legend_lists_the_types_drawn(self):
        drawn = layout.calendar(ledger([node(
            allocation(0, 5, kind='physical:host'),
            allocation(0, None, kind=layout.SERVERS),
            allocation(0, 5, kind='something:else'))]))
        self.assertEqual([layout.SERVERS, 'physical:host', None],
                         [kind for kind, _, _ in drawn.legend])


class FreeTest(testtools.TestCase):

    def test_buckets_cut_at_whole_hours_of_the_day(self):
        after = datetime.datetime(2026, 11, 24, 17, 30, 12)
        found = layout.buckets(after, after + datetime.timedelta(hours=13),
                               6 * layout.HOUR)
        self.assertEqual([
            (after, datetime.datetime(2026, 11, 24, 18)),
            (datetime.datetime(2026, 11, 24, 18),
             datetime.datetime(2026, 11, 25, 0)),
            (datetime.datetime(2026, 11, 25, 0),
             datetime.datetime(2026, 11, 25, 6)),
            (datetime.datetime(2026, 11, 25, 6),
             datetime.datetime(2026, 11, 25, 6, 30, 12))], found)

    def test_bucket_size_for_the_period(self):
        self.assertEqual(6 * layout.HOUR, layout.bucket_seconds(7 * 86400))
        self.assertEqual(layout.HOUR, layout.bucket_seconds(86400))
        self.assertEqual(layout.DAY, layout.bucket_seconds(31 * 86400))
        self.assertLessEqual(31 * 86400 / layout.bucket_seconds(31 * 86400),
                             31)

    def test_min_count_over_each_bucket(self):
        drawn = layout.calendar(ledger(free=[flavor(
            (0, 5), (8, 3), (12, 4), (20, 0), (22, 6))], hours=24),
            bucket=6 * layout.HOUR)
        row, = drawn.free
        self.assertEqual(['1', 'm1.tiny'], [row.flavor_id, row.flavor_name])
        # Hours from AFTER: [0, 6) 5; [6, 12) 5 then 3; [12, 18) 4;
        # [18, 24) 4, then 0, then 6.
        self.assertEqual([5, 3, 4, 0], [c.count for c in row.cells])
        self.assertEqual([0.0, 25.0, 50.0, 75.0], [c.left for c in row.cells])
        self.assertEqual(AFTER + datetime.timedelta(hours=6),
                         row.cells[0].end)

    def test_a_step_at_a_bucket_end_counts_for_the_next(self):
        row, = layout.calendar(ledger(free=[flavor((0, 5), (6, 1))],
                                      hours=12), bucket=6 * 3600).free
        self.assertEqual([5, 1], [c.count for c in row.cells])

    def test_steps_before_after(self):
        row, = layout.calendar(ledger(free=[flavor((-48, 2), (-1, 7),
                                                   (3, 4))], hours=12),
                               bucket=6 * 3600).free
        self.assertEqual([4, 4], [c.count for c in row.cells])

    def test_before_the_first_step_nothing_fits(self):
        row, = layout.calendar(ledger(free=[flavor((7, 2))], hours=12),
                               bucket=6 * 3600).free
        self.assertEqual([0, 0], [c.count for c in row.cells])
        row, = layout.calendar(ledger(free=[flavor()], hours=12),
                               bucket=6 * 3600).free
        self.assertEqual([0, 0], [c.count for c in row.cells])

    def test_min_count(self):
        steps = [(datetime.datetime(2026, 1, 1, h), n)
                 for h, n in ((0, 3), (4, 1), (5, 2))]
        day = datetime.datetime(2026, 1, 1)
        self.assertEqual(3, layout.min_count(steps, day, day.replace(hour=4)))
        self.assertEqual(1, layout.min_count(steps, day, day.replace(
            hour=4, minute=1)))
        self.assertEqual(2, layout.min_count(steps, day.replace(hour=6),
                                             day.replace(hour=9)))


class CalendarTest(testtools.TestCase):

    def test_ticks_at_midnight(self):
        drawn = layout.calendar(ledger(hours=36))
        self.assertEqual([datetime.datetime(2026, 11, 25),
                          datetime.datetime(2026, 11, 26)],
                         [t.when for t in drawn.ticks])
        self.assertAlmostEqual(100.0 * 6 / 36, drawn.ticks[0].left)

    def test_dates_with_a_zone_or_without_fraction(self):
        self.assertEqual(AFTER, layout.parse_date('2026-11-24T18:00:00Z'))
        self.assertEqual(AFTER, layout.parse_date('2026-11-24T18:00:00'))
        self.assertIsNone(layout.parse_date(None))

    def test_an_empty_period_is_refused(self):
        self.assertRaises(ValueError, layout.calendar, ledger(hours=0))

    def test_own_allocations(self):
        mine = allocation(0, 5)
        theirs = allocation(0, 5, project_id='p2')
        found = layout.own(ledger([
            node(mine, theirs), node(theirs, name='compute2'),
            node(allocation(0, None, kind=layout.SERVERS, project_id=None),
                 name='compute3')]), 'p1')
        self.assertEqual([('compute1', [mine])], [
            (n['name'], n['allocations']) for n in found['nodes']])
