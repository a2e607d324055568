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

"""The availability search for whole hosts (the capacity types are in
gabbits/availability.yaml): the enrolled hosts that meet the requirements,
around the host leases that hold them.
"""

import urllib.parse

from nova_reservation.tests.functional import base


class HostAvailabilityTest(base.ReservationsTestCase):
    NODES = ('host1', 'host2', 'host3')

    def search(self, **query) -> dict:
        resp = self.rsv('GET', '/availability?' + urllib.parse.urlencode(
            dict(resource_type='physical:host', **query)))
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()['availability']

    def test_hosts_are_free_around_the_host_lease(self):
        for name, gpu in (('host2', 'yes'), ('host3', 'no')):
            resp = self.admin_rsv('POST', '/os-hosts', {'name': name,
                                                        'gpu': gpu})
            self.assertEqual(201, resp.status_code, resp.text)
        lease = self.lease({'resource_type': 'physical:host', 'min': 2,
                            'max': 2}, start=3600, minutes=120)
        after, before = base.soon(600), base.soon(5 * 3600)
        # One host, for half an hour: before the lease starts, or once it
        # has ended.
        found = self.search(min=1, duration='30m', after=after,
                            before=before)
        self.assertEqual(2, len(found['windows']), found)
        first, second = found['windows']
        self.assertEqual(found['after'], first['earliest'])
        self.assertEqual(lease['end_date'], second['earliest'])
        self.assertEqual(found['before'], second['latest'])
        # The first window's last start ends as the lease starts.
        self.assertLess(first['latest'], lease['start_date'])
        self.assertEqual(first['earliest'], found['earliest_start'])
        # Three hosts never fit (two are enrolled), nor requirements no
        # host meets.
        self.assertEqual([], self.search(min=3, duration='30m')['windows'])
        self.assertEqual([], self.search(
            min=1, duration='30m',
            resource_properties='["==", "$gpu", "maybe"]')['windows'])
        self.assertEqual(found['windows'], self.search(
            min=1, duration='30m', after=after, before=before,
            resource_properties='["==", "$gpu", "yes"]')['windows'])

    def test_a_bad_requirement_is_a_400_that_names_it(self):
        resp = self.rsv('GET', '/availability?resource_type=physical:host&'
                        'min=1&duration=1h&hypervisor_properties=%5B')
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('hypervisor_properties', resp.json()['error_message'])
