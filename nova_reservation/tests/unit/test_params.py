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

"""Validation of lease hints."""

import datetime
import json
import unittest

from nova_reservation import exception
from nova_reservation.hooks import params
from nova_reservation.hooks import projects
from nova_reservation.lease import idempotency
from nova_reservation import marks
from nova_reservation import validation

NOW = datetime.datetime(2026, 11, 21, 12, 0, 0)
DAY = 86400


def parse(**fields):
    return params.lease_request({'lease_params': json.dumps(fields)}, NOW,
                                30 * DAY, 365 * DAY)


class LeaseRequestTest(unittest.TestCase):

    def test_ordinary_boot(self):
        self.assertIsNone(params.lease_request({}, NOW, DAY, DAY))

    def test_minute_utc_dates(self):
        lease = parse(name='l1', start='2026-12-01 10:00',
                      end='2026-12-01 18:00')
        self.assertEqual(datetime.datetime(2026, 12, 1, 10), lease.start)
        self.assertEqual('delete', lease.on_end)
        self.assertFalse(lease.immediate)

    def test_seed_date_without_leading_zero(self):
        lease = parse(name='l1', start='now', end='2026-12-1 16:07')
        self.assertEqual(datetime.datetime(2026, 12, 1, 16, 7), lease.end)
        self.assertTrue(lease.immediate)
        self.assertEqual(NOW, lease.start)

    def test_iso_8601_with_offset_is_utc(self):
        lease = parse(name='l1', start='2026-12-01T12:00:00+02:00',
                      end='2026-12-01T18:00:00Z', on_end='snapshot',
                      before_end=30)
        self.assertEqual(datetime.datetime(2026, 12, 1, 10), lease.start)
        self.assertEqual(30, lease.before_end)

    def test_errors_name_the_field(self):
        cases = [
            (dict(name='l', start='now'), 'lease_params.end'),
            (dict(name='l', start='now', end='2026-11-21 11:00'),
             'lease_params.end'),
            (dict(name='l', start='2026-11-20 11:00',
                  end='2026-11-22 11:00'), 'lease_params.start'),
            (dict(name='l', start='now', end='2027-11-22 11:00'),
             'lease_params.end'),
            (dict(name='l', start='now', end='2026-11-22 11:00',
                  before_end=True), 'lease_params.before_end'),
            (dict(name='l', start='now', end='2026-11-22 11:00', x=1),
             'lease_params.x'),
        ]
        for fields, field in cases:
            with self.assertRaises(exception.InvalidParam) as ctx:
                parse(**fields)
            self.assertEqual(field, ctx.exception.field, fields)
            self.assertTrue(str(ctx.exception).startswith(field + ': '))

    def test_not_json(self):
        with self.assertRaises(exception.InvalidParam) as ctx:
            params.lease_request({'lease_params': '{'}, NOW, DAY, DAY)
        self.assertEqual('lease_params', ctx.exception.field)


class ServerCountTest(unittest.TestCase):

    def test_counts(self):
        self.assertEqual(1, params.server_count({}, 10))
        self.assertEqual(3, params.server_count({'min_count': 3}, 10))
        self.assertEqual(4, params.server_count(
            {'min_count': '2', 'max_count': 4}, 10))

    def test_bad_counts(self):
        for body, field in (({'max_count': 11}, 'max_count'),
                            ({'min_count': 0}, 'min_count'),
                            ({'min_count': 'x'}, 'min_count'),
                            ({'min_count': 3, 'max_count': 2}, 'min_count')):
            with self.assertRaises(exception.InvalidParam) as ctx:
                params.server_count(body, 10)
            self.assertEqual(field, ctx.exception.field)


