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

"""Concurrency and faults on real Nova: every option of a boot goes through
the ledger, a server's failure is its own, a deleted server frees its slot,
and the lease's states only move the allowed ways; a claim that no
compute knows of still counts.
"""

from nova.tests import fixtures as nova_fixtures
from oslo_utils import uuidutils

from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.filters import reservation_filter
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class BootOptionsTest(base.BootTestCase):

    def test_multi_create_into_a_reservation(self):
        rid = self.running_lease(2)
        resp = self.post(self.boot_body(rid, count=2))
        self.assertEqual(202, resp.status, resp.content)
        self.run_engine()
        servers = self.api.get_servers()
        self.assertEqual(2, len(servers))
        nodes = {self.node_of(s['id']) for s in servers}
        self.assertEqual(2, len(nodes))
        self.assertEqual({s['id'] for s in servers}, set(self.bound(rid)))

    def test_return_reservation_id_goes_through_the_ledger(self):
        rid = self.running_lease(1)
        resp = self.post(self.boot_body(rid, return_reservation_id=True))
        self.assertEqual(202, resp.status, resp.content)
        self.assertIn('reservation_id', resp.body)
        self.run_engine()
        server, = self.api.get_servers()
        self.assertEqual({server['id']}, set(self.bound(rid)))
        # The one slot is taken: a second boot is refused.
        again = self.post(self.boot_body(rid, return_reservation_id=True))
        self.assertEqual(409, again.status, again.content)
        self.assertEqual(1, len(self.api.get_servers()))

    def test_return_reservation_id_with_lease_params(self):
        body = self.boot_body(count=2, return_reservation_id=True)
        body['os:scheduler_hints'] = {'lease_params': base.params(
            base.when(60), base.when(120))}
        resp = self.post(body)
        self.assertEqual(202, resp.status, resp.content)
        self.run_engine()
        lease, = db_leases.get_all(STORE)
        self.assertEqual('PENDING', lease.status)
        servers = self.api.get_servers(detail=True)
        self.assertEqual(2, len(servers))
        self.assertEqual({s['id'] for s in servers},
                         {b.instance_uuid
                          for b in db_bindings.of_lease(STORE, lease.id)})
        for s in servers:
            self.assertEqual('RESERVED', s['status'])

    def test_a_server_group_s_policy_is_the_lease_s_affinity(self):
        for policy, nodes in (('affinity', 1), ('anti-affinity', 2)):
            group = self.api.post_server_groups(
                {'name': policy, 'policy': policy})
            body = self.boot_body(count=2)
            body['server']['flavorRef'] = '1'
            body['os:scheduler_hints'] = {
                'group': group['id'], 'lease_params': base.params(
                    base.when(60), base.when(120))}
            resp = self.post(body)
            self.assertEqual(202, resp.status, resp.content)
            lease_id = resp.body['server']['reservation']['lease_id']
            rid = resp.body['server']['reservation']['reservation_id']
            self.assertEqual(nodes, len({a.node for a in
                                         db_ledger.slots(STORE, rid)}),
                             policy)
            self.rsv('DELETE', '/leases/%s' % lease_id)
            self.run_engine()
        missing = self.boot_body(count=2)
        missing['os:scheduler_hints'] = {
            'group': '8d3c0e5e-2a4b-4c1d-9e8f-7a6b5c4d3e2f',
            'lease_params': base.params(base.when(60), base.when(120))}
        resp = self.post(missing)
        self.assertEqual(400, resp.status, resp.content)

    def test_forced_host_is_refused_for_a_leased_boot(self):
        rid = self.running_lease(1)
        body = self.boot_body(rid, availability_zone='nova:host1')
        resp = self.post(body, api=self.admin_api)
        # The admin's own reservation? No: another project's is not found.
        self.assertIn(resp.status, (400, 404), resp.content)
        resp = self.post(self.boot_body(rid,
                                        availability_zone='nova:host1'))
        self.assertIn(resp.status, (400, 403), resp.content)
        if resp.status == 400:
            self.assertTrue(resp.body['badRequest']['message'].startswith(
                'availability_zone:'), resp.content)
        self.assertEqual([], self.api.get_servers())

    def test_deleting_a_server_frees_its_slot(self):
        rid = self.running_lease(1)
        resp = self.post(self.boot_body(rid))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.node_of(uuid)
        self.run_engine()
        self.api.delete_server(uuid)
        self.wait_gone(uuid)
        self.assertEqual({}, self.bound(rid))
        again = self.post(self.boot_body(rid))
        self.assertEqual(202, again.status, again.content)

    def test_forced_host_of_an_ordinary_boot_keeps_promises(self):
        # host1 and host2 each take one ONE_PER_NODE server; a lease in an
        # hour holds one of them.
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                            'affinity': 'None'}, start=3600)
        promised = db_ledger.slots(
            STORE, lease['reservations'][0]['id'])[0].node
        other = ({'host1', 'host2'} - {promised}).pop()
        resp = self.post(self.boot_body(
            availability_zone='nova:%s' % promised), api=self.admin_api)
        self.assertEqual(409, resp.status, resp.content)
        self.assertTrue(resp.body['conflictingRequest']['message']
                        .startswith('availability_zone:'), resp.content)
        self.assertEqual([], self.api.get_servers())
        resp = self.post(self.boot_body(
            availability_zone='nova::%s' % other), api=self.admin_api)
        self.assertEqual(202, resp.status, resp.content)
        self.assertEqual(other, self.node_of(resp.body['server']['id']))


