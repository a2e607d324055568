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

"""Where slots fit when they hold classes beyond vCPU, RAM and disk (a
slot's extras): each node holds only as many as its tree has room for
beside its base and the promises over the interval.
"""

import dataclasses

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_reservation import capacity
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.tests.unit import base

GPU = ('', 'CUSTOM_GPU_A100')
ONE_GPU = capacity.extras({GPU: 1})
SMALL = capacity.Resources(1, 512, 1)
BIG = capacity.Resources(64, 65536, 1000)


def gpu_node(name: str, gpus: int, used: int = 0) -> capacity.Host:
    return capacity.Host(name, BIG, extra_capacity=capacity.extras(
        {GPU: gpus}), extra_base=capacity.extras({GPU: used}))


def promised(node: str, start: float, end: float, gpus: int,
             slot_id: int = 1, res=capacity.ZERO) -> timeline_mod.Timeline:
    return timeline_mod.Timeline([capacity.Slot(
        slot_id, 'r', node, start, end, res,
        extras=capacity.extras({GPU: gpus}))])


class PlanTest(testtools.TestCase):

    def test_a_node_holds_as_many_as_its_gpus_left(self):
        hosts = [gpu_node('n1', 2, used=1), capacity.Host('n2', BIG)]
        timelines = {'n1': promised('n1', 0, 10, 1)}
        # n2 has no GPU at all; n1's second is promised until 10.
        self.assertIsNone(capacity.plan(hosts, timelines, SMALL, 1, 5, 15,
                                        extras=ONE_GPU))
        self.assertEqual(['n1'], capacity.plan(hosts, timelines, SMALL, 1,
                                               10, 20, extras=ONE_GPU))
        self.assertIsNone(capacity.plan(hosts, timelines, SMALL, 2, 10, 20,
                                        extras=ONE_GPU))
        # Without extras, CPU alone: both nodes, as before.
        self.assertEqual(2, len(capacity.plan(hosts, timelines, SMALL, 2,
                                              5, 15)))

    def test_spread_and_affinity_count_the_gpus(self):
        hosts = [gpu_node('n1', 2), gpu_node('n2', 1)]
        self.assertEqual(['n1', 'n1', 'n2'], sorted(capacity.plan(
            hosts, {}, SMALL, 3, 0, 10, extras=ONE_GPU)))
        self.assertIsNone(capacity.plan(hosts, {}, SMALL, 4, 0, 10,
                                        extras=ONE_GPU))
        self.assertEqual(['n1', 'n1'], capacity.plan(
            hosts, {}, SMALL, 2, 0, 10, affinity=True, extras=ONE_GPU))
        self.assertIsNone(capacity.plan(hosts, {}, SMALL, 3, 0, 10,
                                        affinity=True, extras=ONE_GPU))
        self.assertEqual(['n1', 'n2'], sorted(capacity.plan(
            hosts, {}, SMALL, 2, 0, 10, affinity=False, extras=ONE_GPU)))

    def test_a_slot_of_gpus_alone_keeps_a_whole_node_lease_off(self):
        # Bare metal: a slot of no vCPU, RAM or disk, one node's class.
        hosts = [gpu_node('n1', 1)]
        timelines = {'n1': promised('n1', 0, 10, 1)}
        self.assertEqual([], capacity.plan_hosts(hosts, timelines, 5, 15,
                                                 0, 1))
        self.assertEqual(['n1'], capacity.plan_hosts(hosts, timelines, 10,
                                                     15, 1, 1))
        self.assertIsNone(capacity.plan_whole(hosts, timelines, 5, 15))
        # A whole node holds its tree too.
        self.assertEqual([capacity.Placed('n1', BIG, capacity.extras(
            {GPU: 1}))], capacity.plan_whole(hosts, timelines, 10, 15))

    def test_fits_with_extras_and_without_the_excluded(self):
        host = gpu_node('n1', 1)
        timeline = promised('n1', 0, 10, 1, slot_id=7)
        self.assertFalse(capacity.fits(host, timeline, SMALL, 0, 5,
                                       extras=ONE_GPU))
        self.assertTrue(capacity.fits(host, timeline, SMALL, 0, 5,
                                      exclude=[7], extras=ONE_GPU))
        self.assertTrue(capacity.fits(host, timeline, SMALL, 0, 5))

    def test_the_earliest_fit_waits_for_a_gpu(self):
        hosts = [gpu_node('n1', 1), gpu_node('n2', 1, used=1)]
        timelines = {'n1': promised('n1', 0, 30, 1)}
        self.assertEqual(30, capacity.earliest_fit(
            hosts, timelines, SMALL, 0, 10, 100, ONE_GPU))
        self.assertIsNone(capacity.earliest_fit(
            hosts, timelines, SMALL, 0, 10, 100,
            capacity.extras({GPU: 2})))
        self.assertEqual(0, capacity.earliest_fit(hosts, timelines, SMALL,
                                                  0, 10, 100))


