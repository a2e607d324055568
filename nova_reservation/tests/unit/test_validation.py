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

"""The shared checks: schemas, depth, calendar edges, unstorable text."""

import datetime
import json
import unittest

import hypothesis
from hypothesis import strategies as st

from nova_reservation.api import validation as bodies
from nova_reservation import capacity
from nova_reservation import exception
from nova_reservation.hooks import params
from nova_reservation.lease import properties
from nova_reservation.schemas import hosts
from nova_reservation.schemas import leases
from nova_reservation import validation

NOW = datetime.datetime(2026, 11, 21, 12, 0, 0)
DAY = 86400


def nested(depth: int, inner='"x"') -> str:
    return '[' * depth + inner + ']' * depth


def flavor_lease(**changes) -> dict:
    body = {'name': 'l1', 'start_date': '2026-12-01 10:00',
            'end_date': '2026-12-01 12:00', 'reservations': [
                {'resource_type': 'flavor:instance', 'flavor_id': '1',
                 'amount': 1}]}
    body.update(changes)
    return body


def create(body):
    return bodies.lease(body, NOW, 30 * DAY, 365 * DAY,
                        lambda flavor_id: capacity.Need(
                            capacity.Resources(1, 512, 1)))


class RefusedTest(unittest.TestCase):

    def assertRefused(self, field, call, *args):
        with self.assertRaises(exception.InvalidParam) as ctx:
            call(*args)
        self.assertEqual(field, ctx.exception.field, str(ctx.exception))
        self.assertTrue(str(ctx.exception).startswith(field + ': '))
        return str(ctx.exception)


class DatesTest(RefusedTest):

    def test_offsets_at_the_edge_of_the_calendar(self):
        for text in ('9999-12-31T23:59:59-01:00', '0001-01-01T00:00:00+01:00',
                     '9999-12-31T23:59:59-23:59'):
            message = self.assertRefused('start', validation.parse_time,
                                         'start', text)
            self.assertIn('outside the calendar', message)

    def test_the_edge_without_an_offset_is_a_date_out_of_range(self):
        # A date, but no lease may start there.
        self.assertRefused('start_date', validation.interval, 'start_date',
                           '9999-12-31 23:59', 'end_date',
                           '9999-12-31T23:59:59', NOW, DAY, DAY)
        self.assertRefused('start_date', validation.interval, 'start_date',
                           '0001-01-01 00:00', 'end_date',
                           '0001-01-02 00:00', NOW, DAY, DAY)

    def test_the_current_minute_is_now_and_the_one_before_the_past(self):
        now = datetime.datetime(2026, 11, 24, 17, 47, 42)
        start, end = validation.interval(
            'start_date', '2026-11-24 17:47', 'end_date', '2026-11-24 18:47',
            now, DAY, DAY)
        self.assertEqual((now, datetime.datetime(2026, 11, 24, 18, 47)),
                         (start, end))
        message = self.assertRefused(
            'start_date', validation.interval, 'start_date',
            '2026-11-24 17:46', 'end_date', '2026-11-24 18:47', now, DAY,
            DAY)
        self.assertIn('is in the past', message)

    def test_characters_that_are_no_part_of_a_date(self):
        for text in ('2026-12-01 10:00\x00', '2026-12-01 10:00\n',
                     '2026-12-01\t10:00', '２０２６-12-01 10:00',
                     '2026-12-01 10:00 UTC', ''):
            self.assertRefused('end', validation.parse_time, 'end', text)

    def test_wrong_types(self):
        for value in (5, [], {}, None, True, 1.5):
            self.assertRefused('start_date', validation.parse_time,
                               'start_date', value)

    def test_good_dates(self):
        self.assertEqual(datetime.datetime(2026, 12, 1, 10),
                         validation.parse_time('d', '2026-12-01T12:00+02:00'))
        self.assertEqual(datetime.datetime(2026, 12, 1, 10),
                         validation.parse_time('d', ' 2026-12-1 10:00'))
        self.assertEqual(datetime.datetime(2026, 12, 1, 10),
                         validation.parse_time('d', '2026-12-01T10:00:00z'))


