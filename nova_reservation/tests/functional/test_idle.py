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

"""Idle leases on real Nova: measured, shown, told once, and their unused
capacity released where the operator asks for it.
"""

from nova_reservation.db import ledger as db_ledger
from nova_reservation import notifications
from nova_reservation.tests.functional import base

STORE = base.STORE


class IdleLeaseTest(base.BootTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.flags(idle_threshold=60, idle_period=10, group='reservation')
        self.capture_notifications()

    def half_used(self) -> tuple:
        """A running lease of two slots, one of them used."""
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 2,
                            'affinity': 'None'}, start=1.0)
        self.wait_for_start(lease)
        rid = lease['reservations'][0]['id']
        server = self.boot_into(rid).body['server']['id']
        self.node_of(server)
        return lease, rid

    def watch(self, minutes: float = 0) -> None:
        self.clock.now += minutes * 60
        self.engine.watch_idle()

    def shown(self, lease) -> dict:
        return self.rsv('GET', '/leases/%s' % lease['id']).json()['lease']

    def idle_told(self) -> list:
        return [p for _, p in self.notified('lease.idle')]

    def test_an_idle_lease_is_shown_then_told_once(self):
        lease, rid = self.half_used()
        self.assertIsNone(self.shown(lease)['idle_since'])
        self.watch()
        since = self.shown(lease)['idle_since']
        self.assertIsNotNone(since)
        self.assertEqual([], self.idle_told())
        self.watch(minutes=11)
        self.watch(minutes=1)
        told = self.idle_told()
        self.assertEqual([(lease['id'], 50.0, [])], [
            (t['lease_id'], t['used_percent'], t['released'])
            for t in told])
        # Told, not released: the slots stay.
        self.assertEqual(2, len(db_ledger.slots(STORE, rid)))
        self.assertEqual(since, self.shown(lease)['idle_since'])

    def test_a_lease_used_again_is_no_longer_idle(self):
        lease, rid = self.half_used()
        self.watch()
        self.assertIsNotNone(self.shown(lease)['idle_since'])
        self.node_of(self.boot_into(rid, name='vm2').body['server']['id'])
        self.watch(minutes=11)
        self.assertIsNone(self.shown(lease)['idle_since'])
        self.assertEqual([], self.idle_told())

    def test_release_gives_unused_slots_back_to_the_pool(self):
        # The scheduler reads the latest ledger: the release is seen at
        # once.
        self.flags(idle_action='release', ledger_max_age=0,
                   group='reservation')
        lease, rid = self.half_used()
        # The pool is full: the lease holds both nodes.
        ordinary = self.boot(None, name='ordinary').body['server']['id']
        self._wait_for_state_change(self.server(ordinary), 'ERROR')
        self.api.delete_server(ordinary)
        self.wait_gone(ordinary)
        self.watch()
        self.watch(minutes=11)
        told = self.idle_told()
        self.assertEqual(1, len(told))
        self.assertEqual(1, len(told[0]['released']))
        self.assertEqual(1, len(db_ledger.slots(STORE, rid)))
        self.assertEqual(1, self.shown(lease)['reservations'][0]['amount'])
        # The released node takes an ordinary server now.
        ordinary = self.boot(None, name='ordinary').body['server']['id']
        self.assertEqual(told[0]['released'][0]['node'],
                         self.node_of(ordinary))
        # Released once, whatever the passes.
        self.watch(minutes=1)
        self.assertEqual(1, len(self.idle_told()))

    def test_several_engines_tell_and_release_once(self):
        self.flags(idle_action='release', group='reservation')
        lease, rid = self.half_used()
        engines = [self.engine] + [
            self.cloud.engine(clock=self.clock,
                              notifier=notifications.Notifier())
            for _ in range(2)]
        self.addCleanup(lambda: [e.close() for e in engines[1:]])
        for engine in engines:
            engine.watch_idle()
        self.clock.now += 11 * 60
        for engine in engines + engines:
            engine.watch_idle()
        self.assertEqual(1, len(self.idle_told()))
        self.assertEqual(1, len(db_ledger.slots(STORE, rid)))

    def test_a_fully_used_lease_is_never_idle(self):
        lease, rid = self.half_used()
        self.node_of(self.boot_into(rid, name='vm2').body['server']['id'])
        self.watch()
        self.watch(minutes=60)
        self.assertIsNone(self.shown(lease)['idle_since'])
        self.assertEqual([], self.idle_told())

    def server(self, uuid: str) -> dict:
        return self.admin_api.get_server(uuid)


class IdleHostLeaseTest(base.BootTestCase):

    def test_a_released_host_goes_back_to_the_freepool(self):
        self.flags(idle_threshold=60, idle_period=10, idle_action='release',
                   group='reservation')
        for node in self.NODES:
            self.assertEqual(201, self.admin_rsv('POST', '/os-hosts', {
                'name': node}).status_code)
        lease = self.lease({'resource_type': 'physical:host', 'min': 2,
                            'max': 2}, start=1.0)
        self.wait_for_start(lease)
        rid = lease['reservations'][0]['id']
        used = self.node_of(self.boot_into(rid).body['server']['id'])
        self.engine.watch_idle()
        self.clock.now += 11 * 60
        self.engine.watch_idle()
        self.assertEqual([used], [s.node for s in
                                  db_ledger.slots(STORE, rid)])
        members = {a['name']: set(a['hosts']) for a in
                   self.admin_api.api_get('/os-aggregates').body[
                       'aggregates']}
        free = ({'host1', 'host2'} - {used}).pop()
        self.assertIn(free, members['freepool'])
        self.assertEqual({used}, members[rid])
