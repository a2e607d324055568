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

"""Reservation quotas: peaks at any instant, vCPU-hours per month, and
which writes pass a limit."""

import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.lease import quotas as lease_quotas

H = 3600
T0 = epoch.to_epoch(datetime.datetime(2026, 12, 10, 10, 0))


def piece(start_h, end_h, vcpus=2, memory_mb=1024, hosts=0):
    return lease_quotas.Piece(
        T0 + start_h * H, T0 + end_h * H, vcpus, memory_mb,
        hosts)


def quota(**limits):
    return lease_quotas.Quota('p1', limits)


class PeaksTest(testtools.TestCase):

    def test_overlaps_add_up_and_back_to_back_do_not(self):
        found = lease_quotas.peaks([piece(0, 2), piece(1, 3), piece(3, 4, 3)])
        self.assertEqual((4, T0 + H), found['vcpus'])
        self.assertEqual((2048, T0 + H), found['memory_mb'])
        self.assertEqual((8, T0 + 3 * H), lease_quotas.peaks(
            [piece(0, 3), piece(3, 4, 8)])['vcpus'])

    def test_hosts_and_nothing(self):
        self.assertEqual((2, T0 + H), lease_quotas.peaks(
            [piece(0, 2, hosts=1), piece(1, 2, hosts=1),
             piece(2, 3, hosts=1)])['hosts'])
        self.assertEqual({'vcpus': (0, None), 'memory_mb': (0, None),
                          'hosts': (0, None)},
                         lease_quotas.peaks([piece(1, 1)]))


class MonthlyTest(testtools.TestCase):

    def test_cut_at_the_month_boundary(self):
        start = epoch.to_epoch(datetime.datetime(2026, 12, 31, 22, 0))
        found = lease_quotas.monthly(
            [lease_quotas.Piece(start, start + 4 * H, 3, 0, 0)])
        self.assertEqual({'2026-12': 6.0, '2027-01': 6.0}, found)

    def test_a_leap_february(self):
        start = epoch.to_epoch(datetime.datetime(2028, 2, 1))
        found = lease_quotas.monthly([lease_quotas.Piece(
            start, start + 30 * 24 * H, 1,
            0, 0)])
        self.assertEqual({'2028-02': 29 * 24.0, '2028-03': 24.0}, found)


