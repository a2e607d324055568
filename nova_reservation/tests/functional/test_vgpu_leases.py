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

"""Leases of vGPUs, a class of child providers: a node whose driver
reports two physical GPUs of two vGPUs each (as Nova's libvirt driver
reports mediated devices, one child provider per GPU) has four vGPUs to
promise, each once, whichever GPU Nova then takes a server's from; a
server of two vGPUs, which one GPU might not have, is refused by name; an
ordinary boot never takes a promised vGPU, while one of CPU alone still
lands beside them.
"""

import sys

from devcloud import accelerator_driver
from devcloud import accelerators
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE
NODE = 'vgpu1'


class VGPULeaseTest(base.BootTestCase):
    # One node, with two physical GPUs: every boot goes there or nowhere.
    NODES = ()

    def setUp(self) -> None:
        super().setUp()
        # Where Nova loads drivers from, as the local cloud's nova-compute
        # does.
        self.useFixture(base.fixtures.MonkeyPatch(
            'sys.modules', dict(sys.modules, **{
                accelerator_driver.MODULE: accelerator_driver})))
        self.flags(group=accelerators.DRIVER_GROUP, physical_gpus=2,
                   vgpus_per_gpu=2)
        self.flags(compute_driver='fake_accelerators.FakeAcceleratorDriver')
        self.cloud.start_compute(NODE)
        for name, vgpus in (('g1.vgpu', 1), ('g2.vgpu', 2)):
            self.admin_api.post_flavor({'flavor': dict(
                name=name, id=name, vcpus=1, ram=512, disk=1)})
            self.admin_api.post_extra_spec(name, {'extra_specs': {
                'resources:VGPU': str(vgpus)}})
        self.admin_api.post_flavor({'flavor': dict(
            name='cpu', id='cpu', vcpus=1, ram=512, disk=1)})

    def post_lease(self, amount: int, start: float = 3600,
                   flavor: str = 'g1.vgpu'):
        return self.rsv('POST', '/leases', {
            'name': 'vgpus', 'start_date': base.soon(start),
            'end_date': base.soon(start + 3600),
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': flavor, 'amount': amount,
                              'affinity': 'None'}]})

    def vgpus_of(self, uuid: str) -> dict:
        """{provider name: vGPUs} of a server's allocations."""
        names = {rp['uuid']: rp['name'] for rp in self.placement.get(
            '/resource_providers').body['resource_providers']}
        return {names[rp]: a['resources']['VGPU']
                for rp, a in self.placement.get(
                    '/allocations/%s' % uuid).body['allocations'].items()
                if 'VGPU' in a['resources']}

    def test_each_vgpu_of_the_node_s_gpus_is_promised_once(self):
        resp = self.post_lease(4)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual([((('', 'VGPU'), 1),)] * 4, sorted(
            db_ledger.extras_value(s.extras) for s in db_ledger.slots(
                STORE, resp.json()['lease']['reservations'][0]['id'])))
        resp = self.post_lease(1, start=3700)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('1 x g1.vgpu (1 vCPU, 512 MB RAM, 1 GB disk and '
                      'VGPU:1 each)', resp.json()['error_message'])
        # CPU alone fits beside them.
        self.assertEqual(201, self.post_lease(1, flavor='cpu').status_code)
        # Two vGPUs a server: one GPU might not have them, and Nova can
        # not be told which to take them from.
        resp = self.post_lease(1, start=9000, flavor='g2.vgpu')
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('VGPU:2', resp.json()['error_message'])

    def test_a_boot_into_the_lease_gets_a_vgpu_an_ordinary_boot_none(self):
        rid = self.running_lease(3, flavor='g1.vgpu')
        resp = self.boot_into(rid, flavor='g1.vgpu')
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertEqual(NODE, self.node_of(uuid))
        # From one of the node's physical GPUs.
        [(gpu, n)] = self.vgpus_of(uuid).items()
        self.assertEqual(1, n)
        self.assertTrue(gpu.startswith(NODE + '_pgpu'), gpu)
        self.assertEqual({uuid: NODE}, self.bound(rid))
        # Three promised of four: one left for an ordinary boot, then none
        # (the scheduler's copy of the ledger fresh, see test_gpu_leases).
        self.flags(ledger_max_age=0, group='reservation')
        first = self.boot(None, flavor='g1.vgpu', name='ordinary')
        self.assertEqual(NODE, self.node_of(first.body['server']['id']))
        second = self.boot(None, flavor='g1.vgpu', name='none-left')
        self._wait_for_state_change(second.body['server'], 'ERROR')
        # A boot of CPU alone still lands on the node.
        cpu = self.boot(None, flavor='cpu', name='cpu')
        self.assertEqual(NODE, self.node_of(cpu.body['server']['id']))
        # The lease's other two servers still get theirs.
        for i in range(2):
            resp = self.boot_into(rid, flavor='g1.vgpu', name='more%d' % i)
            self.assertEqual(202, resp.status, resp.content)
            self.assertEqual(NODE, self.node_of(resp.body['server']['id']))
