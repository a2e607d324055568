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

"""The availability command's arguments, as the API's query."""

import argparse
import datetime

import testtools

from nova_reservation.api import validation
from nova_reservation import capacity
from nova_reservation.cli import availability
from nova_reservation.cli import quotas as cli_quotas
from nova_reservation.lease import resource_types


def parsed(*argv: str):
    parser = availability.ListAvailability(None, None).get_parser('list')
    return parser.parse_args(argv)


class QueryTest(testtools.TestCase):

    def test_each_form_is_a_query_the_api_takes(self):
        now = datetime.datetime(2026, 1, 1)
        for argv, kind in (
                (('--flavor', 'm1.small', '--amount', '3', '--duration',
                  '2h', '--affinity', 'True'), resource_types.FLAVOR),
                (('--vcpus', '2', '--memory-mb', '512', '--duration', '90',
                  '--after', '2026-01-02T00:00:00Z', '--before',
                  '2026-01-03T00:00:00Z', '--limit', '5'),
                 resource_types.VIRTUAL),
                (('--min', '2', '--duration', '1d', '--resource-properties',
                  '["==", "$gpu", "yes"]'), resource_types.HOST)):
            query = availability.query(parsed(*argv), flavor_id='42')
            self.assertEqual(kind, query['resource_type'])
            self.assertTrue(all(isinstance(v, str) for v in query.values()))
            req, after, before, duration, limit = validation.availability(
                query, now, 10 ** 8, 0, 10 ** 8,
                lambda flavor_id: capacity.Need(
                    capacity.Resources(1, 512, 1)))
            self.assertEqual(kind, req.resource_type)

    def test_a_host_search_sends_no_server_fields(self):
        query = availability.query(parsed('--min', '1', '--duration', '1h',
                                          '--affinity', 'True'))
        self.assertEqual({'resource_type': 'physical:host', 'min': '1',
                          'duration': '1h'}, query)

    def test_one_kind_of_reservation_is_required(self):
        self.assertRaises(SystemExit, parsed, '--duration', '1h')
        self.assertRaises(SystemExit, parsed, '--flavor', 'x', '--min', '1',
                          '--duration', '1h')


class QuotaCommandTest(testtools.TestCase):

    def test_limits_as_given_on_the_command_line(self):
        self.assertEqual([12, -1, -1, None, 0], [
            cli_quotas.limit(x) for x in ('12', '-1', 'unlimited', 'default',
                                          '0')])
        for bad in ('-2', 'x', '1.5', ''):
            self.assertRaises(argparse.ArgumentTypeError, cli_quotas.limit,
                              bad)

    def test_rows(self):
        item = {'limit': -1, 'source': 'default', 'in_use': 0,
                'peak_at': None}
        view = {'vcpus': dict(item, limit=8, source='project', in_use=4,
                              peak_at='2026-12-10 10:00:00'),
                'memory_mb': item, 'hosts': item,
                'vcpu_hours_per_month': {'limit': 100, 'source': 'tag',
                                         'in_use': 12.5,
                                         'month': '2026-12'}}
        self.assertEqual([
            ('vcpus', 8, 'project', 4, '2026-12-10 10:00:00'),
            ('memory_mb', 'unlimited', 'default', 0, ''),
            ('hosts', 'unlimited', 'default', 0, ''),
            ('vcpu_hours_per_month', 100, 'tag', 12.5, '2026-12')],
            cli_quotas.rows(view))

    def test_a_class_s_limits(self):
        self.assertEqual(('CUSTOM_GPU_A100_hours_per_month', 500),
                         cli_quotas.class_limit(
                             'CUSTOM_GPU_A100_hours_per_month=500'))
        self.assertEqual(('PCPU', None), cli_quotas.class_limit(
            'PCPU=default'))
        for bad in ('PCPU', '=3', 'PCPU=x'):
            self.assertRaises(argparse.ArgumentTypeError,
                              cli_quotas.class_limit, bad)
        item = {'limit': -1, 'source': 'default', 'in_use': 0}
        view = {'project_id': 'p', 'vcpus': item, 'memory_mb': item,
                'hosts': item, 'vcpu_hours_per_month': item,
                'PCPU': dict(item, limit=4, source='project', in_use=2,
                             peak_at='2026-12-10 10:00:00')}
        self.assertEqual(('PCPU', 4, 'project', 2, '2026-12-10 10:00:00'),
                         cli_quotas.rows(view)[-1])
