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

"""Faults on the local cloud: nova-api killed (kill -9) in the middle of
boots with lease_params.  Whatever was in flight, once the engines'
reconciler has run: no lease left CREATING, no server without a live lease,
no slot held for a boot or a server that does not exist.
"""

from concurrent import futures
import time

import testtools
from testtools import content  # noqa: F401 (testtools.content)

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

BOOTS = 24


class NovaAPIKilledTest(base.CloudTestCase):
    # It kills the nova-api every lane's tests use.
    ALONE = True

    def boot(self, i: int, image: str, flavor: str):
        name = 'kill-%d-%s' % (i, self.suffix)
        try:
            return base.CLOUD.session('alice').post(
                cloud.url('nova') + '/servers', json={
                    'server': dict(name=name, flavorRef=flavor,
                                   imageRef=image, networks='auto'),
                    'os:scheduler_hints': {'lease_params': base.lease_params(
                        name, base.utc(3600), base.utc(7200))}},
                headers={'OpenStack-API-Version': 'compute 2.91'},
                raise_exc=False, timeout=60).status_code
        except Exception as e:   # killed under it
            return type(e).__name__

    def test_kill_9_of_nova_api_during_boots(self):
        image = self.image_ref()
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        with futures.ThreadPoolExecutor(6) as pool:
            answers = [pool.submit(self.boot, i, image, flavor)
                       for i in range(BOOTS)]
            # Once the first boots are answered, others are in flight.
            while sum(1 for a in answers if a.done()) < 3:
                time.sleep(0.05)
            base.CLOUD.kill('nova-api')
            answers = [a.result() for a in answers]
        self.addDetail('answers', testtools.content.text_content(
            repr(answers)))
        self.addDetail('leases', testtools.content.text_content(
            repr(self.leases())))
        base.CLOUD.start_nova_api()
        base.CLOUD.wait_nova_api()
        self.addCleanup(self.cleanup)
        # No answer was a 5xx: each boot was done, refused, or cut off.
        self.assertEqual([], [a for a in answers
                              if isinstance(a, int) and a >= 500], answers)
        self.wait_for('the reconciler to repair', self.consistent,
                      timeout=150, interval=5)

    def leases(self) -> list:
        return self.store("SELECT id, status FROM rsv_leases WHERE name "
                          "LIKE %s", 'kill-%%-' + self.suffix)

    def consistent(self) -> bool:
        leases = {x['id']: x['status'] for x in self.leases()}
        if any(s == 'CREATING' for s in leases.values()):
            return False
        if self.store("SELECT id FROM rsv_allocations WHERE instance_uuid "
                      "LIKE 'boot-%%' AND deleted = 0"):
            return False
        live = {x['instance_uuid'] for x in self.store(
            "SELECT instance_uuid FROM rsv_server_bindings WHERE state "
            "NOT IN ('ENDED', 'FAILED')")}
        servers = self.named('kill-.*-%s$' % self.suffix)
        for server in servers:
            if server['id'] not in live:
                return False   # a server without a lease
        # Every bound server exists, and each lease holds its servers.
        ids = {s['id'] for s in servers}
        for lease_id, state in leases.items():
            if state in ('PENDING', 'ACTIVE'):
                bound = {x['instance_uuid'] for x in self.store(
                    'SELECT instance_uuid FROM rsv_server_bindings WHERE '
                    'lease_id = %s', lease_id)}
                if not bound or not bound <= ids:
                    return False
        return True

    def cleanup(self) -> None:
        for lease in self.leases():
            if lease['status'] not in ('DELETED', 'DELETING'):
                self.delete_lease(lease['id'])