class DepthTest(RefusedTest):

    def test_deep_json_text(self):
        for depth in (33, 2000, 100000):
            message = self.assertRefused('body', validation.load_json,
                                         'body', nested(depth))
            self.assertIn('nested', message)

    def test_deep_values(self):
        value = 'x'
        for _ in range(5000):
            value = {'a': [value]}
        self.assertRefused('lease_params', validation.check,
                           leases.LEASE_PARAMS, value, 'lease_params')

    def test_shallow_enough(self):
        self.assertEqual([[['x']]], validation.load_json('b', nested(3)))

    def test_hint_of_deep_lists(self):
        hint = nested(2000, inner='')
        self.assertEqual(4000, len(hint))
        self.assertRefused('lease_params', params.lease_request,
                           {'lease_params': hint}, NOW, DAY, DAY)

    def test_requirements_of_1200_nested_ands(self):
        text = '["and", ' * 1200 + '["=", "$a", 1]' + ']' * 1200
        self.assertRaises(exception.InvalidRequirements, properties.parse,
                          text)
        self.assertRefused('reservations[0].hypervisor_properties', create,
                           flavor_lease(reservations=[{
                               'resource_type': 'physical:host', 'min': 1,
                               'max': 1,
                               'hypervisor_properties': text[:4096]}]))


class UnstorableTest(RefusedTest):

    def test_lone_surrogate(self):
        self.assertRefused('body', validation.load_json, 'body',
                           '{"name": "\\ud800"}')

    def test_numbers_json_does_not_have(self):
        for text in ('{"a": NaN}', '{"a": Infinity}', '[-Infinity]'):
            self.assertRefused('body', validation.load_json, 'body', text)

    def test_bad_utf8(self):
        self.assertRefused('body', validation.load_json, 'body',
                           b'{"name": "\xff\xfe"}')

    def test_four_byte_characters_are_fine(self):
        values, _, _ = create(flavor_lease(name='l\U0001F600 夜'))
        self.assertEqual('l\U0001F600 夜', values['name'])


class LeaseBodyTest(RefusedTest):
    """Each shape problem names its field."""

    def test_a_list_or_object_where_one_value_goes(self):
        cases = [
            (flavor_lease(reservations=[{'resource_type': ['physical:host'],
                                         'min': 1}]),
             'reservations[0].resource_type'),
            (flavor_lease(name={'a': 1}), 'name'),
            (flavor_lease(reservations=[{
                'resource_type': 'physical:host', 'min': 1, 'max': 1,
                'hypervisor_properties': '[["x"], "$vcpus", "4"]'}]),
             'reservations[0].hypervisor_properties'),
            (flavor_lease(reservations=[{
                'resource_type': 'flavor:instance', 'flavor_id': ['1'],
                'amount': 1}]), 'reservations[0].flavor_id'),
            (flavor_lease(reservations=[{
                'resource_type': 'flavor:instance', 'flavor_id': '1',
                'amount': {'n': 1}}]), 'reservations[0].amount'),
            (flavor_lease(start_date=['now']), 'start_date'),
            (flavor_lease(reservations={}), 'reservations'),
            (flavor_lease(reservations=[[]]), 'reservations[0]'),
            ([], 'lease'),
            ('lease', 'lease'),
        ]
        for body, field in cases:
            self.assertRefused(field, create, body)

    def test_unknown_and_missing_fields(self):
        self.assertIn('unknown field', self.assertRefused(
            'colour', create, flavor_lease(colour='red')))
        body = flavor_lease()
        del body['end_date']
        self.assertIn('Missing parameter end_date',
                      self.assertRefused('end_date', create, body))
        self.assertRefused('reservations[0].min', create, flavor_lease(
            reservations=[{'resource_type': 'flavor:instance',
                           'flavor_id': '1', 'amount': 1, 'min': 1}]))

    def test_control_characters_and_sizes(self):
        self.assertRefused('name', create, flavor_lease(name='a\x00b'))
        self.assertRefused('name', create, flavor_lease(name='x' * 256))
        self.assertRefused('name', create, flavor_lease(name=' '))
        self.assertRefused('reservations', create, flavor_lease(
            reservations=flavor_lease()['reservations'] * 11))

    def test_numbers_as_the_cli_sends_them(self):
        values, requests, _ = bodies.lease(
            flavor_lease(reservations=[{'resource_type': 'physical:host',
                                        'min': '1', 'max': 2}]),
            NOW, 30 * DAY, 365 * DAY, lambda f: None)
        self.assertEqual((2, 1), (requests[0].count, requests[0].min_count))