class UnitBoundsTest(testtools.TestCase):

    def test_a_node_holds_no_slot_of_more_than_its_max_unit(self):
        host = capacity.Host('n1', BIG, extra_capacity=capacity.extras(
            {GPU: 8}), extra_units=((GPU, (1, 2, 1)),))
        for gpus, held in ((1, True), (2, True), (3, False)):
            self.assertEqual(held, capacity.may_hold(host, capacity.Need(
                SMALL, (), capacity.extras({GPU: gpus}))), gpus)
        # A step of two: whole pairs only.
        paired = capacity.Host('n2', BIG, extra_units=((GPU, (2, 8, 2)),))
        self.assertEqual([False, True, False, True], [
            capacity.may_hold(paired, capacity.Need(
                SMALL, (), capacity.extras({GPU: n}))) for n in (1, 2, 3, 4)])


class SearchTest(testtools.TestCase):
    """When slots fit on nodes whose only class is beyond the three (bare
    metal): the instants where usage drops or rises are those of the
    class, which the search must see.
    """

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(['n0', 'n1', 'n2']),
                              st.integers(0, 100), st.integers(1, 30),
                              st.integers(1, 2)), max_size=20),
           st.integers(1, 3), st.integers(1, 40), st.integers(0, 60),
           st.integers(0, 150), st.integers(1, 6))
    def test_windows_are_the_runs_of_starts_that_fit(
            self, rows, count, duration, start, span, limit):
        slots: dict = {}
        for i, (node, a, length, gpus) in enumerate(rows):
            slots.setdefault(node, []).append(capacity.Slot(
                i, 'r%d' % i, node, a, a + length, capacity.ZERO,
                extras=capacity.extras({GPU: gpus})))
        tl = {n: timeline_mod.Timeline(s) for n, s in slots.items()}
        hosts = [capacity.Host(n, capacity.ZERO,
                               extra_capacity=capacity.extras({GPU: 2}))
                 for n in ('n0', 'n1', 'n2')]
        end = start + span

        def place(a, b):
            return capacity.plan(hosts, tl, capacity.ZERO, count, a, b,
                                 extras=ONE_GPU)
        runs = base.runs_that_fit(place, start, end, duration)
        found = capacity.windows(tl, start, end, duration, place, limit)
        self.assertEqual(runs[:limit], [(a, round(b, 3)) for a, b in found])
        self.assertEqual(
            runs[0][0] if runs else None,
            capacity.earliest_start(tl, start, duration, end, place))


class HeldUntilTest(testtools.TestCase):
    """How long a lease's slots that hold a GPU can run on (the latest end
    a refused extension names): until another lease takes the GPU, not
    until the node's vCPUs run out.
    """

    def test_until_the_class_it_holds_is_promised(self):
        cpu = capacity.Resources(8, 0, 0)
        timeline = timeline_mod.Timeline([
            capacity.Slot(1, 'other', 'n1', 20, 40, capacity.ZERO,
                          extras=ONE_GPU),
            capacity.Slot(2, 'cpu', 'n1', 50, 60, cpu)])
        for host in (dataclasses.replace(gpu_node('n1', 1), capacity=cpu),
                     dataclasses.replace(gpu_node('n1', 1),
                                         capacity=capacity.ZERO)):
            self.assertEqual([20], capacity.held_until(
                host, timeline, [capacity.ZERO], 10, [ONE_GPU]))
        # Without extras, as before: the vCPUs run out at 50.
        self.assertEqual([50], capacity.held_until(
            dataclasses.replace(gpu_node('n1', 1), capacity=cpu), timeline,
            [capacity.Resources(1, 0, 0)], 10))
        # A GPU taken already: not even now.
        self.assertEqual([25], [capacity.held_until(
            dataclasses.replace(gpu_node('n1', 1), capacity=cpu), timeline,
            [capacity.ZERO], 25, [ONE_GPU])[0]])
