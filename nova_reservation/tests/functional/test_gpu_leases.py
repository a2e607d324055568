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

"""Leases of a flavor that asks for a class of its node's own provider (a
GPU that a provider config file gives a node, as an operator describes
devices no driver reports): each GPU is promised once, a boot into the
lease gets one there, and an ordinary boot never takes a promised one
while a boot of CPU alone still lands beside them.
"""

import os
import time

from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures
from oslo_utils import uuidutils

from devcloud import accelerators
from nova_reservation.db import ledger as db_ledger
from nova_reservation.filters import reservation_filter
from nova_reservation.tests.functional import base

STORE = base.STORE
GPU = accelerators.A100


class GPUNodeTestCase(base.BootTestCase):
    # One node, with two GPUs: every boot goes there or nowhere.
    NODES = ()

    def setUp(self) -> None:
        super().setUp()
        where = self.useFixture(base.fixtures.TempDir()).path
        with open(os.path.join(where, 'gpus.yaml'), 'w') as f:
            f.write(accelerators.provider_config({GPU: 2}))
        self.flags(provider_config_location=where, group='compute')
        self.cloud.start_compute('gpu1')
        for name, gpus in (('g1.a100', 1), ('g2.a100', 2)):
            self.admin_api.post_flavor({'flavor': dict(
                name=name, id=name, vcpus=1, ram=512, disk=1)})
            self.admin_api.post_extra_spec(name, {'extra_specs': {
                'resources:' + GPU: str(gpus)}})
        self.admin_api.post_flavor({'flavor': dict(
            name='cpu', id='cpu', vcpus=1, ram=512, disk=1)})

    def post_lease(self, amount: int, start: float = 3600,
                   minutes: int = 60, flavor: str = 'g1.a100'):
        return self.rsv('POST', '/leases', {
            'name': 'gpus', 'start_date': base.soon(start),
            'end_date': base.soon(start + minutes * 60),
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': flavor, 'amount': amount,
                              'affinity': 'None'}]})

    def extras(self, lease: dict) -> list:
        return sorted(db_ledger.extras_value(s.extras)
                      for s in db_ledger.slots(
                          STORE, lease['reservations'][0]['id']))


class GPULeaseTest(GPUNodeTestCase):

    def test_each_gpu_is_promised_once(self):
        resp = self.post_lease(2)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual([(((('', GPU), 1),)), (((('', GPU), 1),))],
                         self.extras(resp.json()['lease']))
        # A third GPU over the same hour: none left, and the refusal says
        # when one is.
        resp = self.post_lease(1, start=3700)
        self.assertEqual(409, resp.status_code, resp.text)
        message = resp.json()['error_message']
        self.assertIn('1 x g1.a100 (1 vCPU, 512 MB RAM, 1 GB disk and %s:1 '
                      'each)' % GPU, message)
        self.assertIn('the earliest start that fits is', message)
        # CPU alone fits beside them; a GPU once the lease has ended.
        self.assertEqual(201, self.post_lease(1, flavor='cpu').status_code)
        self.assertEqual(201, self.post_lease(1, start=7300).status_code)
        # The calendar counts no free GPU in that hour.
        resp = self.rsv('GET', '/ledger?after=%s&before=%s' % (
            base.soon(3700), base.soon(3800)))
        self.assertEqual(200, resp.status_code, resp.text)
        free = {f['flavor_id']: f['steps'][0]['count']
                for f in resp.json()['ledger']['free']}
        self.assertEqual(0, free['g1.a100'])

    def test_a_boot_into_the_lease_gets_its_gpu(self):
        rid = self.running_lease(1, flavor='g1.a100')
        # More GPUs than the slot holds: refused by name.
        resp = self.boot_into(rid, flavor='g2.a100')
        self.assertEqual(400, resp.status, resp.content)
        self.assertEqual('flavorRef: the flavor asks for %s:2; the reserved '
                         'slots hold %s:1' % (GPU, GPU),
                         resp.body['badRequest']['message'])
        resp = self.boot_into(rid, flavor='g1.a100')
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertEqual('gpu1', self.node_of(uuid))
        allocation, = self.placement.get(
            '/allocations/%s' % uuid).body['allocations'].values()
        self.assertEqual(1, allocation['resources'][GPU])
        self.assertEqual({uuid: 'gpu1'}, self.bound(rid))
        # The lease's server uses the GPU it was promised, not another:
        # the second is an ordinary boot's, and then none is. (The
        # scheduler's copy of the ledger may be `ledger_max_age` old: one
        # that does not know the server yet counts its GPU twice, and
        # keeps the boot off.)
        self.flags(ledger_max_age=0, group='reservation')
        first = self.boot(None, flavor='g1.a100', name='ordinary')
        self.assertEqual('gpu1', self.node_of(first.body['server']['id']))
        second = self.boot(None, flavor='g1.a100', name='none-left')
        self._wait_for_state_change(second.body['server'], 'ERROR')

    def test_an_ordinary_boot_takes_no_promised_gpu(self):
        # One GPU promised from an hour on: one left for ordinary boots
        # (an ordinary server has no end).
        self.assertEqual(201, self.post_lease(1).status_code)
        first = self.boot(None, flavor='g1.a100', name='free-gpu')
        self.assertEqual(202, first.status, first.content)
        self.assertEqual('gpu1', self.node_of(first.body['server']['id']))
        second = self.boot(None, flavor='g1.a100', name='promised-gpu')
        self.assertEqual(202, second.status, second.content)
        self._wait_for_state_change(second.body['server'], 'ERROR')
        # Nor does a boot forced to the node, past the scheduler.
        server = self._build_server(name='forced', image_uuid=base.IMAGE,
                                    flavor_id='g1.a100', networks='none')
        server['availability_zone'] = 'nova:gpu1'
        resp = self.admin_api.api_post('/servers', {'server': server},
                                       check_response_status=False)
        self.assertEqual(409, resp.status, resp.content)
        self.assertIn('gpu1 has no room for 1 vCPU, 512 MB RAM, 1 GB disk '
                      'and %s:1 that no lease has been promised' % GPU,
                      resp.body['conflictingRequest']['message'])
        # A boot of CPU alone still lands on the node.
        cpu = self.boot(None, flavor='cpu', name='cpu')
        self.assertEqual('gpu1', self.node_of(cpu.body['server']['id']))
        # A preemptible server can not borrow a promised GPU: it yields
        # only vCPU, RAM and disk.
        resp = self.boot(None, flavor='g1.a100', name='preemptible',
                         extra_hints={'preemptible': 'true'})
        self.assertEqual(400, resp.status, resp.content)
        self.assertIn('flavorRef: the flavor asks for %s:1, which a '
                      'preemptible server can not take' % GPU,
                      resp.body['badRequest']['message'])

    def test_gpu_hours_and_gpus_have_limits_of_their_own(self):
        project = base.nova_fixtures.PROJECT_ID
        limits = {GPU: 1, GPU + '_hours_per_month': 2}
        resp = self.admin_rsv('PUT', '/quotas/%s' % project,
                              {'quota': limits})
        self.assertEqual(200, resp.status_code, resp.text)
        # Two GPUs at once, then three GPU-hours: each past its limit and
        # named; vCPUs are not limited.
        for amount, minutes, name in ((2, 60, GPU),
                                      (1, 600, GPU + '_hours_per_month')):
            resp = self.post_lease(amount, start=60, minutes=minutes)
            self.assertEqual(403, resp.status_code, resp.text)
            self.assertIn('(%s)' % name, resp.json()['error_message'])
        self.assertEqual(201, self.post_lease(1, start=60).status_code)
        self.assertEqual(201, self.post_lease(
            2, start=60, minutes=600, flavor='cpu').status_code)
        quota = self.rsv('GET', '/quotas/%s' % project).json()['quota']
        self.assertEqual((1, 1, 'project'), (
            quota[GPU]['limit'], quota[GPU]['in_use'],
            quota[GPU]['source']))
        hours = quota[GPU + '_hours_per_month']
        self.assertEqual((2, 1.0), (hours['limit'],
                                    sum(hours['months'].values())))
        # A limit of vCPU, RAM or disk is named as before, not as a class.
        resp = self.admin_rsv('PUT', '/quotas/%s' % project,
                              {'quota': {'VCPU': 3}})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('VCPU', resp.json()['error_message'])

    def test_a_lease_of_more_gpus_than_the_threshold_waits_for_approval(self):
        self.flags(approval_classes={GPU: 1}, group='reservation')
        resp = self.post_lease(1)
        self.assertEqual('PENDING', resp.json()['lease']['status'])
        resp = self.post_lease(1, flavor='g2.a100', start=7300)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.assertEqual('PENDING_APPROVAL', lease['status'])
        self.assertIn('it reserves 2 %s, more than 1 (approval_classes)'
                      % GPU, lease['status_reason'])


