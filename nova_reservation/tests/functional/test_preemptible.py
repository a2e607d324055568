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

"""Preemptible servers on real Nova: they use capacity promised to leases
that have not started, are told in time, and leave before the start
(moved, shelved or deleted as they asked); a shelved one comes back.
"""

import threading

from nova import policy as nova_policy

from nova_reservation.capacity import epoch
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation.engine import service
from nova_reservation import notifications
from nova_reservation.tests.functional import base

STORE = base.STORE
LIVE_MIGRATION = 'os_compute_api:os-migrate-server:migrate_live'


class PreemptibleTestCase(base.BootTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.capture_notifications()

    def boot_preemptible(self, api=None, name='spot', flavor=base.ONE_PER_NODE,
                         **hints):
        hints.setdefault('preemptible', 'true')
        resp = self.cloud.boot(name, flavor, hints, None, api)
        self.assertEqual(202, resp.status, resp.content)
        return resp.body['server']['id']

    def future_lease(self, amount: int, start=60, end=120) -> dict:
        """A capacity lease of `amount` one-per-node slots, in an hour."""
        resp = self.rsv('POST', '/leases', base.flavor_lease(
            amount, start=start, end=end))
        self.assertEqual(201, resp.status_code, resp.text)
        return resp.json()['lease']

    def lease_nodes(self, lease: dict) -> set:
        return {s.node for r in lease['reservations']
                for s in db_ledger.slots(STORE, r['id'])}

    def preempt(self, at: float = None, passes: int = 6) -> None:
        """Run the engine's look at the preemptible servers at `at`
        (a few times: each pass moves each server one step).
        """
        if at is not None:
            self.clock.now = at
        for _ in range(passes):
            self.engine.preempt()

    def told(self, event_type: str) -> list:
        return [p for t, p in self.notified(event_type) if t == event_type]

    def server(self, uuid: str) -> dict:
        return self.admin_api.get_server(uuid)

    def start_of(self, lease: dict) -> float:
        return epoch.to_epoch(db_leases.get(STORE, lease['id']).start_at)


class PreemptibleBootTest(PreemptibleTestCase):

    def test_a_preemptible_server_is_marked_and_recorded(self):
        uuid = self.boot_preemptible()
        server = self._wait_for_state_change(self.server(uuid), 'ACTIVE')
        self.assertEqual('true',
                         server['metadata']['reservation:preemptible'])
        self.assertEqual('shelve',
                         server['metadata']['reservation:on_preempt'])
        self.assertEqual([uuid], [r.instance_uuid for r in
                                  db_preemptibles.get_all(STORE)])
        self.preempt()
        server = self.server(uuid)
        self.assertIn('preemptible', server['tags'])
        # No lease promises its node: it stays for good.
        self.assertEqual('none',
                         server['metadata']['reservation:preemptible_until'])

    def test_every_server_of_a_multi_create_is_recorded(self):
        body = self.boot_body(count=2, return_reservation_id=True)
        body['os:scheduler_hints'] = {'preemptible': 'true'}
        resp = self.post(body)
        self.assertEqual(202, resp.status, resp.content)
        self.assertIn('reservation_id', resp.body)
        servers = self.admin_api.get_servers(search_opts={
            'all_tenants': 1, 'reservation_id': resp.body['reservation_id']})
        self.assertEqual(2, len(servers))
        self.assertEqual(sorted(s['id'] for s in servers), sorted(
            r.instance_uuid for r in db_preemptibles.get_all(STORE)))

    def test_a_flavor_makes_its_servers_preemptible(self):
        flavor = self.admin_api.post_flavor({'flavor': {
            'name': 'spot.medium', 'vcpus': 2, 'ram': 4096, 'disk': 20}})
        self.admin_api.post_extra_spec(flavor['id'], {'extra_specs': {
            'reservation:preemptible': 'true'}})
        resp = self.cloud.boot('spot', flavor['id'], {'on_preempt': 'delete'},
                               None, None)
        self.assertEqual(202, resp.status, resp.content)
        row = db_preemptibles.get_all(STORE)[0]
        self.assertEqual((resp.body['server']['id'], 'delete'),
                         (row.instance_uuid, row.on_preempt))

    def test_bad_preemptible_hints_are_400s_that_name_the_field(self):
        cases = [
            ({'preemptible': 'maybe'}, 'preemptible'),
            ({'preemptible': ['true', 'false']}, 'preemptible'),
            ({'preemptible': 'true', 'on_preempt': 'explode'}, 'on_preempt'),
            ({'preemptible': 'true', 'on_preempt': 7}, 'on_preempt'),
            ({'on_preempt': 'delete'}, 'on_preempt'),
            ({'preemptible': 'true',
              'lease_params': base.params(base.when(60), base.when(120))},
             'preemptible'),
            ({'preemptible': 'true',
              'reservation': '7b1e5c3e-5a4f-4a55-9d1e-3f7fb4b5e0a1'},
             'preemptible'),
        ]
        for hints, field in cases:
            resp = self.cloud.boot('spot', base.ONE_PER_NODE, hints, None,
                                   None)
            self.assertEqual(400, resp.status, (hints, resp.content))
            self.assertIn(field, resp.body['badRequest']['message'])
        body = self.boot_body(availability_zone='nova:host1')
        body['os:scheduler_hints'] = {'preemptible': 'true'}
        resp = self.post(body)
        self.assertEqual(400, resp.status, resp.content)
        self.assertIn('availability_zone', resp.body['badRequest']['message'])
        self.assertEqual([], db_preemptibles.get_all(STORE))
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))

    def test_a_user_can_not_make_a_server_preemptible_afterwards(self):
        uuid = self.boot(None, name='ordinary').body['server']['id']
        self.node_of(uuid)
        for path, body in [
                ('/metadata', {'metadata': {
                    'reservation:preemptible': 'true'}}),
                ('/metadata/reservation:preemptible', {'meta': {
                    'reservation:preemptible': 'true'}})]:
            method = (self.api.api_post if path == '/metadata'
                      else self.api.api_put)
            resp = method('/servers/%s%s' % (uuid, path), body,
                          check_response_status=False)
            self.assertEqual(400, resp.status, resp.content)
            self.assertIn('reservation:preemptible',
                          resp.body['badRequest']['message'])
        self.assertNotIn('reservation:preemptible',
                         self.server(uuid)['metadata'])
        # Other keys are the user's.
        self.api.api_post('/servers/%s/metadata' % uuid,
                          {'metadata': {'color': 'blue'}})
        self.assertEqual('blue', self.server(uuid)['metadata']['color'])

    def test_the_reconciler_records_a_server_nova_api_could_not(self):
        uuid = self.boot_preemptible(on_preempt='delete')
        self.node_of(uuid)
        db_preemptibles.forget(STORE, [uuid])
        self.engine.reconcile()
        row = db_preemptibles.get_all(STORE)[0]
        self.assertEqual((uuid, 'delete'), (row.instance_uuid,
                                            row.on_preempt))

    def test_a_bad_extra_spec_is_a_400_that_names_it(self):
        flavor = self.admin_api.post_flavor({'flavor': {
            'name': 'odd', 'vcpus': 1, 'ram': 512, 'disk': 1}})
        self.admin_api.post_extra_spec(flavor['id'], {'extra_specs': {
            'reservation:preemptible': 'sometimes'}})
        resp = self.cloud.boot('spot', flavor['id'], {}, None, None)
        self.assertEqual(400, resp.status, resp.content)
        self.assertIn('reservation:preemptible',
                      resp.body['badRequest']['message'])