class PreemptibleRequestTest(unittest.TestCase):

    def test_by_hint_or_flavor(self):
        ask = params.preemptible_request
        self.assertIsNone(ask({}, {}))
        self.assertIsNone(ask({'preemptible': 'false'}, {}))
        self.assertEqual('shelve', ask({'preemptible': 'True'}, {}).on_preempt)
        self.assertEqual('delete', ask({'preemptible': ['true'],
                                        'on_preempt': 'delete'},
                                       {}).on_preempt)
        spec = {marks.PREEMPTIBLE: 'true'}
        self.assertEqual('shelve', ask({}, spec).on_preempt)
        # The hint wins over the flavor.
        self.assertIsNone(ask({'preemptible': 'false'}, spec))
        # A lease's boot of a preemptible flavor runs under the lease.
        self.assertIsNone(ask({'reservation': 'x'}, spec))

    def test_errors_name_the_field(self):
        ask = params.preemptible_request
        for hints, specs, field in [
                ({'preemptible': 'yes'}, {}, 'preemptible'),
                ({'preemptible': None}, {}, 'preemptible'),
                ({'preemptible': 1}, {}, 'preemptible'),
                ({'preemptible': 'true', 'on_preempt': 'suspend'}, {},
                 'on_preempt'),
                ({'preemptible': 'true', 'on_preempt': ['shelve', 'x']}, {},
                 'on_preempt'),
                ({'on_preempt': 'shelve'}, {}, 'on_preempt'),
                ({'preemptible': 'true', 'lease_params': '{}'}, {},
                 'preemptible'),
                ({}, {marks.PREEMPTIBLE: 'often'},
                 marks.PREEMPTIBLE)]:
            with self.assertRaises(exception.InvalidParam) as e:
                ask(hints, specs)
            self.assertIn(field, str(e.exception), hints)


class ClientTokenTest(unittest.TestCase):

    def test_a_token_is_kept_and_checked(self):
        now = datetime.datetime(2030, 1, 1)
        hints = {'lease_params': json.dumps({
            'name': 'l', 'start': '2030-01-02 10:00',
            'end': '2030-01-02 12:00', 'client_token': 'retry-7'})}
        self.assertEqual('retry-7', params.lease_request(
            hints, now, 86400, 0).client_token)
        for token in ('', 'x' * 65, 5, 'a\nb'):
            hints = {'lease_params': json.dumps({
                'name': 'l', 'start': '2030-01-02 10:00',
                'end': '2030-01-02 12:00', 'client_token': token})}
            with self.assertRaises(exception.InvalidParam) as e:
                params.lease_request(hints, now, 86400, 0)
            self.assertIn('lease_params.client_token', str(e.exception))

    def test_a_request_s_digest_ignores_the_order_of_its_keys(self):
        a = {'name': 'l', 'reservations': [{'amount': 1, 'flavor_id': 3}]}
        b = {'reservations': [{'flavor_id': 3, 'amount': 1}], 'name': 'l'}
        self.assertEqual(idempotency.digest(a), idempotency.digest(b))
        self.assertNotEqual(idempotency.digest(a), idempotency.digest(
            dict(a, name='m')))


class DefaultLeaseTest(unittest.TestCase):

    def test_from_now_for_the_duration(self):
        now = datetime.datetime(2030, 1, 1, 12, 0)
        lease = params.default_lease('vm1', now, 3600, 'shelve', 10)
        self.assertEqual(('default: vm1', now, 'shelve', 10, True),
                         (lease.name, lease.start, lease.on_end,
                          lease.before_end, lease.immediate))
        self.assertEqual(now + datetime.timedelta(hours=1), lease.end)
        # No notice when it is not shorter than the lease, or 0; a name
        # that is not a string.
        self.assertIsNone(params.default_lease(
            'vm1', now, 600, 'delete', 10).before_end)
        self.assertIsNone(params.default_lease(
            'vm1', now, 3600, 'delete', 0).before_end)
        self.assertEqual('default:', params.default_lease(
            None, now, 3600, 'delete', 0).name)


