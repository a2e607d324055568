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

"""Slots moved off nodes (a maintenance window's) on real Nova find the
room that servers deleted since left, which the API's cached view of the
nodes still counts: Placement does not move a node's generation when a
server's allocations go."""

from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class RelocationTest(base.SharingTestCase):

    def nodes(self, rid: str) -> list:
        return sorted(s.node for s in db_ledger.slots(STORE, rid))

    def test_a_window_moves_a_lease_where_a_deleted_server_was(self):
        # An ordinary server fills a node (one of its flavor a node).
        server = self._build_server(
            name='ordinary', image_uuid=base.IMAGE,
            flavor_id=base.ONE_PER_NODE, networks='none',
            az='nova:host1')
        server = self._wait_for_state_change(
            self.admin_api.post_server({'server': server}), 'ACTIVE')
        # A future lease, placed beside it (the API reads the nodes).
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                            'affinity': 'None'}, start=3600, minutes=120)
        rid = lease['reservations'][0]['id']
        [node] = self.nodes(rid)
        self.assertNotEqual('host1', node)
        # The server goes: host1 is free, its generation unmoved.
        self.admin_api.delete_server(server['id'])
        self._wait_until_deleted(server)

        # A window over the two other nodes: the lease moves to host1.
        others = sorted({'host2', 'host3'})
        resp = self.admin_rsv('POST', '/leases', {
            'name': 'window', 'start_date': base.soon(1800),
            'end_date': base.soon(90 * 60), 'reservations': [{
                'resource_type': 'maintenance', 'hosts': others,
                'reason': 'PSU swap'}]})
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual(['host1'], self.nodes(rid))