class AsyncBootTest(base.BootTestCase):
    """Nova schedules after its 202, as in a real deployment."""
    CAST_AS_CALL = False

    def test_multi_create_into_a_reservation(self):
        rid = self.running_lease(2)
        resp = self.post(self.boot_body(rid, count=2))
        self.assertEqual(202, resp.status, resp.content)
        servers = self.api.get_servers()
        self.assertEqual(2, len(servers))
        nodes = {self.node_of(s['id']) for s in servers}
        self.assertEqual(2, len(nodes))
        self.run_engine()
        self.assertEqual({s['id'] for s in servers}, set(self.bound(rid)))


class ServerFailureTest(base.BootTestCase):

    def test_a_failed_boot_is_the_servers_not_the_leases(self):
        rid = self.running_lease(1)
        node = db_ledger.slots(STORE, rid)[0].node
        self.set_compute(node, 'disabled')
        resp = self.post(self.boot_body(rid))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self._wait_for_state_change(self.api.get_server(uuid), 'ERROR')
        self.run_engine()
        lease = db_leases.get(
            STORE, db_leases.reservation(STORE, rid).lease_id)
        self.assertEqual(('ACTIVE', True), (lease.status, lease.degraded))
        self.assertIn(uuid, lease.status_reason)
        self.assertEqual({}, self.bound(rid))
        # The slot is free for the next boot, once the node is back.
        self.set_compute(node, 'enabled')
        again = self.post(self.boot_body(rid))
        self.assertEqual(202, again.status, again.content)
        self.assertEqual(node, self.node_of(again.body['server']['id']))


