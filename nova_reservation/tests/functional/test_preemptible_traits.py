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

"""A preemptible server of a flavor that asks for traits is moved, and
brought back, only where Nova's scheduler may put it: a move or an
unshelve that Nova refuses would be asked again at every pass, and the
server not shelved in time.
"""

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE


class TraitsTest(base.BootTestCase):

    def preempt(self, at: float) -> None:
        """The engine's look at the preemptible servers at `at`, a few
        times: each pass moves each server one step.
        """
        self.clock.now = at
        for _ in range(6):
            self.engine.preempt()

    def status(self, uuid: str) -> str:
        return self.admin_api.get_server(uuid)['status']

    def test_moved_and_brought_back_only_where_its_flavor_may_go(self):
        # A flavor whose servers need a trait that host1 alone has: the
        # free host2 is no way out for its server, nor a way back.
        self.admin_api.post_flavor({'flavor': dict(
            name='gold', id='gold', vcpus=2, ram=4096, disk=1)})
        self.admin_api.post_extra_spec('gold', {'extra_specs': {
            'trait:CUSTOM_GOLD': 'required'}})
        self._create_trait('CUSTOM_GOLD')
        rp = self._get_provider_uuid_by_host('host1')
        self._set_provider_traits(
            rp, self._get_provider_traits(rp) + ['CUSTOM_GOLD'])
        resp = self.cloud.boot('spot', 'gold', {'preemptible': 'true'})
        self.assertEqual(202, resp.status, resp.content)
        spot = resp.body['server']['id']
        self.assertEqual('host1', self.node_of(spot))
        body = base.flavor_lease(1)
        body['reservations'][0]['flavor_id'] = 'gold'
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.assertEqual(['host1'], [s.node for s in db_ledger.slots(
            STORE, lease['reservations'][0]['id'])])
        start = epoch.to_epoch(db_leases.get(STORE, lease['id']).start_at)
        self.preempt(at=start - 5 * 60)
        self.assertEqual('SHELVED_OFFLOADED', self.status(spot))
        # Shelved at once: no migration to a node Nova would refuse.
        self.assertEqual([], self.admin_api.get_migrations())
        self.run_engine(at=start + 1)
        self.preempt(at=start + 60)
        self.assertEqual('SHELVED_OFFLOADED', self.status(spot))
        # Nor an unshelve that Nova would refuse, pass after pass.
        self.assertNotIn('unshelve', [
            a['action'] for a in self.admin_api.get_instance_actions(spot)])
        # Back on its node once the lease is over.
        self.run_engine(at=start + 3600 + 1)
        self.preempt(at=start + 3600 + 60)
        self.assertEqual('host1', self.node_of(spot))