class PromisedCapacityTest(PreemptibleTestCase):

    def test_preemptible_servers_use_capacity_an_ordinary_one_can_not(self):
        self.future_lease(2)
        # Kept from before: an ordinary server never lands on promised
        # capacity.
        ordinary = self.boot(None, name='ordinary').body['server']['id']
        self._wait_for_state_change(self.server(ordinary), 'ERROR')
        self.admin_api.delete_server(ordinary)
        self.wait_gone(ordinary)
        spots = [self.boot_preemptible(name='spot%d' % i) for i in (1, 2)]
        nodes = {self.node_of(u) for u in spots}
        self.assertEqual({'host1', 'host2'}, nodes)

    def test_a_preemptible_boot_takes_nothing_running_leases_need(self):
        # host1: a running lease's slot, unused; host2: an ordinary server.
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                            'affinity': 'None'}, start=1.0)
        self.wait_for_start(lease)
        ordinary = self.boot(None, name='ordinary').body['server']['id']
        self.node_of(ordinary)
        spot = self.boot_preemptible()
        self._wait_for_state_change(self.server(spot), 'ERROR')

    def test_a_preemptible_boot_avoids_a_lease_that_starts_within_margin(
            self):
        self.flags(preempt_margin=10, group='reservation')
        self.future_lease(2, start=5, end=60)
        spot = self.boot_preemptible()
        self._wait_for_state_change(self.server(spot), 'ERROR')

    def test_a_lease_is_made_on_capacity_that_preemptible_servers_use(
            self):
        spots = [self.boot_preemptible(name='spot%d' % i) for i in (1, 2)]
        for uuid in spots:
            self.node_of(uuid)
        # A lease that starts in an hour: they will leave in time.
        self.future_lease(2)
        # One that starts now: they are there now.
        resp = self.rsv('POST', '/leases', base.flavor_lease(1, start=0.1,
                                                             end=60))
        self.assertEqual(409, resp.status_code, resp.text)


