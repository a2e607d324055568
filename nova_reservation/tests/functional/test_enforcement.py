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

"""Usage enforcement on real Nova: Blazar's MaxLeaseDurationFilter and
ExternalServiceFilter judge the leases of the lease API and of boots with
lease_params, against a stand-in of an operator's service on loopback
that accepts, refuses, fails, answers garbage, is slow or is not there.
"""

import concurrent.futures

import sqlalchemy as sa

from devcloud import enforcement as standin
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.tests.functional import base

STORE = db_api.Context()
OWNER = base.OWNER
EXEMPT = base.SHARED
THIRD = base.THIRD
DAY = 24 * 60


def slots() -> int:
    with db_api.get_engine().connect() as conn:
        return conn.execute(sa.text(
            'SELECT COUNT(*) FROM rsv_allocations')).scalar()


class EnforcementTest(base.BootTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.service = self.useFixture(standin.EnforcementService())
        self.flags(group='enforcement',
                   enabled_filters=['ExternalServiceFilter'],
                   external_service_base_endpoint=self.service.url,
                   external_service_token='operator-token',
                   external_service_timeout=1.0)

    def refused(self, resp, status: int, kind: str, *words: str) -> None:
        self.assertEqual(status, resp.status_code, resp.text)
        error = resp.json()
        self.assertEqual(kind, error['error_name'])
        for word in words:
            self.assertIn(word, error['error_message'])

    def assert_nothing_written(self, leases: int, slots_before: int) -> None:
        self.assertEqual((leases, slots_before),
                         (len(self.leases()), slots()))

    def test_create_asks_the_service_through_the_api_and_boots(self):
        # Accepted: Blazar's body, with the operator's token.
        body = base.flavor_lease(amount=2, name='ünïcode ☃')
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        (path, token, sent), = self.service.received
        self.assertEqual(('check-create', 'operator-token'), (path, token))
        self.assertEqual(['context', 'lease'], sorted(sent))
        self.assertEqual(('fake', OWNER), (sent['context']['user_id'],
                                           sent['context']['project_id']))
        self.assertIn('auth_url', sent['context'])
        self.assertIn('region_name', sent['context'])
        asked = sent['lease']
        self.assertEqual(('ünïcode ☃', OWNER, lease['start_date'][:16],
                          lease['end_date'][:16]),
                         (asked['name'], asked['project_id'],
                          asked['start_date'][:16], asked['end_date'][:16]))
        self.assertEqual([('flavor:instance', 2, base.ONE_PER_NODE, [])], [
            (r['resource_type'], r['amount'], r['flavor_id'],
             r['allocations']) for r in asked['reservations']])

        # Refused, or no verdict: nothing is written, the refusal says why.
        leases, held = len(self.leases()), slots()
        self.service.answer(standin.refuse('project over its budget ' +
                                           'x' * 5000))
        resp = self.rsv('POST', '/leases', base.flavor_lease())
        self.refused(resp, 403, 'EnforcementRefused',
                     'ExternalServiceFilter: project over its budget')
        self.assertEqual('ExternalServiceFilter', resp.json()['filter'])
        self.assertLess(len(resp.text), 1500)
        self.assert_nothing_written(leases, held)
        for answer, words in ((standin.GARBAGE, 'answered 200'),
                              (standin.FAILED, 'answered 500'),
                              (standin.slow(1.5), 'within 1 s'),
                              (standin.REFUSED_BARE, 'refused the lease')):
            self.service.answer(answer)
            resp = self.rsv('POST', '/leases', base.flavor_lease())
            status = 403 if answer is standin.REFUSED_BARE else 503
            self.refused(resp, status, 'EnforcementRefused' if status == 403
                         else 'EnforcementUnavailable', *words)
            self.assertNotIn('internal details', resp.text)
            self.assert_nothing_written(leases, held)

        # A boot with lease_params goes the same road.
        self.service.answer(standin.refuse('no servers on Sundays'))
        resp = self.boot(base.params(base.when(60), base.when(120)))
        self.assertEqual(403, resp.status, resp.content)
        self.assertIn(b'no servers on Sundays', resp.content)
        self.assert_nothing_written(leases, held)
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))
        self.service.answer(standin.ACCEPT)
        resp = self.boot(base.params(base.when(200), base.when(260)))
        self.assertEqual(202, resp.status, resp.content)
        asked = self.service.bodies('check-create')[-1]['lease']
        self.assertEqual([('server', 1)], [
            (r['resource_type'], r['amount']) for r in asked['reservations']])

        # Not there at all: refused, or let through when told to.
        self.flags(group='enforcement',
                   external_service_base_endpoint='http://127.0.0.1:%d/' %
                   standin.closed_port())
        resp = self.rsv('POST', '/leases', base.flavor_lease())
        self.refused(resp, 503, 'EnforcementUnavailable', 'not be reached')
        self.flags(group='enforcement', external_service_on_failure='accept')
        resp = self.rsv('POST', '/leases', base.flavor_lease(start=300,
                                                             end=360))
        self.assertEqual(201, resp.status_code, resp.text)

    def test_update_and_end_tell_the_service(self):
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                            'affinity': 'None'}, start=60, minutes=120)
        path = '/leases/%s' % lease['id']
        self.service.answer(standin.refuse('not that long'))
        resp = self.rsv('PUT', path, {'end_date': base.when(180)[:16]})
        self.refused(resp, 403, 'EnforcementRefused', 'not that long')
        self.assertEqual(lease['end_date'], self.rsv('GET', path).json()[
            'lease']['end_date'])
        sent = self.service.bodies('check-update')[-1]
        self.assertEqual(['context', 'current_lease', 'lease'], sorted(sent))
        current, new = sent['current_lease'], sent['lease']
        self.assertEqual((lease['id'], lease['id']), (current['id'],
                                                      new['id']))
        self.assertEqual(lease['end_date'][:16], current['end_date'][:16])
        self.assertEqual(base.when(180)[:10], new['end_date'][:10])
        self.assertNotEqual(current['end_date'], new['end_date'])
        # The current lease holds its slot (on a node of this cloud).
        held, = current['reservations'][0]['allocations']
        self.assertIn(held['hypervisor_hostname'], self.NODES)

        self.service.answer(standin.ACCEPT)
        resp = self.rsv('PUT', path, {'name': 'renamed'})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual('renamed',
                         self.service.bodies('check-update')[-1][
                             'lease']['name'])

        # The end is told, and a service that fails then does not hold
        # it up.
        self.service.answer(standin.FAILED)
        self.assertEqual(204, self.rsv('DELETE', path).status_code)
        self.run_engine()
        self.assertEqual('DELETED', db_leases.get(STORE, lease['id']).status)
        ended, = self.service.bodies('on-end')
        self.assertEqual((lease['id'], 'renamed'),
                         (ended['lease']['id'], ended['lease']['name']))
        self.assertIn('usage enforcement filter ExternalServiceFilter',
                      self.stdlog.logger.output)

    def test_creates_at_once_are_judged_each_on_its_own(self):
        # Each answer takes half a second, and a loaded machine may take
        # that again before the service's thread runs: the time allowed is
        # not what this test is about.
        self.flags(group='enforcement', external_service_timeout=10.0)
        self.service.decide = lambda path, body: standin.slow(
            0.5, standin.ACCEPT if body['lease']['name'].startswith('yes')
            else standin.refuse('no for %s' % body['lease']['name']))

        def create(name):
            return self.rsv('POST', '/leases', base.flavor_lease(name=name))

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(create, ['yes-1', 'no-1', 'yes-2',
                                             'no-2']))
        self.assertEqual([201, 403, 201, 403],
                         [a.status_code for a in answers])
        self.assertIn('no for no-1', answers[1].json()['error_message'])
        self.assertIn('no for no-2', answers[3].json()['error_message'])
        self.assertEqual(['yes-1', 'yes-2'], sorted(
            x.name for x in self.leases()))
        self.assertEqual(4, len(self.service.bodies('check-create')))


