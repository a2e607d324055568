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

"""The compact ledger against a plain reference: a node's timeline and a
copy's refreshes answer as a list of slots and a dict of rows do, and
hold no Python object per slot.
"""

import gc
import tracemalloc

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.db import changes as db_changes
from nova_reservation.db import holds as db_holds
from nova_reservation.db import ledger as db_ledger
from nova_reservation.ledger import memory as ledger_mod

# A few sizes, as flavors give; a fraction, and a level past 32 bits,
# make a node's levels floats.
SIZES = [capacity.Resources(1, 512, 10), capacity.Resources(2, 4096, 40),
         capacity.Resources(0, 0, 0), capacity.Resources(0.5, 256, 0),
         capacity.Resources(1, 2 ** 31 - 100, 1)]
# What slots hold beyond those: a class of the root provider, one of a
# child, a fraction.
GPU, VGPU = ('', 'CUSTOM_GPU'), ('c1', 'VGPU')
EXTRAS = [capacity.NO_EXTRAS, capacity.extras({GPU: 1}),
          capacity.extras({GPU: 2, VGPU: 1}), capacity.extras({VGPU: 0.5})]
NODES = ('n1', 'n2', 'n3')
RESERVATIONS = ('r1', 'r2', 'r3')
HOLD = db_holds.hold_id(1000)


def usage(slots, t: float) -> tuple:
    return tuple(sum(s.resources[k] for s in slots
                     if s.start <= t < s.end) for k in range(3))


def instants(slots) -> list:
    return sorted({s.start for s in slots} | {s.end for s in slots})


def ref_peak(slots, start: float, end: float) -> tuple:
    if end <= start:
        return (0, 0, 0)
    found = [usage(slots, t) for t in [start] + [
        t for t in instants(slots) if start < t < end]]
    return tuple(max(u[k] for u in found) for k in range(3))


def ref_peak_after(slots, t: float) -> tuple:
    found = [usage(slots, u) for u in [t] + [
        u for u in instants(slots) if u > t]]
    return tuple(max(u[k] for u in found) for k in range(3))


def ref_earliest_fit(slots, start, duration, room, horizon,
                     extra_room=None):
    extra_room = extra_room or {}
    if min(room) < 0 or min(extra_room.values(), default=0) < 0 or (
            start > horizon):
        return None
    # Usage only drops where a slot ends: the only starts worth trying.
    for t in [start] + sorted({s.end for s in slots
                               if s.end > s.start and start < s.end}):
        if t > horizon:
            return None
        peak = ref_peak(slots, t, t + duration)
        extra = ref_peak_extras(slots, t, t + duration)
        if all(p <= r for p, r in zip(peak, room)) and all(
                extra.get(key, 0) <= n for key, n in extra_room.items()):
            return t
    return None


def extra_usage(slots, t: float) -> dict:
    found: dict = {}
    for s in slots:
        if s.start <= t < s.end:
            for key, n in s.extras:
                found[key] = found.get(key, 0) + n
    return found


def ref_peak_extras(slots, start: float, end: float) -> dict:
    if end <= start:
        return {}
    found: dict = {}
    for t in [start] + [t for t in instants(slots) if start < t < end]:
        for key, n in extra_usage(slots, t).items():
            found[key] = max(found.get(key, 0), n)
    return {key: n for key, n in found.items() if n}


def ref_next_drop(slots, t: float) -> float:
    return min((s.end for s in slots if s.end > s.start and s.end >= t),
               default=capacity.FOREVER)


def ref_next_rise(slots, t: float, peak) -> float:
    for u in instants(slots):
        if u >= t and any(a > b for a, b in zip(usage(slots, u), peak)):
            return u
    return capacity.FOREVER


def ref_levels(slots, start: float, end: float) -> list:
    if end <= start:
        return [(start, (0, 0, 0))]
    found = [(start, usage(slots, start))]
    for t in instants(slots):
        if start < t < end and usage(slots, t) != found[-1][1]:
            found.append((t, usage(slots, t)))
    return found


def merged(levels: list) -> list:
    """Levels without the steps at which the usage stays the same."""
    found: list = []
    for t, use in levels:
        if not found or tuple(use) != found[-1][1]:
            found.append((t, tuple(use)))
    return found


