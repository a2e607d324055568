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

"""The capacity math, against brute force."""

import random
import unittest

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from nova_reservation import capacity
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.tests.unit import base

R = capacity.Resources


def alloc(i, start, end, vcpus=1, node='n1', ram=0, disk=0):
    return capacity.Slot(id=i, reservation_id='r%d' % i, node=node,
                         start=start, end=end,
                         resources=R(vcpus, ram, disk))


def brute_peak(allocs, start, end):
    """Usage at every instant that matters, the slow way."""
    instants = {start} | {a.start for a in allocs if start <= a.start < end}
    best = capacity.ZERO
    for t in instants:
        usage = capacity.ZERO
        for a in allocs:
            if a.start <= t < a.end:
                usage = usage + a.resources
        best = R(*map(max, best, usage))
    return best


def timelines(rows) -> dict:
    """{node: Timeline} of (node, (start, end), vcpus, ram) rows."""
    nodes: dict = {}
    for i, (node, (a, b), cpus, ram) in enumerate(rows):
        nodes.setdefault(node, []).append(
            alloc(i, a, b, cpus, node=node, ram=ram))
    return {n: timeline_mod.Timeline(a) for n, a in nodes.items()}


intervals = st.tuples(st.integers(0, 100), st.integers(1, 30)).map(
    lambda p: (p[0], p[0] + p[1]))
allocations = st.lists(st.tuples(intervals, st.integers(1, 4),
                                 st.integers(0, 2048)), max_size=40)


class TimelineTest(unittest.TestCase):

    def test_empty(self):
        self.assertEqual(capacity.ZERO, timeline_mod.Timeline().peak(0, 10))

    def test_touching_intervals_do_not_overlap(self):
        tl = timeline_mod.Timeline([alloc(1, 0, 10, 2), alloc(2, 10, 20, 3)])
        self.assertEqual(2, tl.peak(0, 10).vcpus)
        self.assertEqual(3, tl.peak(5, 15).vcpus)
        self.assertEqual(3, tl.peak(10, 11).vcpus)
        self.assertEqual(0, tl.peak(20, 30).vcpus)

    def test_add_and_remove(self):
        tl = timeline_mod.Timeline([alloc(1, 0, 10, 2)])
        tl.add(alloc(2, 5, 15, 3))
        self.assertEqual(5, tl.peak(0, 20).vcpus)
        tl.remove(1)
        self.assertEqual(3, tl.peak(0, 20).vcpus)
        self.assertEqual(0, tl.peak(0, 5).vcpus)

    def test_exclude(self):
        tl = timeline_mod.Timeline([alloc(1, 0, 10, 2), alloc(2, 0, 10, 3)])
        self.assertEqual(3, tl.peak(0, 10, exclude=[1]).vcpus)

    @settings(max_examples=300, deadline=None)
    @given(allocations, intervals, st.sampled_from([0, 1000]))
    def test_peak_matches_brute_force(self, rows, query, long_span):
        # Both ways of answering: the sparse table, and the scan.
        timeline_mod.LONG_SPAN, saved = long_span, timeline_mod.LONG_SPAN
        self.addCleanup(setattr, capacity, 'LONG_SPAN', saved)
        allocs = [alloc(i, s, e, v, ram=m)
                  for i, ((s, e), v, m) in enumerate(rows)]
        tl = timeline_mod.Timeline(allocs)
        self.assertEqual(brute_peak(allocs, *query), tl.peak(*query))

    @settings(max_examples=300, deadline=None)
    @given(allocations, st.integers(-10, 140))
    def test_peak_after_matches_brute_force(self, rows, t):
        allocs = [alloc(i, s, e, v, ram=m)
                  for i, ((s, e), v, m) in enumerate(rows)]
        tl = timeline_mod.Timeline(allocs)
        self.assertEqual(tuple(brute_peak(allocs, t, capacity.FOREVER)),
                         tuple(tl.peak_after(t)))

    @settings(max_examples=300, deadline=None)
    @given(allocations, allocations, st.lists(st.integers(0, 80)),
           intervals, st.integers(-10, 140), st.sampled_from([0, 1000]))
    def test_a_changed_copy_answers_as_one_built_anew(
            self, first, then, gone, query, t, long_span):
        # A built timeline copied, then slots added, moved (added again
        # with the same id) and removed, answers every question as a
        # timeline built from the slots it ends with; the original is
        # untouched.
        timeline_mod.LONG_SPAN, saved = long_span, timeline_mod.LONG_SPAN
        self.addCleanup(setattr, capacity, 'LONG_SPAN', saved)
        before = [alloc(i, s, e, v, ram=m)
                  for i, ((s, e), v, m) in enumerate(first)]
        original = timeline_mod.Timeline(before)
        original.peak_after(0)   # built
        expected = (original.peak(*query), original.peak_after(t),
                    original.next_drop(t))
        changed = original.copy()
        for i, ((s, e), v, m) in enumerate(then):
            changed.add(alloc(i * 2, s, e, v, ram=m))
        for i in gone:
            changed.remove(i)
        after = {a.id: a for a in before}
        for i, ((s, e), v, m) in enumerate(then):
            after[i * 2] = alloc(i * 2, s, e, v, ram=m)
        for i in gone:
            after.pop(i, None)
        anew = timeline_mod.Timeline(after.values())
        for tl in (changed, anew):
            self.assertEqual(len(after), len(tl))
        self.assertEqual(brute_peak(list(after.values()), *query),
                         changed.peak(*query))
        self.assertEqual(anew.peak(*query), changed.peak(*query))
        self.assertEqual(tuple(anew.peak_after(t)),
                         tuple(changed.peak_after(t)))
        self.assertEqual(anew.next_drop(t), changed.next_drop(t))
        # Steps split and not merged again make it say "changes" early,
        # never late (its answers are kept until then).
        self.assertLessEqual(changed.next_change(t), anew.next_change(t))
        self.assertEqual(expected, (original.peak(*query),
                                    original.peak_after(t),
                                    original.next_drop(t)))


