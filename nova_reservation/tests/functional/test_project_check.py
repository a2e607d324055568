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

"""The other projects a request names (a quota's, a share's, a split's)
are looked up in Keystone (the embedded cloud's stand-in, with the service
credentials): one it does not know is refused with a 400 naming it, and a
Keystone that can not be asked refuses with a 503, unless
``project_check_on_failure`` accepts them unchecked; nothing refused is
written.
"""

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import quotas as db_quotas
from nova_reservation.tests.functional import base

STORE = db_api.Context()
SHARED, THIRD = base.SHARED, base.THIRD
UNKNOWN = '0123456789abcdef0123456789abcdef'


class ProjectCheckTest(base.SharingTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.keystone = self.cloud.keystone

    def assert_unknown(self, resp, field: str) -> None:
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual('%s: project %s is not known to Keystone'
                         % (field, UNKNOWN), resp.json()['error_message'])

    def assert_unavailable(self, resp) -> None:
        self.assertEqual(503, resp.status_code, resp.text)
        error = resp.json()
        self.assertEqual('ServiceUnavailable', error['error_name'])
        self.assertIn('Keystone could not be asked whether project',
                      error['error_message'])
        self.assertIn('try again', error['error_message'])

    def set_quota(self, project: str):
        return self.admin_rsv('PUT', '/quotas/%s' % project,
                              {'quota': {'vcpus': 4}})

    def create(self, shared_with: list):
        return self.rsv('POST', '/leases', dict(
            base.flavor_lease(amount=1, start=60, end=120),
            reservations=[{'resource_type': 'flavor:instance',
                           'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                           'shared_with': shared_with}]))

    def split(self, lease: dict, project: str):
        return self.admin_rsv('POST', '/leases/%s/split' % lease['id'], {
            'reservation_id': lease['reservations'][0]['id'], 'amount': 1,
            'project_id': project})

    def state(self, lease: dict) -> tuple:
        """What a refused change must leave as it was."""
        res, = db_leases.reservations(STORE, lease['id'])
        return (len(self.leases()), res.amount, res.shared_with)

    def test_unknown_projects_are_refused_naming_them(self):
        self.assert_unknown(self.set_quota(UNKNOWN), 'project_id')
        self.assertEqual({}, db_quotas.overrides(STORE, UNKNOWN))

        self.assert_unknown(self.create([SHARED, UNKNOWN]),
                            'reservations[0].shared_with[1]')
        self.assertEqual([], self.leases())

        lease = self.shared_lease(amount=2, start=600)
        before = self.state(lease)
        rid = lease['reservations'][0]['id']
        self.assert_unknown(self.share(lease, rid, [UNKNOWN, SHARED]),
                            'reservations[0].shared_with[0]')
        self.assert_unknown(self.split(lease, UNKNOWN), 'project_id')
        self.assertEqual(before, self.state(lease))
        # Asked of Keystone each time: an unknown project is not kept.
        self.assertEqual(4, self.keystone.asked.count(UNKNOWN))

    def test_known_projects_pass(self):
        self.assertEqual(200, self.set_quota(SHARED).status_code)
        self.assertEqual({'vcpus': 4}, db_quotas.overrides(STORE, SHARED))
        resp = self.create([SHARED, THIRD])
        self.assertEqual(201, resp.status_code, resp.text)
        lease = self.shared_lease(amount=2, start=600, shared_with=())
        rid = lease['reservations'][0]['id']
        self.assertEqual(200, self.share(lease, rid, [THIRD]).status_code)
        made = self.split(lease, SHARED)
        self.assertEqual(201, made.status_code, made.text)
        self.assertEqual(SHARED, made.json()['lease']['project_id'])
        # Found once, kept: asked of Keystone once each.
        self.assertEqual([SHARED, THIRD], sorted(self.keystone.asked))

    def test_one_token_of_the_service_user_for_a_few_projects(self):
        # Each project is one GET with the same token, not a token (and a
        # version discovery) for each.
        projects = ['project-%02d' % i for i in range(5)]
        self.keystone.projects.update(projects)
        tokens = self.keystone.tokens
        resp = self.create(projects)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual(sorted(projects), sorted(self.keystone.asked))
        self.assertLessEqual(self.keystone.tokens - tokens, 1)
        self.assertEqual(0, self.keystone.listed)

    def test_many_projects_are_one_list(self):
        # What a request costs does not grow with the projects it names.
        projects = ['project-%02d' % i for i in range(30)]
        self.keystone.projects.update(projects)
        resp = self.create(projects)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual((1, []), (self.keystone.listed, self.keystone.asked))
        # Known from the list: not asked for again.
        resp = self.create(projects[:10])
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual((1, []), (self.keystone.listed, self.keystone.asked))
        # One Keystone does not list is refused, naming it.
        resp = self.create(projects[10:20] + ['gone-project'])
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('shared_with[10]: project gone-project is not known',
                      resp.text)

    def test_a_change_checks_only_the_projects_it_adds(self):
        lease = self.shared_lease(amount=1, start=600)
        rid = lease['reservations'][0]['id']
        # SHARED is gone from Keystone since it was shared with.
        self.keystone.projects.discard(SHARED)
        del self.keystone.asked[:]
        resp = self.share(lease, rid, [SHARED, THIRD])
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([THIRD], self.keystone.asked)

    def test_keystone_failing_refuses_and_writes_nothing(self):
        lease = self.shared_lease(amount=2, start=600, shared_with=())
        before = self.state(lease)
        rid = lease['reservations'][0]['id']
        self.keystone.failing = True
        self.assert_unavailable(self.set_quota(SHARED))
        self.assertEqual({}, db_quotas.overrides(STORE, SHARED))
        self.assert_unavailable(self.create([SHARED]))
        self.assert_unavailable(self.share(lease, rid, [THIRD]))
        self.assert_unavailable(self.split(lease, SHARED))
        self.assertEqual(before, self.state(lease))
        # Without credentials, Keystone can not be asked either.
        self.keystone.failing = False
        self.flags(auth_type=None, group='reservation')
        self.assert_unavailable(self.set_quota(THIRD))
        self.assertEqual({}, db_quotas.overrides(STORE, THIRD))

    def test_accept_takes_them_unchecked_when_keystone_fails(self):
        self.flags(project_check_on_failure='accept', group='reservation')
        self.keystone.failing = True
        self.assertEqual(200, self.set_quota(UNKNOWN).status_code)
        resp = self.create([SHARED, UNKNOWN])
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual(sorted([SHARED, UNKNOWN]), resp.json()['lease'][
            'reservations'][0]['shared_with'])
        # Keystone answers again: an unknown project is refused.
        self.keystone.failing = False
        self.assert_unknown(self.set_quota(UNKNOWN), 'project_id')