class GPUBootsInFlightTest(GPUNodeTestCase):
    """Two schedulers, one node of two GPUs, one of them promised: a GPU
    boot that the other scheduler let onto the node and has not claimed
    yet takes the last free GPU there (as in test_boots_in_flight, whose
    boots take RAM).
    """
    # Boots are scheduled while the test goes on.
    CAST_AS_CALL = False

    def let_through(self) -> str:
        """The other scheduler filters a boot of one GPU (gpu1 passes);
        gives the server's uuid.
        """
        uuid = uuidutils.generate_uuid()
        spec = objects.RequestSpec(
            instance_uuid=uuid, project_id=nova_fixtures.PROJECT_ID,
            scheduler_hints={}, num_instances=1, image=objects.ImageMeta(
                properties=objects.ImageMetaProps()),
            flavor=objects.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                  ephemeral_gb=0, swap=0, extra_specs={
                                      'resources:' + GPU: '1'}))
        states = list(self.scheduler.manager.host_manager.
                      get_host_states_by_uuids(
                          nova_context.get_admin_context(),
                          [self._get_provider_uuid_by_host('gpu1')], spec))
        passed = reservation_filter.ReservationFilter().filter_all(
            states, spec)
        self.assertEqual(['gpu1'], [h.nodename for h in passed])
        return uuid

    def test_a_gpu_boot_in_flight_takes_the_last_free_gpu(self):
        self.flags(placement_usage_interval=0.1, boot_settle_timeout=30,
                   group='reservation')
        self.assertEqual(201, self.post_lease(1).status_code)
        other = self.let_through()
        resp = self.boot(None, flavor='g1.a100', name='second')
        self.assertEqual(202, resp.status, resp.content)
        server = resp.body['server']
        deadline = time.monotonic() + 60
        while 'waits for the boots in flight on gpu1' not in \
                self.stdlog.logger.output:
            self.assertLess(time.monotonic(), deadline, 'no wait logged')
            time.sleep(0.05)
        # The other scheduler's boot claims its GPU: none is left for
        # ordinary boots (its claim ends the wait).
        resp = self.placement.put('/allocations/%s' % other, {
            'allocations': {self._get_provider_uuid_by_host('gpu1'): {
                'resources': {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1,
                              GPU: 1}}},
            'project_id': nova_fixtures.PROJECT_ID, 'user_id': 'fake',
            'consumer_generation': None}, version='1.28')
        self.assertEqual(204, resp.status, resp.body)
        self.addCleanup(self.placement.delete, '/allocations/%s' % other)
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertIn('No valid host', server['fault']['message'])