class PlanTest(unittest.TestCase):

    def hosts(self, n, vcpus=4):
        return [capacity.Host(node='n%d' % i, capacity=R(vcpus, 8192, 100))
                for i in range(n)]

    def test_spreads_and_refuses_beyond_capacity(self):
        need = R(2, 1024, 10)
        self.assertEqual(['n0', 'n1'], sorted(capacity.plan(
            self.hosts(2), {}, need, 2, 0, 10)))
        self.assertEqual(4, len(capacity.plan(self.hosts(2), {}, need, 4,
                                              0, 10)))
        self.assertIsNone(capacity.plan(self.hosts(2), {}, need, 5, 0, 10))

    def test_base_usage_counts_forever(self):
        hosts = [capacity.Host('n0', R(4, 8192, 100), base=R(3, 0, 0))]
        self.assertIsNone(capacity.plan(hosts, {}, R(2, 1, 1), 1, 50, 60))

    def test_earliest_start_is_the_first_that_fits(self):
        tl = {'n0': timeline_mod.Timeline([alloc(1, 0, 50, 4, node='n0'),
                                           alloc(2, 60, 70, 4, node='n0')])}
        hosts = [capacity.Host('n0', R(4, 8192, 100))]
        need = R(1, 1, 1)

        def place(start, end):
            return capacity.plan(hosts, tl, need, 1, start, end)
        self.assertEqual(50, capacity.earliest_start(tl, 10, 10, 1000,
                                                     place))
        self.assertEqual(70, capacity.earliest_start(tl, 10, 20, 1000,
                                                     place))
        self.assertIsNone(capacity.earliest_start(tl, 10, 20, 65, place))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(['n0', 'n1', 'n2']),
                              intervals, st.integers(1, 4),
                              st.integers(0, 2048)), max_size=30),
           st.integers(1, 4), st.integers(1, 3), st.integers(1, 40),
           st.sampled_from([None, True, False]), st.integers(0, 60))
    def test_earliest_start_skips_only_starts_that_fail(
            self, rows, vcpus, count, duration, affinity, start):
        tl = timelines(rows)
        hosts = [capacity.Host(n, R(6, 4096, 100))
                 for n in ('n0', 'n1', 'n2')]
        need = R(vcpus, 512, 1)

        def place(a, b):
            return capacity.plan(hosts, tl, need, count, a, b,
                                 affinity=affinity)
        # Brute force: every start where usage drops, in order.
        drops = sorted({start} | {b for _, (_, b), _, _ in rows
                                  if b > start})
        expected = next((t for t in drops if t <= 200 and
                         place(t, t + duration) is not None), None)
        self.assertEqual(expected, capacity.earliest_start(
            tl, start, duration, 200, place))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(['n0', 'n1', 'n2']),
                              intervals, st.integers(1, 4),
                              st.integers(0, 2048)), max_size=30),
           st.integers(1, 4), st.integers(1, 3), st.integers(1, 40),
           st.sampled_from([None, True]), st.integers(0, 60),
           st.integers(40, 200))
    def test_earliest_fit_node_by_node_is_the_search_s_answer(
            self, rows, vcpus, count, duration, affinity, start, horizon):
        # One slot, or slots that stay together: each node's own search
        # finds what the search over every plan finds.
        count = 1 if affinity is None else count
        tl = timelines(rows)
        hosts = [capacity.Host(n, R(6, 4096, 100), base=R(i, 0, 0))
                 for i, n in enumerate(('n0', 'n1', 'n2'))]
        need = R(vcpus, 512, 1)

        def place(a, b):
            return capacity.plan(hosts, tl, need, count, a, b,
                                 affinity=affinity)
        self.assertEqual(
            capacity.earliest_start(tl, start, duration, horizon, place),
            capacity.earliest_fit(hosts, tl, need.scaled(count), start,
                                  duration, horizon))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(['n0', 'n1', 'n2']),
                              intervals, st.integers(1, 4),
                              st.integers(0, 2048)), max_size=30),
           st.integers(1, 4), st.integers(0, 2048), st.integers(0, 120),
           st.integers(1, 150))
    def test_free_counts_are_the_slots_that_fit_at_each_instant(
            self, rows, vcpus, ram, start, span):
        tl = timelines(rows)
        hosts = [capacity.Host('n0', R(6, 4096, 100)),
                 capacity.Host('n1', R(8, 8192, 100), base=R(2, 1024, 0)),
                 capacity.Host('n2', R(4, 2048, 100))]
        need = R(vcpus, ram, 1)
        end = start + span
        counts = capacity.free_counts(hosts, tl, need, start, end)
        self.assertEqual(start, counts[0][0])
        # Each step says something new, in time order, within the span.
        for (a, x), (b, y) in zip(counts, counts[1:]):
            self.assertLess(a, b)
            self.assertNotEqual(x, y)
            self.assertLess(b, end)
        # Brute force: usage changes at whole numbers; at each instant,
        # what each node's room holds, the slow way.
        for k in range(2 * start, 2 * end):
            t = k / 2
            expected = 0
            for h in hosts:
                slots = tl[h.node].meeting(t, t + 0.5) if h.node in tl else []
                room = h.capacity - h.base - brute_peak(slots, t, t + 0.5)
                while need.fits_in(room):
                    expected += 1
                    room = room - need
            found = [c for s, c in counts if s <= t][-1]
            self.assertEqual(expected, found, 'at %s' % t)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(['n0', 'n1', 'n2']),
                              intervals, st.integers(1, 4),
                              st.integers(0, 2048)), max_size=30),
           st.integers(1, 4), st.integers(1, 3), st.integers(1, 40),
           st.sampled_from([None, True, False]), st.integers(0, 60),
           st.integers(0, 150), st.integers(1, 6))
    def test_windows_are_the_runs_of_starts_that_fit(
            self, rows, vcpus, count, duration, affinity, start, span,
            limit):
        tl = timelines(rows)
        hosts = [capacity.Host(n, R(6, 4096, 100))
                 for n in ('n0', 'n1', 'n2')]
        need = R(vcpus, 512, 1)
        end = start + span

        def place(a, b):
            return capacity.plan(hosts, tl, need, count, a, b,
                                 affinity=affinity)
        expected = base.runs_that_fit(place, start, end, duration)[:limit]
        found = capacity.windows(tl, start, end, duration, place, limit)
        self.assertEqual(expected, [(a, round(b, 3)) for a, b in found])
        if found:
            self.assertEqual(found[0][0], capacity.earliest_start(
                tl, start, duration, end, place))

    def test_a_window_ends_where_a_slot_would_overlap_the_next_lease(self):
        hosts = [capacity.Host('n0', R(2, 4096, 100))]
        tl = {'n0': timeline_mod.Timeline([alloc(1, 100, 200, 2, node='n0')])}

        def place(a, b):
            return capacity.plan(hosts, tl, R(1, 0, 0), 1, a, b)
        # Free before 100 and from 200: a 30-long lease starts by 70, or
        # from 200 on.
        self.assertEqual([(0, 70), (200, 500)], capacity.windows(
            tl, 0, 500, 30, place, 10))
        self.assertEqual([(0, 70)], capacity.windows(tl, 0, 500, 30,
                                                     place, 1))
        self.assertEqual([], capacity.windows(tl, 80, 150, 30, place, 10))

    def test_earliest_fit_never_fits_a_node_too_small(self):
        hosts = [capacity.Host('n0', R(2, 4096, 100))]
        self.assertIsNone(capacity.earliest_fit(hosts, {}, R(3, 1, 1), 0,
                                                10, 100))
        self.assertEqual(5, capacity.earliest_fit(hosts, {}, R(2, 1, 1), 5,
                                                  10, 100))

    def test_affinity(self):
        need = R(1, 1, 1)
        hosts = self.hosts(3, vcpus=2)
        together = capacity.plan(hosts, {}, need, 2, 0, 10, affinity=True)
        self.assertEqual(1, len(set(together)))
        self.assertIsNone(capacity.plan(hosts, {}, need, 3, 0, 10,
                                        affinity=True))
        apart = capacity.plan(hosts, {}, need, 3, 0, 10, affinity=False)
        self.assertEqual(3, len(set(apart)))
        self.assertIsNone(capacity.plan(hosts, {}, need, 4, 0, 10,
                                        affinity=False))

    def test_whole_hosts(self):
        tl = {'n0': timeline_mod.Timeline([alloc(1, 0, 50, 1, node='n0')])}
        hosts = self.hosts(3)
        self.assertEqual(['n1', 'n2'], capacity.plan_hosts(hosts, tl, 10, 20,
                                                           1, 2))
        self.assertEqual(['n0', 'n1', 'n2'], capacity.plan_hosts(
            hosts, tl, 50, 60, 1, 5))
        self.assertIsNone(capacity.plan_hosts(hosts, tl, 10, 20, 3, 3))
        busy = [capacity.Host('n9', R(4, 8192, 100), base=R(1, 0, 0))]
        self.assertIsNone(capacity.plan_hosts(busy, {}, 0, 10, 1, 1))

    @settings(max_examples=200, deadline=None)
    @given(allocations, intervals, st.integers(1, 4), st.integers(1, 3))
    def test_plan_never_overbooks(self, rows, query, vcpus, count):
        rnd = random.Random(len(rows))
        allocs = [alloc(i, s, e, v, node='n%d' % rnd.randrange(3))
                  for i, ((s, e), v, _) in enumerate(rows)]
        hosts = [capacity.Host('n%d' % i, R(8, 1e9, 1e9)) for i in range(3)]
        timelines = {}
        for a in allocs:
            timelines.setdefault(a.node, timeline_mod.Timeline()).add(a)
        need = R(vcpus, 0, 0)
        chosen = capacity.plan(hosts, timelines, need, count, *query)
        for h in hosts:
            existing = [a for a in allocs if a.node == h.node]
            planned = [alloc(1000 + k, *query, vcpus, node=h.node)
                       for k, n in enumerate(chosen or []) if n == h.node]
            if planned:
                # The generated ledger may already be over on some node;
                # what the plan adds must never be.
                peak = brute_peak(existing + planned, *query)
                self.assertLessEqual(peak.vcpus, 8)
        if chosen is None:
            # Refused only if some slot really did not fit.
            total_room = sum(max(0, (8 - brute_peak(
                [a for a in allocs if a.node == h.node], *query).vcpus)
                // vcpus) for h in hosts)
            self.assertLess(total_room, count)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 16), st.integers(0, 32768),
                              st.integers(0, 500)), min_size=1, max_size=6),
           st.tuples(st.integers(0, 4), st.integers(0, 4096),
                     st.integers(0, 40)).filter(any),
           st.integers(1, 6))
    def test_each_slot_goes_where_most_room_is_left(self, bases, need,
                                                    count):
        hosts = [capacity.Host('n%d' % i, R(16, 32768, 500), base=R(*b))
                 for i, b in enumerate(bases)]
        need = R(*need)
        # Greedy by hand: the node that holds the most more slots of
        # `need`, then the last name, one slot at a time.
        room = {h.node: h.capacity - h.base for h in hosts}
        expected = []
        for _ in range(count):
            fits = [n for n, r in room.items() if need.fits_in(r)]
            if not fits:
                expected = None
                break
            best = max(fits, key=lambda n: (capacity._score(room[n], need),
                                            n))
            room[best] = room[best] - need
            expected.append(best)
        self.assertEqual(expected, capacity.plan(hosts, {}, need, count, 0,
                                                 10))


