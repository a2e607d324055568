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

"""Who may use a reservation, which open one a boot takes first, the hints
of a boot into one, the share commands' pure parts, and what a split
moves."""

import datetime
import unittest

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from osc_lib import exceptions

from nova_reservation.api import validation as api_validation
from nova_reservation.capacity import epoch
from nova_reservation.cli import shares as cli
from nova_reservation.db import changes as db_changes
from nova_reservation.db import splits as db_splits
from nova_reservation import exception
from nova_reservation.hooks import params
from nova_reservation.lease import shares
from nova_reservation.lease import splits as lease_splits
from nova_reservation.ledger import memory as ledger_mod

T0 = datetime.datetime(2026, 12, 1, 10, 0)
HOUR = datetime.timedelta(hours=1)
RID = '0b8f7c4e-9d6a-4a52-8e3c-2f1d5b7a9c01'


def candidate(rid, ends_in, own=True, created=0):
    return shares.Candidate(rid, T0 + ends_in * HOUR,
                            T0 - datetime.timedelta(minutes=created), own)


class SharesTest(unittest.TestCase):

    def test_column_round_trip_sorted_and_empty_as_none(self):
        self.assertIsNone(shares.column([]))
        self.assertEqual('["a", "b"]', shares.column(['b', 'a', 'b']))
        self.assertEqual(frozenset({'a', 'b'}),
                         shares.projects(shares.column(['b', 'a'])))
        self.assertEqual(frozenset(), shares.projects(None))

    def test_may_use(self):
        self.assertTrue(shares.may_use('owner', frozenset(), 'owner'))
        self.assertTrue(shares.may_use('owner', frozenset({'p'}), 'p'))
        self.assertFalse(shares.may_use('owner', frozenset({'p'}), 'q'))
        # Not a substring match: 'p' is not 'pp'.
        self.assertFalse(shares.may_use('owner', frozenset({'pp'}), 'p'))

    def test_order_earliest_end_first_then_own_then_oldest(self):
        found = shares.order([
            candidate('late', 3), candidate('early-shared', 1, own=False),
            candidate('early-own-new', 1, created=1),
            candidate('early-own-old', 1, created=5)])
        self.assertEqual(['early-own-old', 'early-own-new', 'early-shared',
                          'late'], [c.reservation_id for c in found])

    def test_order_is_total(self):
        # Ties on everything else are broken by id, whatever the input order.
        a, b = candidate('a', 1), candidate('b', 1)
        self.assertEqual(shares.order([a, b]), shares.order([b, a]))

    def test_matching_default(self):
        self.assertEqual('targeted', shares.matching(None))
        self.assertEqual('open', shares.matching('open'))


class HintsTest(unittest.TestCase):

    def test_reservation_none(self):
        self.assertEqual('none', params.reservation_hint(
            {'reservation': 'None'}))
        self.assertEqual(RID, params.reservation_hint({'reservation': RID}))
        with self.assertRaises(exception.InvalidParam):
            params.reservation_hint({'reservation': 'nothing'})

    def test_fallback(self):
        self.assertFalse(params.fallback_hint({}, RID))
        self.assertTrue(params.fallback_hint(
            {'reservation_fallback': 'any'}, RID))
        self.assertTrue(params.fallback_hint(
            {'reservation_fallback': ['any']}, RID))
        for hints, rid, text in (
                ({'reservation_fallback': 'ANY'}, RID, 'must be any'),
                ({'reservation_fallback': 1}, RID, 'must be any'),
                ({'reservation_fallback': None}, RID, 'must not be null'),
                ({'reservation_fallback': ['any', 'any']}, RID, 'given 2'),
                ({'reservation_fallback': 'any'}, None, 'is given with'),
                ({'reservation_fallback': 'any'}, 'none', 'is given with')):
            with self.assertRaises(exception.InvalidParam) as e:
                params.fallback_hint(hints, rid)
            self.assertTrue(str(e.exception).startswith(
                'reservation_fallback:'), e.exception)
            self.assertIn(text, str(e.exception))


class ValidationTest(unittest.TestCase):

    def test_shared_with_never_the_owner(self):
        self.assertEqual(('a', 'b'), api_validation.shared_with(
            'f', ['b', 'a'], 'owner'))
        with self.assertRaises(exception.InvalidParam) as e:
            api_validation.shared_with('f', ['owner'], 'owner')
        self.assertIn("names the lease's own project", str(e.exception))

    def test_open_matching_only_for_slots(self):
        for kind in ('flavor:instance', 'virtual:instance'):
            self.assertEqual({'matching': 'open'}, api_validation.sharing(
                'r.', kind, {'matching': 'open'}, 'owner'))
        self.assertEqual({'matching': 'targeted'}, api_validation.sharing(
            'r.', 'physical:host', {'matching': 'targeted'}, 'owner'))
        with self.assertRaises(exception.InvalidParam) as e:
            api_validation.sharing('r.', 'physical:host',
                                   {'matching': 'open'}, 'owner')
        self.assertTrue(str(e.exception).startswith('r.matching: open is'))