class HostGrowthTest(base.ReservationsTestCase):
    NODES = ('host1', 'host2', 'host3')
    CHECK_INVARIANTS = True

    def test_growing_a_host_reservation_records_max_and_min(self):
        for node in self.NODES:
            self.assertEqual(201, self.admin_rsv('POST', '/os-hosts', {
                'name': node}).status_code)
        lease = self.lease({'resource_type': 'physical:host', 'min': 1,
                            'max': 1}, start=3600)
        rid = lease['reservations'][0]['id']
        path = '/leases/%s' % lease['id']
        for _ in range(2):
            resp = self.rsv('PUT', path, {'reservations': [
                {'id': rid, 'max': 2}]})
            self.assertEqual(200, resp.status_code, resp.text)
            res = resp.json()['lease']['reservations'][0]
            self.assertEqual((1, 2), (res['min'], res['max']))
            self.assertEqual(2, len(db_ledger.slots(STORE, rid)))
        resp = self.rsv('PUT', path, {'reservations': [{'id': rid,
                                                        'min': 2}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(2, resp.json()['lease']['reservations'][0]['min'])
        resp = self.rsv('PUT', path, {'reservations': [{'id': rid,
                                                        'min': 3}]})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertTrue(resp.json()['error_message'].startswith(
            'reservations[0].min:'))
        self.assertEqual(2, len(db_ledger.slots(STORE, rid)))


class DeletedServersTest(base.ReservationsTestCase):
    CHECK_INVARIANTS = True

    def test_capacity_of_deleted_servers_is_seen(self):
        # Both nodes full of ordinary servers, read by a lease placement.
        servers = [self._create_server(
            name='o%d' % i, image_uuid=base.IMAGE,
            flavor_id=base.ONE_PER_NODE, networks='none') for i in (1, 2)]
        body = {'name': 'l', 'start_date': base.soon(
            60), 'end_date': base.soon(3600),
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': base.ONE_PER_NODE,
                              'amount': 2}]}
        self.assertEqual(409, self.rsv('POST', '/leases', body).status_code)
        for server in servers:
            self._delete_server(server)
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(201, resp.status_code, resp.text)


class HealingTest(base.ReservationsTestCase):
    NODES = ('host1', 'host2', 'host3')
    CHECK_INVARIANTS = True

    def test_a_moved_host_slot_keeps_the_requirements(self):
        for node, gpu in (('host1', 'yes'), ('host2', 'yes'),
                          ('host3', 'no')):
            self.assertEqual(201, self.admin_rsv('POST', '/os-hosts', {
                'name': node, 'gpu': gpu}).status_code)
        lease = self.lease({'resource_type': 'physical:host', 'min': 1,
                            'max': 1, 'resource_properties':
                            '["==", "$gpu", "yes"]'}, start=3600)
        rid = lease['reservations'][0]['id']
        first, = [a.node for a in db_ledger.slots(STORE, rid)]
        self.set_compute(first, 'disabled')
        self.engine.check_hosts()
        second, = [a.node for a in db_ledger.slots(STORE, rid)]
        self.assertEqual({'host1', 'host2'} - {first}, {second})
        # No other host has a GPU: the lease is degraded, not moved to one
        # that does not match.
        self.set_compute(second, 'disabled')
        self.engine.check_hosts()
        self.assertEqual([second], [a.node for a in
                                    db_ledger.slots(STORE, rid)])
        self.assertTrue(db_leases.get(STORE, lease['id']).degraded)

    def test_moved_slots_keep_their_affinity(self):
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': '1', 'amount': 2,
                            'affinity': True}, start=3600)
        rid = lease['reservations'][0]['id']
        nodes = {a.node for a in db_ledger.slots(STORE, rid)}
        self.assertEqual(1, len(nodes))
        self.set_compute(nodes.pop(), 'disabled')
        self.engine.check_hosts()
        moved = [a.node for a in db_ledger.slots(STORE, rid)]
        self.assertEqual(2, len(moved))
        self.assertEqual(1, len(set(moved)), moved)
        self.assertFalse(db_leases.get(STORE, lease['id']).degraded)


class ClaimWithoutServerTest(base.ReservationsTestCase):
    """A claim in Placement that no compute knows of (a boot's conductor
    failed after the claim, as a database failing over makes it do) is
    usage: an ordinary boot does not take promised capacity beside it.
    """
    NODES = ('host1',)
    CHECK_INVARIANTS = True

    def test_an_orphan_claim_counts_on_a_promised_node(self):
        self.flags(placement_usage_interval=0.1, group='reservation')
        # host1 (7,680 MB): 4,096 promised from an hour on, the rest
        # claimed for a server that Nova has not.
        self.lease({'resource_type': 'flavor:instance',
                    'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                    'affinity': 'None'}, start=3600)
        orphan = uuidutils.generate_uuid()
        resp = self.placement.put('/allocations/%s' % orphan, {
            'allocations': {self._get_provider_uuid_by_host('host1'): {
                'resources': {'VCPU': 1, 'MEMORY_MB': 7680 - 4096,
                              'DISK_GB': 1}}},
            'project_id': nova_fixtures.PROJECT_ID,
            'user_id': 'fake', 'consumer_generation': None},
            version='1.28')
        self.assertEqual(204, resp.status, resp.body)
        reservation_filter.USAGE.refresh()
        # Nova's host state counts nothing there: only Placement's count
        # keeps the boot off the promised vCPU.
        server = self._create_server(
            name='o1', image_uuid=base.IMAGE, flavor_id=base.TINY,
            networks='none', expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        # The claim deleted (as nova-manage placement audit --delete
        # does), the node takes it again.
        self.assertEqual(204, self.placement.delete(
            '/allocations/%s' % orphan).status)
        reservation_filter.USAGE.refresh()
        self._create_server(name='o2', image_uuid=base.IMAGE,
                            flavor_id=base.TINY, networks='none')
