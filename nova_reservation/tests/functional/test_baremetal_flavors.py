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

"""Leases of a bare-metal flavor (one unit of a node's class, none of the
standard ones) on the nodes of one nova-compute service, as Ironic's are:
a lease of N gold nodes takes N gold nodes, never a silver one, and a
boot into it lands on one of them.
"""

import sys

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
        self.cloud.start_compute(baremetal.SERVICE, sorted(baremetal.NODES))
        self.assertEqual(baremetal.NODES, self.reported())
        for name, (vcpus, ram, disk, specs) in baremetal.FLAVORS.items():
            self.admin_api.post_flavor({'flavor': dict(
                name=name, id=name, vcpus=vcpus, ram=ram, disk=disk)})
            self.admin_api.post_extra_spec(name, {'extra_specs': specs})

    def reported(self) -> dict:
        """{node: its bare-metal class} as Placement has them now."""
        found = {}
        for rp in self.placement.get('/resource_providers').body[
                'resource_providers']:
            for rc in self.placement.get('/resource_providers/%s/'
                                         'inventories' % rp['uuid']).body[
                    'inventories']:
                if rc.startswith('CUSTOM_BAREMETAL_'):
                    found[rp['name']] = rc
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