def fields(slot: capacity.Slot) -> tuple:
    return (slot.id, slot.reservation_id, slot.node, slot.start, slot.end,
            tuple(slot.resources), slot.instance_uuid, slot.extras)


slot_strategy = st.builds(
    lambda i, r, start, length, size, uuid, extra: capacity.Slot(
        i, r, 'n1', float(start), float(start + length), SIZES[size],
        uuid, EXTRAS[extra]),
    st.integers(1, 30), st.sampled_from(RESERVATIONS), st.integers(0, 100),
    st.integers(-2, 60), st.integers(0, len(SIZES) - 1),
    st.sampled_from([None, 'vm-1', 'vm-2']),
    # Most slots hold nothing beyond `Resources`, as in a cloud.
    st.sampled_from([0, 0, 1, 2, 3]))
query_strategy = st.tuples(st.integers(-5, 170), st.integers(0, 120))
operations = st.lists(st.one_of(
    st.tuples(st.just('add'), slot_strategy),
    st.tuples(st.just('remove'), st.integers(1, 30)),
    st.tuples(st.just('copy'), st.just(None)),
    st.tuples(st.just('query'), query_strategy)), max_size=25)


class TimelineAgainstReferenceTest(testtools.TestCase):

    def check(self, timeline, slots: dict, start: int, length: int):
        live = list(slots.values())
        end = start + length
        self.assertEqual(len(live), len(timeline))
        for slot in live:
            self.assertIn(slot.id, timeline)
        self.assertEqual(ref_peak(live, start, end),
                         tuple(timeline.peak(start, end)))
        # A span of every step: the block maxima.
        self.assertEqual(ref_peak(live, -10, 10 ** 6),
                         tuple(timeline.peak(-10, 10 ** 6)))
        self.assertEqual(ref_peak_after(live, start),
                         tuple(timeline.peak_after(start)))
        some = sorted(slots)[:2]
        self.assertEqual(
            ref_peak([s for s in live if s.id not in some], start, end),
            tuple(timeline.peak(start, end, exclude=some)))
        room = (3, 8192, 80)
        self.assertEqual(
            ref_earliest_fit(live, start, length or 1, room, start + 200),
            timeline.earliest_fit(start, length or 1,
                                  capacity.Resources(*room), start + 200))
        self.assertEqual(ref_peak_extras(live, start, end),
                         timeline.peak_extras(start, end))
        self.assertEqual(ref_peak_extras(live, -10, 10 ** 6),
                         timeline.peak_extras(-10, 10 ** 6))
        self.assertEqual(
            ref_peak_extras([s for s in live if s.id not in some], start,
                            end),
            timeline.peak_extras(start, end, exclude=some))
        self.assertEqual(ref_peak_extras(live, start, 10 ** 7),
                         timeline.peak_extras(start, capacity.FOREVER))
        # Of the classes asked about only.
        self.assertEqual(
            {k: n for k, n in ref_peak_extras(
                [s for s in live if s.id not in some], start, end).items()
             if k == GPU},
            timeline.peak_extras(start, end, some, frozenset([GPU])))
        for extra_room in ({GPU: 2}, {GPU: 3, VGPU: 1}, {VGPU: 0},
                           {('c2', 'VGPU'): 0}):
            self.assertEqual(
                ref_earliest_fit(live, start, length or 1, room,
                                 start + 200, extra_room),
                timeline.earliest_fit(start, length or 1,
                                      capacity.Resources(*room),
                                      start + 200, extra_room))
        self.assertEqual(ref_next_drop(live, start),
                         timeline.next_drop(start))
        limit = tuple(u + 1 for u in usage(live, start))
        self.assertEqual(ref_next_rise(live, start, limit),
                         timeline.next_rise(start, capacity.Resources(
                             *limit)))
        self.assertEqual(ref_levels(live, start, end),
                         merged(timeline.levels(start, end)))
        self.assertEqual(
            sorted((fields(s) for s in live
                    if s.start < end and s.end > start and s.end > s.start),
                   key=lambda f: (f[3], f[0])),
            [fields(s) for s in timeline.meeting(start, end)])
        self.assertEqual(sorted(fields(s) for s in live),
                         [fields(s) for s in timeline.slots()])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(slot_strategy, max_size=12), operations,
           query_strategy)
    def test_a_timeline_answers_as_its_slots_do(self, first, steps, last):
        slots = {s.id: s for s in first}
        timeline = timeline_mod.Timeline(slots.values())
        for op, arg in steps:
            if op == 'add':
                timeline.add(arg)
                slots[arg.id] = arg
            elif op == 'remove':
                removed = timeline.remove(arg)
                old = slots.pop(arg, None)
                self.assertEqual(old and fields(old),
                                 removed and fields(removed))
            elif op == 'copy':
                # The copy changes; the original does not.
                before = [fields(s) for s in timeline.slots()]
                peak = timeline.peak(-10, 10 ** 6)
                other = timeline.copy()
                other.add(capacity.Slot(99, 'r9', 'n1', 0.0, 500.0,
                                        SIZES[1]))
                other.remove(min(slots, default=0))
                self.assertEqual(before,
                                 [fields(s) for s in timeline.slots()])
                self.assertEqual(peak, timeline.peak(-10, 10 ** 6))
                timeline = timeline.copy()
            else:
                self.check(timeline, slots, *arg)
        self.check(timeline, slots, *last)
        # Built from scratch, it answers the same.
        self.check(timeline_mod.Timeline(slots.values()), slots, *last)

    def test_a_long_span_reads_the_block_maxima(self):
        slots = [capacity.Slot(i, 'r1', 'n1', float(i), float(i + 7),
                               SIZES[i % 2]) for i in range(1, 1000)]
        timeline = timeline_mod.Timeline(slots)
        for start, end in ((0, 2000), (100, 900), (1, 500), (300, 700)):
            self.assertEqual(ref_peak(slots, start, end),
                             tuple(timeline.peak(start, end)))