class ExceededTest(testtools.TestCase):

    def test_a_write_past_a_limit_is_named_with_its_figures(self):
        before = lease_quotas.usage([piece(0, 2, 4)])
        after = lease_quotas.usage([piece(0, 2, 4), piece(1, 3, 4)])
        excess = lease_quotas.exceeded(quota(vcpus=6), before, after)
        self.assertEqual(('vcpus', 6, 4, 8), (excess.limit, excess.most,
                                              excess.had,
                                              excess.would_have))
        message = excess.message()
        for text in ('p1', 'at most 6', 'vcpus', 'has 4', '4 more',
                     '8 in all', '2026-12-10 11:00:00 UTC'):
            self.assertIn(text, message)
        self.assertEqual({'quota': 'vcpus', 'limit': 6, 'in_use': 4,
                          'requested': 4, 'at': '2026-12-10 11:00:00'},
                         excess.details())

    def test_at_the_limit_and_unlimited_pass(self):
        before = lease_quotas.usage([])
        after = lease_quotas.usage([piece(0, 2, 4)])
        self.assertIsNone(lease_quotas.exceeded(quota(vcpus=4), before, after))
        self.assertIsNone(lease_quotas.exceeded(quota(vcpus=-1), before,
                                                after))
        self.assertIsNone(lease_quotas.exceeded(quota(), before, after))
        self.assertFalse(quota(vcpus=-1).enforced())
        self.assertTrue(quota(hosts=0).enforced())

    def test_a_shrink_passes_above_a_lowered_limit(self):
        before = lease_quotas.usage([piece(0, 4, 8)])
        after = lease_quotas.usage([piece(0, 2, 8)])
        self.assertIsNone(lease_quotas.exceeded(
            quota(vcpus=2, vcpu_hours_per_month=1), before, after))
        self.assertIsNone(lease_quotas.exceeded(quota(vcpus=2), before,
                                                before))

    def test_month_limit(self):
        before = lease_quotas.usage([piece(0, 10, 1)])
        after = lease_quotas.usage([piece(0, 10, 1), piece(20, 30, 1)])
        excess = lease_quotas.exceeded(quota(vcpu_hours_per_month=15), before,
                                       after)
        self.assertEqual(('vcpu_hours_per_month', '2026-12', 10, 20),
                         (excess.limit, excess.when, excess.had,
                          excess.would_have))
        self.assertIn('vCPU-hours reserved in month 2026-12',
                      excess.message())
        self.assertIsNone(lease_quotas.exceeded(quota(vcpu_hours_per_month=20),
                                                before, after))
        # What the project spent earlier in the month counts.
        spent = lease_quotas.usage([piece(20, 30, 1)], [piece(-10, 0, 1)])
        self.assertIsNotNone(lease_quotas.exceeded(
            quota(vcpu_hours_per_month=15), lease_quotas.usage([]), spent))

    def test_a_class_s_units_and_unit_hours(self):
        gpu, other = ('', 'CUSTOM_GPU_A100'), ('c1', 'VGPU')

        def gpus(start_h, end_h, n, more=0):
            extras = {gpu: n, other: more} if more else {gpu: n}
            return piece(start_h, end_h, 1)._replace(
                extras=capacity.extras(extras))
        before = lease_quotas.usage([gpus(0, 2, 1)])
        after = lease_quotas.usage([gpus(0, 2, 1), gpus(1, 4, 2)])
        self.assertEqual((3, T0 + H), after.peaks['CUSTOM_GPU_A100'])
        self.assertEqual({'2026-12': 8.0},
                         after.class_months['CUSTOM_GPU_A100'])
        # vCPUs are counted as before, beside.
        self.assertEqual({'2026-12': 5.0}, after.months)
        excess = lease_quotas.exceeded(quota(CUSTOM_GPU_A100=2), before, after)
        self.assertEqual(('CUSTOM_GPU_A100', 1, 3),
                         (excess.limit, excess.had, excess.would_have))
        self.assertIn('CUSTOM_GPU_A100 reserved at 2026-12-10 11:00:00 UTC',
                      excess.message())
        excess = lease_quotas.exceeded(
            quota(CUSTOM_GPU_A100_hours_per_month=7), before, after)
        self.assertEqual(('2026-12', 2, 8), (excess.when, excess.had,
                                             excess.would_have))
        self.assertIn('CUSTOM_GPU_A100-hours reserved in month 2026-12',
                      excess.message())
        self.assertIsNone(lease_quotas.exceeded(
            quota(CUSTOM_GPU_A100=3, CUSTOM_GPU_A100_hours_per_month=8,
                  VGPU=0), before, after))
        # A class of a child provider counts as the class.
        self.assertIsNotNone(lease_quotas.exceeded(
            quota(VGPU=0), before,
            lease_quotas.usage([gpus(0, 1, 1, more=1)])))

    def test_names_of_class_limits(self):
        self.assertEqual(('CUSTOM_X', True),
                         lease_quotas.class_limit('CUSTOM_X_hours_per_month'))
        self.assertEqual(('PCPU', False), lease_quotas.class_limit('PCPU'))
        for name in ('VCPU', 'MEMORY_MB_hours_per_month', 'vcpus',
                     'custom_x', '_X', 'X' * 256, 'CUSTOM_X\n',
                     'CUSTOM_X_hours_per_month\n'):
            self.assertIsNone(lease_quotas.class_limit(name), name)
        self.assertTrue(lease_quotas.is_limit('vcpu_hours_per_month'))
        self.assertFalse(lease_quotas.is_limit(3))

    def test_hosts_limit_of_zero(self):
        excess = lease_quotas.exceeded(
            quota(hosts=0), lease_quotas.usage([]),
            lease_quotas.usage([piece(0, 1, hosts=1)]))
        self.assertEqual('hosts', excess.limit)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 6),
                              st.integers(1, 4)), max_size=8),
           st.integers(0, 12))
    def test_peak_is_the_most_held_at_any_instant(self, spans, limit):
        pieces = [piece(s, s + n, v) for s, n, v in spans]
        peak, _ = lease_quotas.peaks(pieces)['vcpus']
        # Sampled at every half hour: no instant holds more, one as much.
        held = [sum(p.vcpus for p in pieces
                    if p.start <= T0 + t * H / 2 < p.end)
                for t in range(0, 60)]
        self.assertEqual(max(held, default=0), peak)
        # A write is refused exactly when it passes the limit and grows.
        before = lease_quotas.usage(pieces[:-1])
        after = lease_quotas.usage(pieces)
        grew = after.peaks['vcpus'][0] > before.peaks['vcpus'][0]
        self.assertEqual(grew and after.peaks['vcpus'][0] > limit,
                         lease_quotas.exceeded(quota(vcpus=limit), before,
                                               after) is not None)


class LimitsTest(testtools.TestCase):

    def test_project_then_tag_then_default(self):
        found, source = lease_quotas.limits_of(
            {'vcpus': 10, 'memory_mb': -1, 'hosts': 2,
             'vcpu_hours_per_month': 100},
            {'vcpus': 20, 'hosts': 3}, {'hosts': 4})
        self.assertEqual({'vcpus': 20, 'memory_mb': -1, 'hosts': 4,
                          'vcpu_hours_per_month': 100}, found)
        self.assertEqual({'vcpus': 'tag', 'memory_mb': 'default',
                          'hosts': 'project',
                          'vcpu_hours_per_month': 'default'}, source)

    def test_tags(self):
        tags = ['rq:vcpus=64', 'rq:hosts=-1', 'rq:memory_mb=lots',
                'rq:disk=3', 'other:vcpus=1', 'rq:vcpus', None,
                'rq:memory_mb=' + '9' * 40]
        self.assertEqual({'vcpus': 64, 'hosts': -1},
                         lease_quotas.tagged_limits(tags, 'rq'))
        self.assertEqual({}, lease_quotas.tagged_limits(['rq:vcpus=1'], ''))

    def test_a_class_s_limits_come_from_each_source(self):
        found, source = lease_quotas.limits_of(
            {'CUSTOM_GPU_A100': 4, 'vcpus': 1},
            {'CUSTOM_GPU_A100_hours_per_month': 100},
            {'CUSTOM_GPU_A100': 2})
        self.assertEqual((2, 'project'), (found['CUSTOM_GPU_A100'],
                                          source['CUSTOM_GPU_A100']))
        self.assertEqual((100, 'tag'), (
            found['CUSTOM_GPU_A100_hours_per_month'],
            source['CUSTOM_GPU_A100_hours_per_month']))
        self.assertEqual(
            {'PCPU_hours_per_month': 10}, lease_quotas.tagged_limits(
                ['rq:PCPU_hours_per_month=10', 'rq:VCPU=3'], 'rq'))