class WaitingTest(unittest.TestCase):

    def test_a_lease_is_refused_unless_it_asks_to_wait(self):
        lease = parse(name='l', start='2026-12-01 10:00',
                      end='2026-12-01 18:00')
        self.assertIsNone(lease.waiting)

    def test_a_flexible_start_until_start_before(self):
        lease = parse(name='l', start='2026-12-01 10:00',
                      end='2026-12-01 18:00', if_busy='wait',
                      flexible_start=True, start_before='2026-12-03 10:00',
                      retries=5, retry_interval=30)
        self.assertEqual(validation.Waiting(
            True, datetime.datetime(2026, 12, 3, 10), 5, 30), lease.waiting)
        self.assertEqual(
            dict(if_busy='wait', flexible_start=True, start_now=False,
                 start_before=datetime.datetime(2026, 12, 3, 10),
                 retries=5, retry_interval=30, tries=0),
            lease.waiting.columns(False))

    def test_each_bad_field_is_named(self):
        base = dict(name='l', start='2026-12-01 10:00',
                    end='2026-12-01 18:00')
        for extra, field in (
                (dict(retries=1), 'retries'),
                (dict(start_before='2026-12-02 10:00'), 'start_before'),
                (dict(if_busy='wait', start_before='2026-12-02 10:00'),
                 'start_before'),
                (dict(if_busy='wait', flexible_start=True), 'start_before'),
                (dict(if_busy='wait', flexible_start=True,
                      start_before='2026-12-01 09:00'), 'start_before'),
                (dict(if_busy='wait', flexible_start=True,
                      start_before='2028-12-01 09:00'), 'start_before'),
                (dict(if_busy='wait', retry_interval=10081),
                 'retry_interval')):
            with self.assertRaises(exception.InvalidParam) as e:
                parse(**dict(base, **extra))
            self.assertEqual('lease_params.' + field, e.exception.field,
                             extra)

    def test_a_start_of_now_may_wait_until_start_before(self):
        lease = parse(name='l', start='now', end='2026-12-01 18:00',
                      if_busy='wait', start_before='2026-11-22 12:00')
        self.assertEqual((False, datetime.datetime(2026, 11, 22, 12)),
                         (lease.waiting.flexible_start,
                          lease.waiting.start_before))


class RecurrenceTest(unittest.TestCase):

    def test_no_recurrence_is_one_occurrence(self):
        self.assertIsNone(parse(name='l', start='2026-12-01 10:00',
                                end='2026-12-01 18:00').occurrences)

    def test_every_week_count_times(self):
        lease = parse(name='l', start='2026-12-01 10:00',
                      end='2026-12-01 18:00',
                      recurrence=dict(every='week', count=3))
        week = datetime.timedelta(weeks=1)
        first = (datetime.datetime(2026, 12, 1, 10),
                 datetime.datetime(2026, 12, 1, 18))
        self.assertEqual(tuple((first[0] + k * week, first[1] + k * week)
                               for k in range(3)), lease.occurrences)

    def test_every_day_until_a_date_it_includes(self):
        lease = parse(name='l', start='2026-12-01 10:00',
                      end='2026-12-01 18:00',
                      recurrence=dict(every='day', until='2026-12-04 10:00'))
        self.assertEqual([datetime.datetime(2026, 12, d, 10)
                          for d in (1, 2, 3, 4)],
                         [s for s, _ in lease.occurrences])

    def test_the_last_occurrence_within_max_advance(self):
        with self.assertRaises(exception.InvalidParam) as e:
            parse(name='l', start='2026-12-01 10:00', end='2026-12-01 18:00',
                  recurrence=dict(every='week', count=60))
        self.assertEqual('lease_params.recurrence.count', e.exception.field)


class ProjectTagTest(unittest.TestCase):
    TAG = 'reservation:default_lease'

    def test_the_bare_tag_takes_the_default_length(self):
        self.assertEqual(600, projects.default_lease_length(
            ['lab', self.TAG], self.TAG, 600))

    def test_a_length_of_its_own(self):
        for value, seconds in (('2h', 7200), ('7d', 7 * 86400),
                               ('90m', 5400)):
            self.assertEqual(seconds, projects.default_lease_length(
                [self.TAG + '=' + value], self.TAG, 600), value)

    def test_a_bad_length_takes_the_default(self):
        for value in ('', '0d', '2w', '-1h', '1.5h', 'h', '9999999d'):
            self.assertEqual(600, projects.default_lease_length(
                [self.TAG + '=' + value], self.TAG, 600), value)

    def test_no_tag_no_default_lease(self):
        for tags in ([], ['lab'], [self.TAG + 'x'], ['x' + self.TAG]):
            self.assertIsNone(projects.default_lease_length(
                tags, self.TAG, 600), tags)
