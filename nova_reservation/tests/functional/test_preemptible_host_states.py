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

"""Preemptible boots after a multi-create that Nova's scheduler placed
half way: the nodes it counted on its host states, then gave back, take
the next boots (the filter leaves a node with no promise to Placement).
"""

from nova_reservation.tests.functional import base


class HostStateTest(base.BootTestCase):

    def test_nodes_a_failed_multi_create_counted_take_the_next_boots(self):
        # Three servers for two nodes: Nova's scheduler counts the first
        # two on its host states, then gives back their claims; nothing
        # is built.
        body = self.boot_body(count=3)
        body['os:scheduler_hints'] = {'preemptible': 'true'}
        resp = self.post(body)
        self.assertEqual(202, resp.status, resp.content)
        failed = [s['id'] for s in self.admin_api.get_servers(search_opts={
            'all_tenants': 1})]
        self.assertEqual(3, len(failed))
        for uuid in failed:
            self._wait_for_state_change(self.admin_api.get_server(uuid),
                                        'ERROR')
            self.admin_api.delete_server(uuid)
            self.wait_gone(uuid)
        spots = []
        for name in ('spot1', 'spot2'):
            resp = self.cloud.boot(name, base.ONE_PER_NODE,
                                   {'preemptible': 'true'})
            self.assertEqual(202, resp.status, resp.content)
            spots.append(resp.body['server']['id'])
        self.assertEqual({'host1', 'host2'},
                         {self.node_of(u) for u in spots})
