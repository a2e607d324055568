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

"""Reservation quotas on real Nova: leases and changes refused past a
limit, given back by a shrink or a delete, per project, for boots with
lease_params too, and two creates at once for the last of a quota."""

import concurrent.futures
import datetime

from nova_reservation.db import api as db_api
from nova_reservation.tests.functional import base

OWNER = base.OWNER
# A whole month ahead: the figures of one month, whatever today is.
FIRST = (db_api.utcnow().replace(day=1, hour=0, minute=0, second=0,
                                 microsecond=0) +
         datetime.timedelta(days=64)).replace(day=10)


def at(hours: float) -> str:
    return (FIRST + datetime.timedelta(hours=hours)).strftime(
        '%Y-%m-%d %H:%M')


def capacity(amount: int, start: float, end: float, name='q') -> dict:
    return {'name': name, 'start_date': at(start), 'end_date': at(end),
            'events': [], 'reservations': [{
                'resource_type': 'flavor:instance',
                'flavor_id': base.ONE_PER_NODE, 'amount': amount,
                'affinity': 'None'}]}


class QuotaTest(base.SharingTestCase):

    def quota(self, project=OWNER, api=None) -> dict:
        resp = (api or self.rsv)('GET', '/quotas/%s' % project)
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()['quota']

    def set_quota(self, project=OWNER, **limits) -> None:
        resp = self.admin_rsv('PUT', '/quotas/%s' % project,
                              {'quota': limits})
        self.assertEqual(200, resp.status_code, resp.text)

    def create(self, body, api=None, status=201):
        resp = (api or self.rsv)('POST', '/leases', body)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp.json()

    def change(self, lease, body, status):
        resp = self.rsv('PUT', '/leases/%s' % lease['id'], body)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp.json()

    def names(self, project=OWNER) -> list:
        return sorted(x.name for x in self.leases()
                      if x.project_id == project and x.status != 'DELETING')

    def test_limits_refuse_past_them_and_give_back(self):
        # m1.medium: 2 vCPUs.  The cloud's default, then a project's own.
        self.flags(quota_vcpus=4, group='reservation')
        self.assertEqual({'limit': 4, 'source': 'default', 'in_use': 0,
                          'peak_at': None}, self.quota()['vcpus'])
        self.set_quota(vcpus=2)
        first = self.create(capacity(1, 0, 2, 'first'))['lease']
        refused = self.create(capacity(1, 1, 3, 'over'), status=403)
        self.assertEqual(('QuotaExceeded', 'vcpus', 2, 2, 2, at(1) + ':00'),
                         (refused['error_name'], refused['quota'],
                          refused['limit'], refused['in_use'],
                          refused['requested'], refused['at']))
        self.assertIn('project %s may reserve at most 2 (vcpus)' % OWNER,
                      refused['error_message'])
        self.assertEqual(['first'], self.names())
        # Back to back is not at once.
        second = self.create(capacity(1, 2, 4, 'second'))['lease']
        shown = self.quota()
        self.assertEqual((2, 'project', at(0) + ':00', 4096),
                         (shown['vcpus']['in_use'], shown['vcpus']['source'],
                          shown['vcpus']['peak_at'],
                          shown['memory_mb']['in_use']))
        self.assertEqual(2 * 4, shown['vcpu_hours_per_month']['months'][
            FIRST.strftime('%Y-%m')])

        # A growth: refused, unchanged.
        grown = self.change(first, {'reservations': [{
            'id': first['reservations'][0]['id'], 'amount': 2}]}, 403)
        self.assertEqual('QuotaExceeded', grown['error_name'])
        kept = self.rsv('GET', '/leases/%s' % first['id']).json()['lease']
        self.assertEqual((first['end_date'], 1), (
            kept['end_date'], kept['reservations'][0]['amount']))

        # Another project has the default.
        self.create(capacity(2, 10, 12, 'third'), api=self.third_rsv)
        self.create(capacity(1, 11, 13, 'third more'), api=self.third_rsv,
                    status=403)

        # A delete gives back.
        self.create(capacity(1, 1, 3, 'over'), status=403)
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s' % first[
            'id']).status_code)
        self.create(capacity(1, 0, 2, 'again'))

        # Below a limit lowered under its use: a shrink and a rename pass,
        # a growth does not.
        self.set_quota(vcpus=0, vcpu_hours_per_month=1)
        self.change(second, {'end_date': at(3)}, 200)
        self.change(second, {'name': 'renamed'}, 200)
        self.change(second, {'end_date': at(3.5)}, 403)
        self.set_quota(vcpus=None, vcpu_hours_per_month=None)
        self.assertEqual((4, 'default'), (self.quota()['vcpus']['limit'],
                                          self.quota()['vcpus']['source']))
        self.assertEqual(['again', 'renamed'], self.names())

    def test_month_hosts_and_boots_with_lease_params(self):
        # Whole hosts: two of the three nodes are reservable.
        self.flags(quota_hosts=1, group='reservation')
        for node in self.NODES[1:]:
            resp = self.admin_rsv('POST', '/os-hosts', {'name': node})
            self.assertEqual(201, resp.status_code, resp.text)
        host = {'name': 'h', 'start_date': at(100), 'end_date': at(102),
                'reservations': [{'resource_type': 'physical:host',
                                  'min': 1, 'max': 2}]}
        refused = self.create(host, status=403)
        self.assertEqual(('hosts', 1, 0, 2), (
            refused['quota'], refused['limit'], refused['in_use'],
            refused['requested']))
        host['reservations'][0]['max'] = 1
        self.create(host)
        self.assertEqual(1, self.quota()['hosts']['in_use'])

        # vCPU-hours in a month; a host counts with all of its vCPUs.
        self.flags(quota_hosts=-1, quota_vcpu_hours_per_month=30,
                   group='reservation')
        used = self.quota()['vcpu_hours_per_month']['months'][
            FIRST.strftime('%Y-%m')]
        self.assertGreater(used, 0)
        self.flags(quota_vcpu_hours_per_month=used + 10, group='reservation')
        lease = self.create(capacity(1, 0, 4))['lease']    # 8 vCPU-hours
        refused = self.create(capacity(1, 24, 26), status=403)
        self.assertEqual(('vcpu_hours_per_month', FIRST.strftime('%Y-%m'),
                          used + 8, 4), (refused['quota'], refused['at'],
                                         refused['in_use'],
                                         refused['requested']))
        self.assertIn('vCPU-hours reserved in month', refused['error_message'])
        # An extension past it too; next month is another month.
        self.change(lease, {'end_date': at(6)}, 403)
        self.change(lease, {'end_date': at(5)}, 200)
        self.create(capacity(1, 24 * 40, 24 * 40 + 4))

        # A boot whose lease would pass it: refused by nova-api, nothing
        # made.
        servers = len(self.api.get_servers())
        leases = len(self.leases())
        resp = self.boot(base.params(at(48), at(50)))
        self.assertEqual(403, resp.status, resp.content)
        self.assertIn('Quota exceeded', str(resp.content))
        self.assertEqual((servers, leases), (len(self.api.get_servers()),
                                             len(self.leases())))

    def test_two_creates_for_the_last_of_a_quota(self):
        self.set_quota(vcpus=2)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(
                lambda name: self.rsv('POST', '/leases', capacity(
                    1, 0, 2, name)).status_code, ('a', 'b')))
        self.assertEqual([201, 403], sorted(answers))
        self.assertEqual(1, len(self.names()))