class UpdateBodyTest(RefusedTest):

    class Lease:
        start_at = datetime.datetime(2026, 12, 1, 10)
        end_at = datetime.datetime(2026, 12, 1, 12)

    def update(self, body):
        return bodies.update(body, self.Lease, NOW, 30 * DAY, 365 * DAY,
                             lambda f: None)

    def test_wrong_types(self):
        for body, field in (({'start_date': 5}, 'start_date'),
                            ({'start_date': []}, 'start_date'),
                            ({'end_date': {}}, 'end_date'),
                            ({'reservations': {}}, 'reservations'),
                            ({'reservations': [{'id': ['x']}]},
                             'reservations[0].id'),
                            ({'reservations': [{'id': 'x'}]},
                             'reservations[0].id'),
                            ({'reservations': [{
                                'id': '5a3a0c8e-4d0c-4b0e-9c9e-2b1b7c0e1f00',
                                'flavor_id': '1'}]},
                             'reservations[0].flavor_id'),
                            ({}, 'lease'), ([], 'lease')):
            self.assertRefused(field, self.update, body)

    def test_a_change(self):
        values, growth = self.update({'name': 'new', 'reservations': []})
        self.assertEqual({'name': 'new'}, values)
        self.assertEqual([], growth)


class HostBodyTest(RefusedTest):

    def test_capabilities(self):
        check = validation.check
        self.assertRefused('name', check, hosts.CREATE, {})
        self.assertRefused('gpu', check, hosts.CREATE,
                           {'name': 'n', 'gpu': ['x']})
        self.assertRefused('vcpus', check, hosts.CREATE,
                           {'name': 'n', 'vcpus': 4})
        self.assertRefused('k' * 64, check, hosts.CREATE,
                           {'name': 'n', 'k' * 65: 'v'})
        self.assertRefused('body', check, hosts.UPDATE_FLAT, {})
        self.assertRefused('values.gpu', check, hosts.UPDATE_VALUES,
                           {'values': {'gpu': {'a': 1}}})
        self.assertEqual({'name': 'n', 'gpu': 'a100'}, check(
            hosts.CREATE, {'name': 'n', 'gpu': 'a100'}))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() |
    st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) |
    st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20)
FIELDS = st.sampled_from(['name', 'start', 'end', 'on_end', 'before_end'])


class FuzzTest(unittest.TestCase):
    """Whatever the hint holds, the answer is a lease or an InvalidParam."""

    @hypothesis.settings(max_examples=400, deadline=None)
    @hypothesis.given(st.dictionaries(FIELDS | st.text(max_size=8), JSON,
                                      max_size=6) | JSON)
    def test_lease_params(self, value):
        for hint in (value, json.dumps(value)):
            try:
                params.lease_request({'lease_params': hint}, NOW, DAY,
                                     365 * DAY)
            except exception.InvalidParam as e:
                self.assertTrue(str(e).startswith(e.field + ': '))

    @hypothesis.settings(max_examples=400, deadline=None)
    @hypothesis.given(JSON)
    def test_lease_bodies(self, value):
        for body in (value, flavor_lease(reservations=[value]),
                     flavor_lease(start_date=value)):
            try:
                create(body)
            except exception.InvalidParam as e:
                self.assertTrue(str(e).startswith(e.field + ': '))
