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

"""Boots at once into one capacity reservation on the local cloud
(MariaDB, several nova-api threads): exactly as many as it holds get in,
the others are refused, none is a 5xx, and the slots end up bound to the
servers that exist.
"""

from concurrent import futures
import json
import threading

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

SLOTS = 5
BOOTS = 20


class ParallelBootsTest(base.CloudTestCase):

    def test_20_boots_into_5_slots(self):
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        image = self.image_ref()
        lease = self.openstack(
            'alice', 'reservation', 'lease', 'create', '--end-date',
            base.minutes(30), '--reservation',
            'resource_type=flavor:instance,flavor_id=%s,amount=%d'
            % (flavor, SLOTS), 'race-' + self.suffix)
        self.addCleanup(self.delete_lease, lease['id'])
        # The CLI prints the reservations as JSON text.
        rid = json.JSONDecoder().raw_decode(lease['reservations'])[0]['id']
        self.wait_for_lease('the lease to start', lease['id'],
                            lambda x: x and x['status'] == 'ACTIVE',
                            timeout=120)
        session = base.CLOUD.session('alice')
        gate = threading.Barrier(BOOTS)

        def boot(i):
            gate.wait()
            # Up to 20 boots queue for nova-api's 8 threads and Neutron's
            # on a machine the other suites load: minutes, not seconds.
            resp = session.post(cloud.url('nova') + '/servers', json={
                'server': dict(name='race-%d-%s' % (i, self.suffix),
                               flavorRef=flavor, imageRef=image,
                               networks='auto'),
                'os:scheduler_hints': {'reservation': rid}},
                headers={'OpenStack-API-Version': 'compute 2.91'},
                raise_exc=False, timeout=300)
            if resp.status_code == 202:
                self.addCleanup(self.delete_server,
                                resp.json()['server']['id'])
            return resp.status_code
        with futures.ThreadPoolExecutor(BOOTS) as pool:
            codes = list(pool.map(boot, range(BOOTS)))
        self.assertEqual(SLOTS, codes.count(202), codes)
        self.assertEqual(BOOTS - SLOTS, codes.count(409), codes)

        def bound():
            rows = self.store('SELECT instance_uuid FROM rsv_allocations '
                              'WHERE reservation_id = %s AND deleted = 0',
                              rid)
            servers = {s['id'] for s in self.named(
                'race-.*-%s$' % self.suffix)}
            return len(servers) == SLOTS and {
                r['instance_uuid'] for r in rows} == servers
        self.wait_for('the slots bound to the servers', bound, timeout=120)