def row(slot: capacity.Slot, node: str, deleted: bool = False):
    return db_changes.SlotRow(
        slot.id, slot.reservation_id, node,
        epoch.from_epoch(1e9 + slot.start),
        epoch.from_epoch(1e9 + slot.end), *slot.resources,
        slot.instance_uuid, deleted, db_ledger.extras_column(slot.extras))


class Store:
    """The rows of each generation, as the store gives them."""

    def __init__(self) -> None:
        self.batches: list = []

    def changes(self, epoch, since: int) -> db_changes.Changes:
        since = since if epoch == 'epoch' else -1
        reservations = [db_changes.ReservationRow(
            r, 'lease', 'p', 'server', False, None)
            for r in RESERVATIONS] if since < 0 else []
        return db_changes.Changes('epoch', len(self.batches), reservations, [
            r for gen, batch in enumerate(self.batches, 1) if gen > since
            for r in batch])


def summary(view: ledger_mod.View) -> tuple:
    """Everything a reader sees of a view, as plain values."""
    return (
        {n: sorted(fields(s) for s in tl.slots())
         for n, tl in view.timelines.items()},
        {n: tuple(tl.peak(-10, 10 ** 6)) for n, tl in view.timelines.items()},
        {n: tl.peak_extras(-10, 10 ** 6)
         for n, tl in view.timelines.items()},
        {r: [fields(s) for s in view.slots(r)] for r in RESERVATIONS},
        sorted(view.by_id), dict(view.bound))


row_strategy = st.tuples(
    slot_strategy.map(lambda s: capacity.Slot(
        s.id % 12 + 1, s.reservation_id, '', s.start, s.end,
        SIZES[s.id % 3],
        # A server holds one slot.
        s.instance_uuid and (HOLD if s.id % 2 else 'vm-%d' % s.id),
        s.extras)),
    st.sampled_from(NODES), st.booleans())