class EvictionTest(PreemptibleTestCase):

    def full_nodes(self, on_preempt='shelve', free_one=False):
        """A lease of one slot in an hour, and preemptible servers on
        both nodes (`free_one`: the one off the lease's node deleted).
        """
        lease = self.future_lease(1)
        node = self.lease_nodes(lease).pop()
        spots = [self.boot_preemptible(name='spot%d' % i,
                                       on_preempt=on_preempt)
                 for i in (1, 2)]
        on = {self.node_of(u): u for u in spots}
        self.assertEqual({'host1', 'host2'}, set(on))
        if free_one:
            other = [u for n, u in on.items() if n != node][0]
            self.admin_api.delete_server(other)
            self.wait_gone(other)
        return lease, node, on[node]

    def test_warning_then_live_migration_to_a_free_node(self):
        lease, node, spot = self.full_nodes(free_one=True)
        start = self.start_of(lease)
        self.preempt()
        deadline = self.server(spot)['metadata'][
            'reservation:preemptible_until']
        self.assertEqual(epoch.from_epoch(start).replace(
            microsecond=0).isoformat() + 'Z', deadline)
        self.assertEqual([], self.told('server.preempt.warning'))
        self.preempt(at=start - 20 * 60)
        warned = self.told('server.preempt.warning')
        self.assertEqual([(spot, deadline, lease['id'])], [
            (w['server_id'], w['deadline'], w['lease_id']) for w in warned])
        self.assertEqual(deadline, self.server(spot)['metadata'][
            'reservation:preempt_at'])
        self.assertEqual(node, self.node_of(spot))
        # Told once, whatever the passes.
        self.preempt(at=start - 15 * 60)
        self.assertEqual(1, len(self.told('server.preempt.warning')))
        self.preempt(at=start - 5 * 60)
        self.assertNotEqual(node, self.node_of(spot))
        self.assertEqual([(spot, 'migrate')], [
            (e['server_id'], e['action'])
            for e in self.told('server.preempt.end')])
        migrations = self.admin_api.get_migrations()
        self.assertEqual(['live-migration'],
                         [m['migration_type'] for m in migrations])
        # On a node no lease promises: it stays for good now.
        self.preempt()
        self.assertEqual('none', self.server(spot)['metadata'][
            'reservation:preemptible_until'])
        self.run_engine(at=start + 1)
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease['id']).status)
        # The lease's node is free for its servers.
        self.assertEqual(0, self.placement_usage(node)['VCPU'])

    def test_its_port_follows_the_live_migration(self):
        network = base.nova_fixtures.NeutronFixture.network_1['id']
        lease = self.future_lease(1)
        node = self.lease_nodes(lease).pop()
        spots = [self.api.post_server({
            'server': {'name': 'spot%d' % i, 'imageRef': base.IMAGE,
                       'flavorRef': base.ONE_PER_NODE,
                       'networks': [{'uuid': network}]},
            'os:scheduler_hints': {'preemptible': 'true'}})['id']
            for i in (1, 2)]
        on = {self.node_of(u): u for u in spots}
        spot = on.pop(node)
        self.admin_api.delete_server(on.popitem()[1])
        self.preempt(at=self.start_of(lease) - 5 * 60, passes=8)
        view = self.server(spot)
        self.assertNotEqual(node, view['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        port, = self.cloud.neutron.list_ports(True, device_id=spot)['ports']
        self.assertEqual(view['OS-EXT-SRV-ATTR:host'],
                         port['binding:host_id'])

    def test_cold_migration_where_live_migration_is_refused(self):
        self.override_policy({LIVE_MIGRATION: '!'})
        nova_policy.reset()
        self.addCleanup(nova_policy.reset)
        lease, node, spot = self.full_nodes(free_one=True)
        self.preempt(at=self.start_of(lease) - 5 * 60, passes=8)
        self.assertNotEqual(node, self.node_of(spot))
        migrations = self.admin_api.get_migrations()
        self.assertEqual(['migration'],
                         [m['migration_type'] for m in migrations])
        self.assertEqual('ACTIVE', self.server(spot)['status'])

    def test_shelved_where_no_node_holds_it_then_back_when_free(self):
        lease, node, spot = self.full_nodes()
        start = self.start_of(lease)
        self.preempt(at=start - 5 * 60)
        self.assertEqual('SHELVED_OFFLOADED', self.server(spot)['status'])
        self.assertEqual([(spot, 'shelve')], [
            (e['server_id'], e['action'])
            for e in self.told('server.preempt.end')])
        # Warned before it went, though the notice time had passed.
        self.assertEqual([spot], [w['server_id'] for w in
                                  self.told('server.preempt.warning')])
        # The other one stays: its node is promised to nobody.
        self.assertEqual(1, len([s for s in self.admin_api.get_servers(
            search_opts={'all_tenants': 1}) if s['status'] == 'ACTIVE']))
        # Not back while the lease holds the node.
        self.run_engine(at=start + 1)
        self.preempt(at=start + 60)
        self.assertEqual('SHELVED_OFFLOADED', self.server(spot)['status'])
        # Back once the lease is over.
        self.run_engine(at=self.start_of(lease) + 3600 + 1)
        self.preempt(at=self.start_of(lease) + 3600 + 60)
        self.assertEqual(node, self.node_of(spot))

    def test_deleted_where_it_asked_to_be(self):
        lease, node, spot = self.full_nodes(on_preempt='delete')
        self.preempt(at=self.start_of(lease) - 5 * 60)
        self.wait_gone(spot)
        self.assertEqual([(spot, 'delete')], [
            (e['server_id'], e['action'])
            for e in self.told('server.preempt.end')])
        self.assertNotIn(spot, {r.instance_uuid for r in
                                db_preemptibles.get_all(STORE)})

    def test_a_server_lease_starts_on_time_on_nodes_full_of_them(self):
        resp = self.boot(base.params(base.when(60), base.when(120)),
                         count=2, name='leased')
        self.assertEqual(202, resp.status, resp.content)
        self.run_engine()
        lease = db_leases.get_all(STORE)[0]
        spots = [self.boot_preemptible(name='spot%d' % i) for i in (1, 2)]
        self.assertEqual({'host1', 'host2'},
                         {self.node_of(u) for u in spots})
        start = epoch.to_epoch(lease.start_at)
        self.preempt(at=start - 5 * 60)
        self.run_engine(at=start + 1)
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease.id).status)
        leased = [b.instance_uuid for b in db_bindings.of_lease(STORE,
                                                                lease.id)]
        self.assertEqual({'host1', 'host2'},
                         {self.node_of(u) for u in leased})
        self.assertEqual({'SHELVED_OFFLOADED'},
                         {self.server(u)['status'] for u in spots})

    def test_engines_side_by_side_evict_each_server_once(self):
        lease, node, spot = self.full_nodes()
        engines = [self.engine] + [
            self.cloud.engine(clock=self.clock,
                              notifier=notifications.Notifier())
            for _ in range(2)]
        self.addCleanup(lambda: [e.close() for e in engines[1:]])
        self.clock.now = self.start_of(lease) - 5 * 60
        errors = []

        def run(engine: service.Engine) -> None:
            try:
                for _ in range(4):
                    engine.preempt()
            except Exception as e:   # noqa: the test reports it
                errors.append(e)
        threads = [threading.Thread(target=run, args=(e,)) for e in engines]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        self.preempt()
        self.assertEqual('SHELVED_OFFLOADED', self.server(spot)['status'])
        self.assertEqual([spot], [e['server_id'] for e in
                                  self.told('server.preempt.end')])
        self.assertEqual([spot], [e['server_id'] for e in
                                  self.told('server.preempt.warning')])

    def test_an_eviction_whose_engine_died_is_finished_by_another(self):
        lease, node, spot = self.full_nodes()
        at = self.start_of(lease) - 5 * 60
        row = next(r for r in db_preemptibles.get_all(STORE)
                   if r.instance_uuid == spot)
        # An engine took it, and died before it asked Nova anything.
        self.assertTrue(db_preemptibles.claim(
            STORE, row, 'EVICTING', 'dead-engine',
            epoch.from_epoch(at), 120))
        self.preempt(at=at)
        self.assertEqual(node, self.node_of(spot))
        # Its claim expires: this engine goes on.
        self.preempt(at=at + 121)
        self.assertEqual('SHELVED_OFFLOADED', self.server(spot)['status'])

    def test_a_server_its_owner_unshelved_is_watched_again(self):
        lease, node, spot = self.full_nodes()
        start = self.start_of(lease)
        self.preempt(at=start - 5 * 60)
        self.assertEqual('SHELVED_OFFLOADED', self.server(spot)['status'])
        # The node is free again (the lease goes); its owner does not wait.
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % lease['id']).status_code)
        self.api.post_server_action(spot, {'unshelve': None})
        self._wait_for_state_change(self.server(spot), 'ACTIVE')
        self.preempt(passes=2)
        self.assertEqual('RUNNING', next(
            r.state for r in db_preemptibles.get_all(STORE)
            if r.instance_uuid == spot))
        # A new lease on its node: it is told, and goes, again.
        again = self.future_lease(1, start=60)
        self.preempt(at=self.start_of(again) - 5 * 60)
        self.assertEqual(2, len(self.told('server.preempt.end')))
