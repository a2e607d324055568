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

"""Leases of bare-metal nodes in Ironic's shape: nodes of one nova-compute
service, each with one unit of its class and no vCPU, RAM or disk.  A
lease of N gold nodes of a bare-metal flavor takes N gold nodes, never a
silver one, and a boot into it lands on one of them; a host reservation
selects nodes by their traits and capabilities as Blazar's language has
them.
"""

import sys
import urllib.parse

from nova import context as nova_context

from devcloud import baremetal
from devcloud import nodes_driver
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE


class BareMetalFlavorTest(base.BootTestCase):
    NODES = ()

    def setUp(self) -> None:
        super().setUp()
        # The local cloud's driver of bare-metal nodes, where Nova loads
        # drivers from (as its nova-compute has it): each node reports its
        # class, as Ironic's driver does.
        sys.modules.setdefault(nodes_driver.MODULE, nodes_driver)
        self.flags(compute_driver=baremetal.DRIVER)
        self.flags(group=baremetal.DRIVER_GROUP, **baremetal.options())
        self.service = self.cloud.start_compute(baremetal.SERVICE,
                                                sorted(baremetal.NODES))
        self.assertEqual(baremetal.NODES, self.reported())
        for name, (vcpus, ram, disk, specs) in baremetal.FLAVORS.items():
            self.admin_api.post_flavor({'flavor': dict(
                name=name, id=name, vcpus=vcpus, ram=ram, disk=disk)})
            self.admin_api.post_extra_spec(name, {'extra_specs': specs})

    def reported(self) -> dict:
        """{node: its one class} as Placement has them now."""
        found = {}
        for rp in self.placement.get('/resource_providers').body[
                'resource_providers']:
            [found[rp['name']]] = self.placement.get(
                '/resource_providers/%s/inventories' % rp['uuid']).body[
                    'inventories']
        return found

    def post_lease(self, amount: int, start: float = 1):
        return self.rsv('POST', '/leases', {
            'name': 'gold', 'start_date': base.soon(start),
            'end_date': base.soon(3600), 'reservations': [{
                'resource_type': 'flavor:instance', 'flavor_id': 'bm.gold',
                'amount': amount, 'affinity': 'None'}]})

    def test_gold_nodes_are_leased_by_their_class(self):
        # Three gold nodes asked for, two exist: the silver one is no
        # gold node, whatever its vCPUs.
        resp = self.post_lease(3)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('3 x bm.gold (0 vCPU, 0 MB RAM, 0 GB disk and '
                      '%s:1 each)' % baremetal.GOLD,
                      resp.json()['error_message'])
        resp = self.post_lease(2)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        rid = lease['reservations'][0]['id']
        self.assertEqual(['bm1', 'bm2'], sorted(
            s.node for s in db_ledger.slots(STORE, rid)))
        # An ordinary boot of the flavor finds no gold node left to it.
        ordinary = self.boot(None, flavor='bm.gold', name='ordinary')
        self.assertEqual(202, ordinary.status, ordinary.content)
        self._wait_for_state_change(ordinary.body['server'], 'ERROR')
        self.wait_for_start(lease)
        resp = self.boot_into(rid, flavor='bm.gold')
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertIn(self.node_of(uuid), ('bm1', 'bm2'))
        allocation, = self.placement.get(
            '/allocations/%s' % uuid).body['allocations'].values()
        self.assertEqual({baremetal.GOLD: 1}, allocation['resources'])
        # As Ironic's driver does, the node's unit is reserved while the
        # server is on it: still the lease's, which grows into the night.
        self.service.manager.update_available_resource(
            nova_context.get_admin_context())
        [rp] = [p['uuid'] for p in self.placement.get(
            '/resource_providers?name=%s' % self.node_of(uuid)).body[
                'resource_providers']]
        self.assertEqual(1, self.placement.get(
            '/resource_providers/%s/inventories' % rp).body[
                'inventories'][baremetal.GOLD]['reserved'])
        resp = self.rsv('PUT', '/leases/%s' % lease['id'],
                        {'end_date': base.soon(7200)})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assert_invariants()

    def test_nodes_are_matched_on_their_traits_and_capabilities(self):
        for name, caps in (('bm1', {'node_type': 'gpu_rtx_6000'}),
                           ('bm3', {'node_type': 'compute'})):
            resp = self.admin_rsv('POST', '/os-hosts', dict(name=name, **caps))
            self.assertEqual(201, resp.status_code, resp.text)

        def host_lease(count: int, **wanted):
            return self.rsv('POST', '/leases', {
                'name': 'nodes', 'start_date': base.soon(2),
                'end_date': base.soon(3600), 'reservations': [dict(
                    resource_type='physical:host', min=count, max=count,
                    **wanted)]})

        # Two nodes without the gold trait are asked for: one is enrolled.
        resp = host_lease(2, hypervisor_properties=(
            '["!=", "$traits", "%s"]' % baremetal.GOLD))
        self.assertEqual(409, resp.status_code, resp.text)
        silver = host_lease(1, hypervisor_properties=(
            '["==", "$traits", "%s"]' % baremetal.SILVER))
        gpu = host_lease(1, resource_properties=(
            '["and", ["==", "$node_type", "gpu_rtx_6000"], '
            '["==", "$traits", "%s"]]' % baremetal.GOLD))
        for resp, node in ((silver, 'bm3'), (gpu, 'bm1')):
            self.assertEqual(201, resp.status_code, resp.text)
            rid = resp.json()['lease']['reservations'][0]['id']
            self.assertEqual([node], [s.node for s in db_ledger.slots(
                STORE, rid)])
        lease = gpu.json()['lease']
        self.wait_for_start(lease)
        resp = self.boot_into(lease['reservations'][0]['id'],
                              flavor='bm.gold')
        self.assertEqual(202, resp.status, resp.content)
        self.assertEqual('bm1', self.node_of(resp.body['server']['id']))
        # The gold node no one enrolled is everyone's meanwhile.
        ordinary = self._create_server(
            name='ordinary', image_uuid=base.IMAGE, flavor_id='bm.gold',
            networks='none')
        self.assertEqual('bm2',
                         ordinary['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.assert_invariants()

    def test_a_window_on_a_gold_node_leaves_the_other(self):
        # bm1 is under maintenance from soon for two hours: one gold node
        # is left meanwhile, both once the window has ended.
        resp = self.admin_rsv('POST', '/leases', {
            'name': 'window', 'start_date': base.soon(60),
            'end_date': base.soon(7200), 'reservations': [{
                'resource_type': 'maintenance', 'hosts': ['bm1'],
                'reason': 'firmware'}]})
        self.assertEqual(201, resp.status_code, resp.text)
        window = resp.json()['lease']
        self.assertEqual(409, self.post_lease(2).status_code)
        resp = self.post_lease(1)
        self.assertEqual(201, resp.status_code, resp.text)
        rid = resp.json()['lease']['reservations'][0]['id']
        self.assertEqual(['bm2'], [s.node for s in db_ledger.slots(
            STORE, rid)])
        # When two gold nodes are free for an hour: from the window's end
        # (the lease above holds bm2 for its hour).
        resp = self.rsv('GET', '/availability?' + urllib.parse.urlencode({
            'resource_type': 'flavor:instance', 'flavor_id': 'bm.gold',
            'amount': 2, 'duration': '1h'}))
        self.assertEqual(200, resp.status_code, resp.text)
        found = resp.json()['availability']
        self.assertEqual(window['end_date'], found['earliest_start'],
                         found)
        self.assert_invariants()
