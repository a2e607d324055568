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

"""The ledger copy under native threads: a refresh publishes a new view and
never changes one that readers may hold."""

import random
import sys
import threading
import time
import types

import testtools

from nova_reservation.capacity import epoch
from nova_reservation.db import holds as db_holds
from nova_reservation.ledger import memory as ledger_mod

NODES = ('n1', 'n2', 'n3', 'n4')
RESERVATIONS = ('r1', 'r2', 'r3')


def slot_row(slot_id: int, node: str, reservation: str = 'r1',
             instance=None, deleted: bool = False, start: float = 1000,
             end: float = 5000):
    return types.SimpleNamespace(
        id=slot_id, reservation_id=reservation, node=node,
        start_at=epoch.from_epoch(start),
        end_at=epoch.from_epoch(end), vcpus=1, memory_mb=512,
        disk_gb=1, instance_uuid=instance, deleted=deleted, extras=None)


def reservation_row(rid: str):
    return types.SimpleNamespace(id=rid, lease_id='lease-' + rid,
                                 project_id='p', resource_type='server',
                                 deleted=False, shared_with=None)


class FakeStore:
    """The store's ledger changes over rows that tests hand in, one
    generation per call of `write`.
    """

    def __init__(self) -> None:
        self.generation = 0
        self.pending: list = []
        self.lock = threading.Lock()

    def write(self, *rows) -> None:
        with self.lock:
            self.generation += 1
            self.pending.append((self.generation, list(rows)))

    def changes(self, epoch, since: int) -> tuple:
        with self.lock:
            if epoch != 'epoch':
                since = -1   # Everything, as the store does.
            rows = [r for gen, batch in self.pending if gen > since
                    for r in batch]
            reservations = ([reservation_row(rid) for rid in RESERVATIONS]
                            if since < 0 else [])
            return 'epoch', self.generation, reservations, rows


class LedgerViewTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.store = FakeStore()
        self.ledger = ledger_mod.Ledger(self.store.changes)

    def test_a_published_view_never_changes(self):
        self.store.write(slot_row(1, 'n1'), slot_row(2, 'n2', 'r2'),
                         slot_row(3, 'n3', 'r3', instance='vm3'))
        self.assertEqual(1, self.ledger.refresh())
        first = self.ledger.view
        peak_n1 = first.timelines['n1'].peak(0, 10000)

        # Slot 1 goes, slot 2 moves onto n1, a bound slot comes on n1.
        self.store.write(slot_row(1, 'n1', deleted=True),
                         slot_row(2, 'n1', 'r2'),
                         slot_row(4, 'n1', 'r1', instance='vm4'))
        self.assertEqual(2, self.ledger.refresh())

        self.assertEqual(1, first.generation)
        self.assertEqual({1, 2, 3}, set(first.by_id))
        self.assertEqual([1], [s.id for s in first.slots('r1')])
        self.assertEqual(['n2'], [s.node for s in first.slots('r2')])
        self.assertEqual({'n1', 'n2', 'n3'}, set(first.timelines))
        self.assertEqual(1, len(first.timelines['n1']))
        self.assertEqual(peak_n1, first.timelines['n1'].peak(0, 10000))
        self.assertEqual({'vm3'}, set(first.bound))

        now = self.ledger.view
        self.assertEqual(2, now.generation)
        self.assertEqual({2, 3, 4}, set(now.by_id))
        self.assertEqual([4], [s.id for s in now.slots('r1')])
        self.assertEqual({'n1', 'n3'}, set(now.timelines))
        self.assertEqual(2, len(now.timelines['n1']))
        self.assertEqual({'vm3', 'vm4'}, set(now.bound))
        # What did not change is shared, not copied.
        self.assertIs(first.timelines['n3'], now.timelines['n3'])
        # The ledger's attributes are the current view's.
        self.assertIs(now.timelines, self.ledger.timelines)
        self.assertEqual(now.slots('r2'), self.ledger.slots('r2'))

    def test_nothing_new_keeps_the_view(self):
        self.store.write(slot_row(1, 'n1'))
        self.ledger.refresh()
        view = self.ledger.view
        view.peaks_after(0)
        self.ledger.refresh()
        again = self.ledger.view
        # Only the time of the read moves; the rest, and what was worked
        # out from it, is the same.
        self.assertLess(view.read_at, again.read_at)
        self.assertIs(view.timelines, again.timelines)
        self.assertIs(view.nodes_by_reservation, again.nodes_by_reservation)
        self.assertIs(view.peaks_after(0), again.peaks_after(0))

    def test_a_held_slot_counts_on_its_node_and_is_no_reservation_s(self):
        hold = db_holds.hold_id(1000)
        self.store.write(slot_row(1, 'n1'), slot_row(2, 'n1', instance=hold))
        self.ledger.refresh()
        view = self.ledger.view
        self.assertEqual(2, view.timelines['n1'].peak(0, 10000).vcpus)
        self.assertEqual([1], [s.id for s in view.slots('r1')])
        self.assertEqual({1}, set(view.by_id))
        self.assertEqual({}, view.bound)
        # The change is written: the hold goes, the slot it covered comes.
        self.store.write(slot_row(2, 'n1', instance=hold, deleted=True),
                         slot_row(3, 'n1'))
        self.ledger.refresh()
        view = self.ledger.view
        self.assertEqual(2, view.timelines['n1'].peak(0, 10000).vcpus)
        self.assertEqual([1, 3], [s.id for s in view.slots('r1')])
        self.assertEqual(1000, db_holds.hold_made(hold))

    def test_peaks_after_are_each_node_s_until_a_usage_changes(self):
        self.store.write(slot_row(1, 'n1', start=1000, end=5000),
                         slot_row(2, 'n1', 'r2', start=2000, end=3000),
                         slot_row(3, 'n2', 'r3', start=0, end=1500))
        self.ledger.refresh()
        view = self.ledger.view
        for t in (0, 999, 1000, 1499, 1500, 2500, 3000, 4999, 5000, 9000):
            expected = {node: tuple(timeline.peak_after(t))
                        for node, timeline in view.timelines.items()
                        if any(timeline.peak_after(t))}
            self.assertEqual(expected, view.peaks_after(t), t)
        # Asked again within one stretch (no usage changes in [1500,
        # 2000)), the answer is the one worked out before.
        first = view.peaks_after(1500)
        self.assertIs(first, view.peaks_after(1999))
        self.assertIsNot(first, view.peaks_after(2000))
        self.assertEqual({'n1': (2, 1024, 2)}, view.peaks_after(2000))

    def test_current_reads_the_store_only_when_older_than_asked(self):
        reads = []

        def changes(epoch, since):
            reads.append(since)
            return self.store.changes(epoch, since)
        ledger = ledger_mod.Ledger(changes)
        ledger.current(60)
        self.assertEqual(1, len(reads))   # never read: read now
        for _ in range(100):
            ledger.current(60)
        self.assertEqual(1, len(reads))
        self.store.write(slot_row(1, 'n1'))
        # Older than 0 s: read again, and the change is there.
        self.assertEqual({'n1'}, set(ledger.current(0).timelines))
        self.assertEqual(2, len(reads))

    def test_keep_fresh_reads_in_a_thread_of_its_own(self):
        self.ledger.keep_fresh(0.01)
        self.ledger.keep_fresh(0.01)   # one thread per copy
        self.store.write(slot_row(1, 'n1'))
        deadline = time.time() + 10
        while time.time() < deadline and not self.ledger.view.timelines:
            time.sleep(0.01)
        self.assertEqual({'n1'}, set(self.ledger.view.timelines))
        refreshers = [t for t in threading.enumerate()
                      if t.name == 'ledger-refresh']
        self.assertEqual(1, len(refreshers))
        self.ledger.close()
        self.assertFalse(refreshers[0].is_alive())
        # Closed, it keeps fresh again when asked to.
        self.ledger.keep_fresh(0.01)
        self.store.write(slot_row(2, 'n2'))
        while (time.time() < deadline and
               'n2' not in self.ledger.view.timelines):
            time.sleep(0.01)
        self.assertEqual({'n1', 'n2'}, set(self.ledger.view.timelines))
        self.ledger.close()

    def test_a_refresh_that_fails_half_way_is_made_again_whole(self):
        self.store.write(slot_row(1, 'n1'), slot_row(2, 'n2'))
        self.ledger.refresh()
        before = self.ledger.view
        broken = slot_row(4, 'n1')
        broken.end_at = None
        self.store.write(slot_row(1, 'n1', deleted=True), slot_row(3, 'n3'),
                         broken)
        self.assertRaises(AttributeError, self.ledger.refresh)
        # Requests still read the last whole view.
        self.assertEqual({1, 2}, set(self.ledger.by_id))
        self.assertIs(before.timelines, self.ledger.timelines)
        broken.end_at = epoch.from_epoch(5000)
        self.assertEqual(2, self.ledger.refresh())
        self.assertEqual({2, 3, 4}, set(self.ledger.by_id))
        self.assertEqual({'n1', 'n2', 'n3'}, set(self.ledger.timelines))
        self.assertEqual([4], [s.id for s in self.ledger.slots('r1')
                               if s.node == 'n1'])

    def test_readers_on_other_threads_see_one_generation_whole(self):
        # Threads switch as often as they can: a reader meets a refresh in
        # the middle of anything it reads.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        self.addCleanup(sys.setswitchinterval, interval)
        rand = random.Random(42)
        deadline = time.monotonic() + 1.0
        errors: list = []

        def churn() -> None:
            while time.monotonic() < deadline:
                self.store.write(*(
                    slot_row(rand.randrange(100), rand.choice(NODES),
                             rand.choice(RESERVATIONS),
                             deleted=rand.random() < 0.4,
                             start=1000 + rand.randrange(100))
                    for _ in range(10)))
                self.ledger.refresh()

        def read(attributes: bool) -> None:
            while time.monotonic() < deadline:
                try:
                    if attributes:
                        # As the planner reads the ledger.
                        for node, timeline in self.ledger.timelines.items():
                            timeline.peak(1050, 4000)
                            timeline.peak_after(1020)
                        for rid in RESERVATIONS:
                            self.ledger.slots(rid)
                        continue
                    # As the filter does: one view for a whole request.
                    view = self.ledger.view
                    for rid in RESERVATIONS:
                        for slot in view.slots(rid):
                            self.assertIn(slot.id,
                                          view.timelines[slot.node])
                except Exception as e:
                    errors.append(e)
                    return

        threads = [threading.Thread(target=churn)] + [
            threading.Thread(target=read, args=(attributes,))
            for attributes in (True, True, False)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        self.assertGreater(self.ledger.view.generation, 10)