class CommandsTest(unittest.TestCase):
    LEASE = {'id': 'L', 'name': 'team', 'reservations': [
        {'id': 'R1', 'resource_type': 'flavor:instance',
         'shared_with': ['p1'], 'matching': 'targeted',
         'slots_by_project': {'p1': 1}},
        {'id': 'F', 'resource_type': 'virtual:floatingip'}]}

    def test_chosen(self):
        self.assertEqual('R1', cli.chosen(self.LEASE, None)['id'])
        self.assertEqual('R1', cli.chosen(self.LEASE, 'R1')['id'])
        # A floating IP reservation is not shared.
        self.assertRaises(exceptions.CommandError, cli.chosen, self.LEASE,
                          'F')
        two = dict(self.LEASE, reservations=self.LEASE['reservations'] * 2)
        self.assertRaises(exceptions.CommandError, cli.chosen, two, None)

    def test_change_adds_and_removes(self):
        res = self.LEASE['reservations'][0]
        self.assertEqual({'reservations': [
            {'id': 'R1', 'shared_with': ['p1', 'p2']}]},
            cli.change(res, add=['p2']))
        self.assertEqual({'reservations': [
            {'id': 'R1', 'shared_with': [], 'matching': 'open'}]},
            cli.change(res, remove=['p1'], matching='open'))

    def test_found_by_id_then_name(self):
        leases = [{'id': 'a', 'name': 'b'}, {'id': 'b', 'name': 'x'},
                  {'id': 'c', 'name': 'x'}]
        self.assertEqual('b', cli.found(leases, 'b')['id'])
        self.assertEqual('a', cli.found(leases, 'a')['id'])
        self.assertRaises(exceptions.CommandError, cli.found, leases, 'x')
        self.assertRaises(exceptions.CommandError, cli.found, leases, 'z')

    def test_rows(self):
        self.assertEqual([('R1', 'flavor:instance', 'p1', 'targeted',
                           '{"p1": 1}')], cli.rows(self.LEASE))


# ------------------------------------------------------------- splits

SLOT = st.tuples(st.sampled_from(['n1', 'n2', 'n3']),
                 st.integers(0, 2), st.sampled_from([None, 'vm', 'claim']))


def _rows(slots: list, rid_of: dict) -> list:
    """The slot rows of `slots` ((node, size, holder) each), slot i in
    reservation rid_of.get(i, 'old').
    """
    sizes = [(1, 512, 1), (2, 1024, 0), (4, 4096, 10)]
    found = []
    for i, (node, size, holder) in enumerate(slots):
        uuid = holder and ('boot-%d' % i if holder == 'claim'
                           else 'vm-%d' % i)
        found.append(db_changes.SlotRow(
            i + 1, rid_of.get(i + 1, 'old'), node, T0,
            T0 + (1 + i % 3) * HOUR, *sizes[size], uuid, False))
    return found


class SplitLedgerTest(unittest.TestCase):
    """A split, as the store writes it (the slots chosen re-parented to
    the new reservation), applied to a copy of the ledger: at no node and
    no instant does the usage change, and no slot is lost or made.
    """

    @settings(max_examples=200, deadline=None)
    @given(st.lists(SLOT, min_size=1, max_size=12), st.integers(1, 12))
    def test_a_split_never_overbooks_and_never_loses_a_slot(
            self, slots, amount):
        before = _rows(slots, {})
        movable = [db_splits.Movable(r.id, r.node, r.instance_uuid,
                                     bool(r.instance_uuid) and
                                     r.instance_uuid.startswith('boot-'))
                   for r in before]
        try:
            chosen = lease_splits.choose(movable, amount)
        except exception.TooFewToSplit:
            # Only when it can not be done whole.
            self.assertTrue(amount >= len(slots) or amount > sum(
                1 for m in movable if not m.busy))
            return
        self.assertEqual(amount, len(chosen))
        self.assertEqual(len(chosen), len(set(chosen)))
        self.assertFalse({m.id for m in movable if m.busy} & set(chosen))
        # Servers move only once no free slot is left to move.
        free = [m.id for m in movable if not m.busy and not m.instance_uuid]
        self.assertTrue(set(chosen) <= set(free) or set(free) <= set(
            chosen))
        after = _rows(slots, {i: 'new' for i in chosen})
        batches = [(['old'], before), (['old', 'new'], after)]

        def changes(epoch, since):
            gen = 1 if epoch is None else 2
            reservations, rows = batches[gen - 1]
            return db_changes.Changes('epoch', gen, [
                db_changes.ReservationRow(r, 'lease-' + r, 'p',
                                          'flavor:instance', False, None)
                for r in reservations], rows)
        copy = ledger_mod.Ledger(changes)
        copy.refresh()
        old_view = copy.view
        copy.refresh()
        new_view = copy.view
        t = epoch.to_epoch(T0) - 1
        self.assertEqual(old_view.peaks_after(t), new_view.peaks_after(t))
        for node in ('n1', 'n2', 'n3'):
            for minutes in range(0, 240, 15):
                at = epoch.to_epoch(T0) + minutes * 60
                self.assertEqual(
                    _usage(old_view, node, at), _usage(new_view, node, at))
        ids = lambda view, rid: [s.id for s in view.slots(rid)]  # noqa
        self.assertEqual(sorted(ids(old_view, 'old')), sorted(
            ids(new_view, 'old') + ids(new_view, 'new')))
        self.assertEqual(sorted(chosen), ids(new_view, 'new'))


def _usage(view, node: str, at: float) -> tuple:
    """What the ledger holds on `node` at instant `at`."""
    timeline = view.timelines.get(node)
    return tuple(timeline.peak(at, at + 1)) if timeline else (0, 0, 0)
