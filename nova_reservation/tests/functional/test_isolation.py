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

"""A lease's reservation belongs to its project alone."""

from oslo_utils.fixture import uuidsentinel as uuids

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.filters import reservation_filter
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class IsolationTest(base.ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        resp = self.boot(base.params('now', base.when(60)))
        self.assertEqual(202, resp.status, resp.content)
        self.server = resp.body['server']
        self.rid = self.server['reservation']['reservation_id']

    def test_other_project_can_not_boot_into_the_reservation(self):
        resp = self.boot(None, api=self.other_api,
                         extra_hints={'reservation': self.rid})
        self.assertEqual(404, resp.status, resp.content)
        self.assertEqual('reservation: %s not found' % self.rid,
                         resp.body['itemNotFound']['message'])
        self.assertEqual([], self.other_api.get_servers())

    def test_other_project_can_not_see_the_leased_server(self):
        resp = self.other_api.api_get('/servers/%s' % self.server['id'],
                                      check_response_status=False)
        self.assertEqual(404, resp.status)
        listed = self.other_api.get_servers()
        self.assertNotIn(self.server['id'], [s['id'] for s in listed])

    def test_owner_can_not_add_servers_to_a_server_lease(self):
        resp = self.boot(None, extra_hints={'reservation': self.rid})
        self.assertEqual(409, resp.status, resp.content)
        self.assertIn('reservation:', resp.body['conflictingRequest'][
            'message'])
        self.assertEqual(1, len(self.api.get_servers()))

    def test_scheduler_refuses_a_reservation_of_another_project(self):
        # Past the hook (e.g. a request spec replayed by a move), the filter
        # still holds: another project's boot with the hint lands nowhere.
        owner = db_leases.reservation(STORE, self.rid).project_id

        def spec(project, instance):
            return self.reserved_spec(self.rid, project, instance)
        hosts = self.host_states(spec(owner, None))
        flt = reservation_filter.ReservationFilter()
        self.assertEqual([], list(flt.filter_all(
            hosts, spec('other-project', uuids.other))))
        # The owner's server itself (unshelve, say) goes to its slot's node.
        self.assertEqual(1, len(list(flt.filter_all(
            hosts, spec(owner, self.server['id'])))))
        # No other server takes the slot it holds, even in the project.
        self.assertEqual([], list(flt.filter_all(
            hosts, spec(owner, uuids.another))))
