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

"""Placing a server on a provider tree, against a brute force over every
way of taking its groups and classes from the tree's providers.
"""

import itertools

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_reservation.capacity import tree

CLASSES = ('VCPU', 'MEMORY_MB', 'VGPU', 'CUSTOM_GPU')
TRAITS = ('CUSTOM_A', 'CUSTOM_B')


def valid(providers, unnumbered, numbered, isolate, chosen) -> bool:
    """Whether taking each numbered group from `chosen[0][i]` and each
    class of the unnumbered group from `chosen[1][rc]` is what Placement
    grants.
    """
    by_key = {p.key: p for p in providers}
    pieces = []
    for group, key in zip(numbered, chosen[0]):
        p = by_key[key]
        if not group.required <= p.traits or group.forbidden & p.traits:
            return False
        pieces += [(key, rc, n) for rc, n in group.amounts.items() if n]
    if isolate and len(set(chosen[0])) < len(chosen[0]):
        return False
    sources = set(chosen[1].values())
    traits = frozenset().union(*(by_key[k].traits for k in sources))
    if not sources:
        traits = by_key[''].traits
    if not unnumbered.required <= traits or traits & unnumbered.forbidden:
        return False
    pieces += [(key, rc, unnumbered.amounts[rc])
               for rc, key in chosen[1].items()]
    total: dict = {}
    for key, rc, n in pieces:
        low, high, step = by_key[key].units.get(rc, (1, float('inf'), 1))
        if not (low <= n <= high and n % step == 0):
            return False
        total[(key, rc)] = total.get((key, rc), 0) + n
    return all(n <= by_key[key].room.get(rc, 0)
               for (key, rc), n in total.items())


def brute_force(providers, unnumbered, numbered, isolate) -> bool:
    keys = [p.key for p in providers]
    classes = [rc for rc, n in sorted(unnumbered.amounts.items()) if n]
    for groups in itertools.product(keys, repeat=len(numbered)):
        for sources in itertools.product(keys, repeat=len(classes)):
            if valid(providers, unnumbered, numbered, isolate,
                     (groups, dict(zip(classes, sources)))):
                return True
    return False


@st.composite
def provider(draw, key: str) -> tree.Provider:
    room = draw(st.dictionaries(st.sampled_from(CLASSES),
                                st.integers(0, 4), max_size=3))
    units = draw(st.dictionaries(
        st.sampled_from(sorted(room) or CLASSES),
        st.sampled_from([(1, 1, 1), (1, 2, 1), (2, 4, 2)]), max_size=1))
    return tree.Provider(key, room, frozenset(draw(st.sets(
        st.sampled_from(TRAITS)))), units)


@st.composite
def a_tree(draw) -> list:
    children = draw(st.integers(0, 3))
    # Identical children, as a node of several same GPUs has, half the
    # time.
    if children and draw(st.booleans()):
        child = draw(provider('c0'))
        return [draw(provider(''))] + [
            child._replace(key='c%d' % i) for i in range(children)]
    return [draw(provider(''))] + [draw(provider('c%d' % i))
                                   for i in range(children)]


@st.composite
def group(draw, most: int) -> tree.Group:
    amounts = draw(st.dictionaries(st.sampled_from(CLASSES),
                                   st.integers(1, 3), max_size=most))
    required = draw(st.sets(st.sampled_from(TRAITS), max_size=1))
    forbidden = draw(st.sets(st.sampled_from(TRAITS), max_size=1))
    return tree.Group(amounts, frozenset(required),
                      frozenset(forbidden - required))


class TreePlacementTest(testtools.TestCase):

    @settings(max_examples=400, deadline=None)
    @given(a_tree(), group(3), st.lists(group(2), max_size=2),
           st.booleans())
    def test_placed_exactly_where_some_way_is_granted(
            self, providers, unnumbered, numbered, isolate):
        found = tree.place(providers, unnumbered, numbered, isolate)
        self.assertEqual(brute_force(providers, unnumbered, numbered,
                                     isolate), found is not None)
        if found is not None:
            # What it takes is one of those ways.
            total: dict = {}
            for (key, rc), n in found.items():
                total[(key, rc)] = n
            asked = sum(unnumbered.amounts.values()) + sum(
                sum(g.amounts.values()) for g in numbered)
            self.assertEqual(asked, sum(found.values()))
            for (key, rc), n in found.items():
                room = {p.key: p.room for p in providers}[key]
                self.assertLessEqual(n, room.get(rc, 0))

    def test_eight_identical_gpus_are_tried_as_one(self):
        gpus = [tree.Provider('gpu%d' % i, {'VGPU': 1}) for i in range(8)]
        root = tree.Provider('', {'VCPU': 64})
        # Nine isolated groups of one vGPU: no way, found without trying
        # the 8! orders.
        groups = [tree.Group({'VGPU': 1})] * 9
        self.assertIsNone(tree.place([root] + gpus, tree.Group({'VCPU': 1}),
                                     groups, isolate=True))
        found = tree.place([root] + gpus, tree.Group({'VCPU': 1}),
                           groups[:8], isolate=True)
        self.assertEqual(8, len({k for k, rc in found if rc == 'VGPU'}))

    def test_the_unnumbered_group_s_traits_over_the_providers_it_takes(self):
        root = tree.Provider('', {'VCPU': 4}, frozenset({'CUSTOM_A'}))
        gpu = tree.Provider('g', {'VGPU': 2}, frozenset({'CUSTOM_B'}))
        ask = tree.Group({'VCPU': 1, 'VGPU': 1},
                         frozenset({'CUSTOM_A', 'CUSTOM_B'}))
        self.assertEqual({('', 'VCPU'): 1, ('g', 'VGPU'): 1},
                         tree.place([root, gpu], ask))
        # A numbered group's traits are its one provider's.
        self.assertIsNone(tree.place(
            [root, gpu], tree.Group({'VCPU': 1}),
            [tree.Group({'VGPU': 1}, frozenset({'CUSTOM_A'}))]))
