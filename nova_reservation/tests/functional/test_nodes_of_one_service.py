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

"""Several compute nodes behind one nova-compute service, as Ironic's bare
metal nodes are: the ledger counts each node as a node (its own provider
in Placement), and a capacity lease's slots and servers go to the nodes,
not to their service.
"""

from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE
BARE_METAL = ('bm1', 'bm2', 'bm3')


class NodesOfOneServiceTest(base.BootTestCase):
    NODES = ()
    SERVICES = {'conductor-bm': BARE_METAL}

    def test_the_cloud_has_three_nodes_of_one_service(self):
        hypervisors = self.admin_api.api_get(
            '/os-hypervisors/detail').body['hypervisors']
        self.assertEqual(
            [(n, 'conductor-bm') for n in BARE_METAL],
            sorted((h['hypervisor_hostname'], h['service']['host'])
                   for h in hypervisors))
        roots = self.placement.get('/resource_providers', version='1.14'
                                   ).body['resource_providers']
        self.assertEqual(list(BARE_METAL), sorted(
            p['name'] for p in roots
            if p['uuid'] == p['root_provider_uuid']))

    def test_a_capacity_lease_takes_nodes_not_their_service(self):
        # One server a node: three slots on the three nodes, and the
        # calendar shows each node.
        rid = self.running_lease(3)
        self.assertEqual(list(BARE_METAL), sorted(
            s.node for s in db_ledger.slots(STORE, rid)))
        resp = self.admin_rsv('GET', '/ledger')
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(list(BARE_METAL), [n['name'] for n in resp.json()[
            'ledger']['nodes']])
        uuids = [self.boot_into(rid, name='vm%d' % i).body['server']['id']
                 for i in range(3)]
        self.assertEqual(list(BARE_METAL),
                         sorted(self.node_of(u) for u in uuids))
        self.assertEqual(set(BARE_METAL), set(self.bound(rid).values()))
        # The fourth has no slot.
        resp = self.boot_into(rid, name='vm4')
        self.assertEqual(409, resp.status, resp.content)
        self.assertIn('0 of its 3 slots are free', resp.content.decode())