class HeldUntilTest(unittest.TestCase):
    """Until when a node holds the servers that yield to the ledger."""

    def test_newest_yields_first(self):
        host = capacity.Host('n1', R(4, 0, 0), R(1, 0, 0))
        tl = timeline_mod.Timeline([alloc(1, 50, 60, 2), alloc(2, 80, 90, 3)])
        # 1 ordinary + 1 + 1: the 3-vCPU slot at 80 leaves room for none
        # of them; the 2-vCPU one at 50 for the first only.
        self.assertEqual([80, 50], capacity.held_until(
            host, tl, [R(1, 0, 0), R(1, 0, 0)], 0))
        self.assertEqual([capacity.FOREVER], capacity.held_until(
            host, None, [R(3, 0, 0)], 0))
        # A slot under way, or no room at all: now.
        self.assertEqual([55], capacity.held_until(
            host, tl, [R(2, 0, 0)], 55))
        self.assertEqual([7], capacity.held_until(
            host, None, [R(4, 0, 0)], 7))

    @settings(max_examples=300, deadline=None)
    @given(allocations, st.lists(st.integers(0, 4), min_size=1,
                                 max_size=4), st.integers(0, 4),
           st.integers(-10, 140))
    def test_matches_brute_force(self, rows, uses, base, now):
        allocs = [alloc(i, s, e, v, ram=m)
                  for i, ((s, e), v, m) in enumerate(rows)]
        tl = timeline_mod.Timeline(allocs)
        host = capacity.Host('n1', R(8, 4096, 0), R(base, 0, 0))
        found = capacity.held_until(host, tl, [R(u, 0, 0) for u in uses],
                                    now)
        instants = sorted({now} | {a.start for a in allocs
                                   if a.start > now})
        for k, until in enumerate(found):
            held = R(base + sum(uses[:k + 1]), 0, 0)

            def fits(t):
                return (brute_peak(allocs, t, t + 1e-6) + held).fits_in(
                    host.capacity)
            first_over = next((t for t in instants if not fits(t)),
                              capacity.FOREVER)
            self.assertEqual(first_over, until)

    def test_used_share(self):
        self.assertEqual(0.5, capacity.used_share(4, 2))
        self.assertEqual(1.0, capacity.used_share(4, 6))
        self.assertEqual(1.0, capacity.used_share(0, 0))
