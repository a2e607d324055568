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

"""A node's usage levels as arrays: each resource's in the narrowest type
that holds them, widened by a change that leaves it, and the maxima read
from them as from a list.
"""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_reservation.capacity import level_arrays

# Amounts of every width: counts, GB, MB, past 32 bits, fractions.
amounts = st.one_of(st.integers(-3, 130), st.integers(-40_000, 40_000),
                    st.integers(-2 ** 33, 2 ** 33),
                    st.sampled_from([0.5, 2.25]))


class NarrowLevelsTest(testtools.TestCase):

    def test_counts_take_a_byte_a_step(self):
        # GPUs and vCPUs of a node: a byte a step, a quarter of the
        # 32-bit integers every level took before.
        self.assertEqual(1, level_arrays.to_array([0, 3, 127, 2]).itemsize)
        self.assertEqual(1, level_arrays.numbers(5).itemsize)
        self.assertEqual([0] * 5, list(level_arrays.numbers(5)))

    def test_each_width_holds_its_range(self):
        for values, size in (([-128, 127], 1), ([128], 2), ([-129], 2),
                             ([32_767, -32_768], 2), ([32_768], 4),
                             ([2 ** 31 - 1, -2 ** 31], 4)):
            found = level_arrays.to_array(values)
            self.assertEqual((size, values), (found.itemsize, list(found)))
        for values in ([2 ** 31], [-2 ** 31 - 1], [1, 0.5]):
            found = level_arrays.to_array(values)
            self.assertEqual(('d', values), (found.typecode, list(found)))
        self.assertEqual([], list(level_arrays.to_array([])))

    def test_a_change_past_the_range_widens(self):
        values = level_arrays.to_array([0, 120, 120, 5])
        values = level_arrays.added(values, 1, 3, 10)
        self.assertEqual(([0, 130, 130, 5], 2),
                         (list(values), values.itemsize))
        values = level_arrays.added(values, 0, 1, 40_000)
        self.assertEqual(([40_000, 130, 130, 5], 4),
                         (list(values), values.itemsize))
        values = level_arrays.added(values, 3, 4, 0.5)
        self.assertEqual(([40_000, 130, 130, 5.5], 'd'),
                         (list(values), values.typecode))

    def test_a_change_within_the_range_keeps_the_array(self):
        values = level_arrays.to_array([0, 120, 3])
        self.assertIs(values, level_arrays.added(values, 0, 3, 7))
        self.assertEqual(([7, 127, 10], 1), (list(values), values.itemsize))
        # Nothing to change: nothing widened.
        self.assertIs(values, level_arrays.added(values, 2, 2, 2 ** 40))

    def test_a_column_holds_any_whole_number_it_is_given(self):
        # Slot ids, numbers of sizes and of nodes: widened as they grow,
        # up to 64 bits.
        column = level_arrays.numbers()
        kept = []
        for number, size in ((5, 1), (-1, 1), (200, 2), (40_000, 4),
                             (2 ** 31, 8), (-2 ** 63, 8), (7, 8)):
            column = level_arrays.holding(column, number)
            column.append(number)
            kept.append(number)
            self.assertEqual((kept, size), (list(column), column.itemsize))
        self.assertRaises(OverflowError, level_arrays.holding, column,
                          2 ** 63)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(-200, 200), min_size=1, max_size=300),
           st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300),
                              amounts), max_size=8),
           st.tuples(st.integers(0, 300), st.integers(0, 300)))
    def test_levels_answer_as_a_list_does(self, first, changes, query):
        plain = list(first)
        values = level_arrays.to_array(first)
        for i, j, amount in changes:
            i, j = sorted((min(i, len(plain)), min(j, len(plain))))
            values = level_arrays.added(values, i, j, amount)
            for k in range(i, j):
                plain[k] += amount
        self.assertEqual(plain, list(values))
        lo, hi = sorted(min(q, len(plain) - 1) for q in query)
        self.assertEqual(max(plain[lo:hi + 1]), level_arrays.tree_max(
            level_arrays.block_tree(values), lo, hi))
        steps, peaks = level_arrays.suffix_peaks(values)
        self.assertEqual([max(plain[i:]) for i in range(len(plain))],
                         [peaks[next(n for n, s in enumerate(steps)
                                     if s >= i)]
                          for i in range(len(plain))])
