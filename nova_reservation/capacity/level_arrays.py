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

"""A timeline's usage levels as arrays, and the maxima it answers from
them, pure: the levels of one resource at each step of a node, the
highest level from each step on (`suffix_peaks`), and the highest over a
range of steps (`block_tree`, `tree_max`).  Sizes stay a fraction of the
levels' so that every process can hold every node's.  Whole numbers are
kept in the narrowest array type that holds them (`holding`): the
ledger's slot columns too.
"""

import array
import bisect
from typing import Optional

# Steps per block of the block maxima: each level of the tree is a
# maximum per BLOCK entries of the one below.
BLOCK = 64
# Usage levels are whole numbers (Nova counts units, vCPUs, MB and GB),
# each resource's kept in the narrowest of these that holds them: a count
# of GPUs or vCPUs takes a byte a step, GB two, MB four.  A node's levels
# of a resource are widened when a change leaves that range, and become
# floats if a slot has a fraction or a level leaves 32 bits.
WHOLE_TYPES = ('b', 'h', 'i')
# Other whole numbers (slot ids, numbers of sizes or nodes) may take 64
# bits.
NUMBER_TYPES = WHOLE_TYPES + ('q',)


# {type: (lowest, highest)} of each whole-number type, made once: every
# slot a refresh puts is checked against them.
_BOUNDS = {code: (-2 ** (8 * array.array(code).itemsize - 1),
                  2 ** (8 * array.array(code).itemsize - 1) - 1)
           for code in NUMBER_TYPES}


def _whole_type(low: int, high: int,
                types: tuple = WHOLE_TYPES) -> Optional[str]:
    """The narrowest of `types` that holds low..high, or None."""
    for code in types:
        lowest, highest = _BOUNDS[code]
        if lowest <= low and high <= highest:
            return code
    return None


def holding(values: array.array, number: int) -> array.array:
    """`values`, or a copy in a wider whole-number type if it can not hold
    `number`.
    """
    lowest, highest = _BOUNDS[values.typecode]
    if lowest <= number <= highest:
        return values
    code = _whole_type(number, number, NUMBER_TYPES)
    if code is None:
        raise OverflowError('%d takes more than 64 bits' % number)
    return array.array(code, values)


def numbers(count: int = 0) -> array.array:
    """`count` zeros in the narrowest whole-number type."""
    return array.array(WHOLE_TYPES[0], bytes(count))


def to_array(values: list) -> array.array:
    """The levels in the narrowest whole-number type that holds them,
    else floats.
    """
    if all(type(v) is int for v in values):
        code = _whole_type(min(values), max(values)) if values else 'b'
        if code is not None:
            return array.array(code, values)
    return array.array('d', values)


def suffix_peaks(values: array.array) -> tuple:
    """(steps, peaks): the steps whose usage is above that of every later
    step, in order, and those usages (a few, not one per step).
    """
    steps, peaks = [], []
    top = None
    for i in range(len(values) - 1, -1, -1):
        if top is None or values[i] > top:
            top = values[i]
            steps.append(i)
            peaks.append(top)
    steps.reverse()
    peaks.reverse()
    return array.array('i', steps), array.array(values.typecode, peaks)


def block_tree(values: array.array) -> list:
    """[values, maxima of BLOCK values, maxima of BLOCK of those, ...]."""
    tree = [values]
    while len(tree[-1]) > 2 * BLOCK:
        below = tree[-1]
        tree.append(array.array(values.typecode, (
            max(below[i:i + BLOCK]) for i in range(0, len(below), BLOCK))))
    return tree


def tree_max(tree: list, lo: int, hi: int) -> float:
    """Maximum of values[lo..hi] (inclusive): the partial blocks at the
    ends scanned at each level, the whole ones between read a level up.
    """
    best = None
    for level, values in enumerate(tree):
        if hi - lo < 2 * BLOCK or level == len(tree) - 1:
            top = max(values[lo:hi + 1])
            return top if best is None or top > best else best
        first = -(-lo // BLOCK)       # the first whole block
        last = (hi + 1) // BLOCK      # after the last whole block
        edges = values[lo:first * BLOCK] + values[last * BLOCK:hi + 1]
        if edges:
            top = max(edges)
            best = top if best is None or top > best else best
        lo, hi = first, last - 1
    return best


def added(values: array.array, i: int, j: int,
          amount: float) -> array.array:
    """`values` (or a wider copy, where its type no longer holds them)
    with `amount` added to its steps i to j - 1.
    """
    if values.typecode != 'd' and j > i:
        span = values[i:j]
        code = (_whole_type(min(span) + amount, max(span) + amount)
                if isinstance(amount, int) else None)
        if code is None:
            values = array.array('d', values)
        elif WHOLE_TYPES.index(code) > WHOLE_TYPES.index(values.typecode):
            values = array.array(code, values)
    for k in range(i, j):
        values[k] += amount
    return values


def extra_levels(times: array.array, ids, starts, ends,
                 extras: dict) -> tuple:
    """(classes, levels): the classes beyond `Resources` that slots hold
    ({slot id: its extras}), sorted, and each one's levels at `times`,
    which hold every slot's start and end.
    """
    if not extras:
        return (), []
    deltas: dict = {}
    for slot_id, start, end in zip(ids, starts, ends):
        value = extras.get(slot_id)
        if not value or end <= start:
            continue
        lo = bisect.bisect_left(times, start)
        hi = bisect.bisect_left(times, end)
        for key, amount in value:
            steps = deltas.setdefault(key, {})
            steps[lo] = steps.get(lo, 0) + amount
            steps[hi] = steps.get(hi, 0) - amount
    classes = tuple(sorted(deltas))
    levels = []
    for key in classes:
        steps, level, values = deltas[key], 0, []
        for k in range(len(times)):
            level += steps.get(k, 0)
            values.append(level)
        levels.append(to_array(values))
    return classes, levels