class RefreshAgainstReferenceTest(testtools.TestCase):

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.lists(row_strategy, max_size=8), max_size=8))
    def test_refreshes_apply_inserts_updates_deletes_and_rebinds(
            self, batches):
        store = Store()
        ledger = ledger_mod.Ledger(store.changes)
        rows: dict = {}
        published: list = []
        for batch in batches:
            store.batches.append([row(s, node, gone)
                                  for s, node, gone in batch])
            for s, node, gone in batch:
                if gone:
                    rows.pop(s.id, None)
                else:
                    rows[s.id] = capacity.Slot(
                        s.id, s.reservation_id, node, 1e9 + s.start,
                        1e9 + s.end, s.resources, s.instance_uuid,
                        s.extras)
            ledger.refresh()
            view = ledger.view
            live = list(rows.values())
            held = {s.id for s in live if s.instance_uuid == HOLD}
            self.assertEqual(
                {n: sorted(fields(s) for s in live if s.node == n)
                 for n in NODES if any(s.node == n for s in live)},
                summary(view)[0])
            for node, timeline in view.timelines.items():
                mine = [s for s in live if s.node == node]
                self.assertEqual(ref_peak(mine, 0, 2e9),
                                 tuple(timeline.peak(0, 2e9)))
                self.assertEqual(ref_peak_extras(mine, 0, 2e9),
                                 timeline.peak_extras(0, 2e9))
            for rid in RESERVATIONS:
                self.assertEqual(
                    sorted(fields(s) for s in live
                           if s.reservation_id == rid and s.id not in held),
                    [fields(s) for s in view.slots(rid)])
            self.assertEqual(sorted(set(rows) - held), sorted(view.by_id))
            self.assertEqual(
                {s.instance_uuid: tuple(s.resources) for s in live
                 if s.instance_uuid and s.id not in held},
                {k: tuple(v) for k, v in view.bound.items()})
            published.append((view, summary(view)))
        # A published view never changed.
        for view, seen in published:
            self.assertEqual(seen, summary(view))


class CompactTest(testtools.TestCase):

    def test_no_python_object_per_slot(self):
        # A hundred slots a node, as at 1,000 nodes and 100,000 slots
        # (tracemalloc makes each allocation several times dearer).
        count, nodes = 20_000, 200
        slots = [capacity.Slot(
            i, 'r%05d' % (i // 10), '', float(i % 5000),
            float(i % 5000 + 300), SIZES[i % 2]) for i in range(1, count + 1)]
        rows = [row(s, 'node%03d' % (s.id % nodes)) for s in slots]
        ledger = ledger_mod.Ledger(lambda epoch, since: db_changes.Changes(
            'epoch', 1, [], rows))
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            ledger.refresh()
            for timeline in ledger.timelines.values():
                timeline.peak(0, 1)
                timeline.peak_after(0)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        self.assertEqual(count, sum(map(len, ledger.timelines.values())))
        # As Python objects (a Slot, its Resources, floats, strings and
        # dict entries) a slot took about 700 bytes; 94 while every id,
        # number and level took 4 or 8 bytes (73 in their narrowest type).
        self.assertLess(grown / count, 85, grown)

    def test_numbers_of_every_width_are_kept(self):
        # Slot ids past 8, 16 and 32 bits, more sizes and extras than a
        # byte numbers, more nodes than 16 bits do: each column widens.
        ids = [1, 2, 300, 70_000, 2 ** 31 + 5, 2 ** 40]
        ids += range(10 ** 6, 10 ** 6 + 200)
        slots = [capacity.Slot(
            slot_id, 'r%d' % (n % 7), '', float(n), float(n + 50),
            capacity.Resources(n % 180 + 1, 512, 10), None,
            capacity.extras({GPU: n % 150 + 1}) if n % 3 else
            capacity.NO_EXTRAS) for n, slot_id in enumerate(ids)]
        nodes = ['node%05d' % n for n in range(40_000)]

        def node_of(slot):
            return nodes[slot.id % len(nodes)]
        batches = [[row(s, node_of(s)) for s in slots],
                   [row(s, node_of(s), deleted=True) for s in slots[::4]]]
        ledger = ledger_mod.Ledger(lambda epoch, since: db_changes.Changes(
            'epoch', since + 1, [], batches.pop(0) if batches else []))

        def expected(kept):
            return sorted((s.id, s.reservation_id, node_of(s), 1e9 + s.start,
                           1e9 + s.end, tuple(s.resources), None, s.extras)
                          for s in kept)
        ledger.refresh()
        self.assertEqual(expected(slots), sorted(
            fields(s) for s in ledger.view.by_id.values()))
        ledger.refresh()
        self.assertEqual(expected(slots[1::4] + slots[2::4] + slots[3::4]),
                         sorted(fields(s)
                                for s in ledger.view.by_id.values()))