class MaxLeaseDurationTest(base.ReservationsTestCase):

    def test_exempt_projects_create_and_update(self):
        self.flags(group='enforcement',
                   enabled_filters=['MaxLeaseDurationFilter'],
                   max_lease_duration=2 * 3600,
                   max_lease_duration_exempt_project_ids=[EXEMPT])
        exempt = self.lease_api('e-user', EXEMPT)
        third = self.lease_api('t-user', THIRD)
        admin = self.lease_api('admin', THIRD,
                               roles=('reader', 'member', 'admin'))
        long_lease = base.flavor_lease(start=60, end=60 + 3 * 60)
        for api in (self.rsv, third, admin):
            resp = api('POST', '/leases', long_lease)
            self.assertEqual(403, resp.status_code, resp.text)
            error = resp.json()
            self.assertEqual(('EnforcementRefused', 'MaxLeaseDurationFilter'),
                             (error['error_name'], error['filter']))
            self.assertIn('10800 seconds, more than the 7200',
                          error['error_message'])
        resp = exempt('POST', '/leases', long_lease)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual([EXEMPT], [x.project_id for x in self.leases()])

        # An update is judged by the lease it leaves, for its project.
        resp = third('POST', '/leases', base.flavor_lease(start=60, end=120))
        self.assertEqual(201, resp.status_code, resp.text)
        path = '/leases/%s' % resp.json()['lease']['id']
        resp = third('PUT', path, {'end_date': base.when(60 + 121)[:16]})
        self.assertEqual(403, resp.status_code, resp.text)
        self.assertIn('MaxLeaseDurationFilter', resp.text)
        resp = third('PUT', path, {'end_date': base.when(170)[:16]})
        self.assertEqual(200, resp.status_code, resp.text)
        # The cloud-wide bound still holds for the exempt project.
        resp = exempt('POST', '/leases', base.flavor_lease(
            start=60, end=60 + 31 * DAY))
        self.assertEqual(400, resp.status_code, resp.text)
