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

"""The engine's reconciler on real Nova: what a killed nova-api, a deletion
behind the hook's back or a boot that never finished leaves behind is
repaired, and nothing else is touched.
"""

import datetime
from typing import Optional
from unittest import mock

from neutronclient.common import exceptions as neutron_exceptions
from nova.compute import api as compute_api
from nova import context as nova_context
from nova import exception as nova_exception
from nova.network import model as network_model
from nova.network import neutron as neutron_api
from nova import objects
from nova.tests import fixtures as nova_fixtures
import sqlalchemy as sa

from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import holds as db_holds
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import models
from nova_reservation import exception
from nova_reservation.hooks import reserved
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class Killed(Exception):
    """nova-api killed at that point (nothing of the boot is undone)."""


class ReconcilerTest(base.BootTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.flags(creating_timeout=60, group='reservation')

    def later(self, seconds: float) -> None:
        """Move the engine's clock on."""
        self.clock.now = epoch.to_epoch(db_api.utcnow()) + seconds

    def sql(self, statement) -> None:
        """A state that only a killed process leaves behind."""
        engine = db_api.get_engine()
        with engine.begin() as conn:
            conn.execute(statement)

    def server_lease(self) -> tuple:
        resp = self.boot(base.params(base.when(60), base.when(120)))
        self.assertEqual(202, resp.status, resp.content)
        server = resp.body['server']
        return server['reservation']['lease_id'], server['id']

    def test_a_lease_left_creating_gets_its_servers(self):
        lease_id, uuid = self.server_lease()
        # nova-api died after Nova's 202, before it bound the server.
        self.sql(sa.delete(models.ServerBinding.__table__))
        self.sql(sa.update(models.Slot.__table__).values(
            instance_uuid=None))
        self.sql(sa.update(models.Lease.__table__).values(
            status='CREATING'))
        self.assertEqual([], self.engine.reconcile())   # not timed out yet
        self.later(120)
        repairs = self.engine.reconcile()
        self.assertEqual(1, len(repairs), repairs)
        self.assertEqual('PENDING', db_leases.get(STORE, lease_id).status)
        self.assertEqual([uuid], [b.instance_uuid for b in
                                  db_bindings.of_lease(STORE, lease_id)])
        self.run_engine()
        self.assertEqual('RESERVED', self.api.get_server(uuid)['status'])
        self.assertEqual([], self.engine.reconcile())

    def left_creating(self) -> None:
        """nova-api died after Nova's 202, before it bound the server."""
        self.sql(sa.delete(models.ServerBinding.__table__))
        self.sql(sa.update(models.Slot.__table__).values(
            instance_uuid=None))
        self.sql(sa.update(models.Lease.__table__).values(
            status='CREATING'))

    def test_engines_take_turns_at_repairs(self):
        # Two engines must never repair the same thing at once (Nova
        # fails two concurrent deletions of one server).
        self.flags(reconcile_interval=30, group='reservation')
        other = self.cloud.engine(clock=self.clock)
        lease_id, uuid = self.server_lease()
        start = epoch.to_epoch(db_api.utcnow()) + 120

        def at(seconds: float) -> None:
            self.clock.now = start + seconds

        self.left_creating()
        at(0)
        self.assertEqual(1, len(other.reconcile_in_turn()))
        self.assertEqual('PENDING', db_leases.get(STORE, lease_id).status)
        # The other engine's turn runs (two intervals): this one leaves
        # what it finds to it, and the other keeps its turn.
        self.left_creating()
        at(30)
        self.assertEqual([], self.engine.reconcile_in_turn())
        self.assertEqual('CREATING', db_leases.get(STORE, lease_id).status)
        self.assertEqual(1, len(other.reconcile_in_turn()))
        # An engine that stops taking its turn (dead) loses it two
        # intervals after it last took it.
        self.left_creating()
        at(89)
        self.assertEqual([], self.engine.reconcile_in_turn())
        at(90)
        self.assertEqual(1, len(self.engine.reconcile_in_turn()))
        self.assertEqual('PENDING', db_leases.get(STORE, lease_id).status)

    def test_a_lease_left_creating_without_servers_goes(self):
        lease_id, uuid = self.server_lease()
        self._delete_server({'id': uuid})
        self.sql(sa.update(models.Lease.__table__).values(
            status='CREATING'))
        self.sql(sa.delete(models.ServerBinding.__table__))
        self.later(120)
        self.engine.reconcile()
        self.assertEqual('DELETED', db_leases.get(STORE, lease_id).status)
        for res in db_leases.reservations(STORE, lease_id):
            self.assertEqual([], db_ledger.slots(STORE, res.id))

    def test_a_reserved_boot_cut_off_before_its_servers_were_made(self):
        # nova-api died after Nova wrote the boot's build requests, before
        # the servers were made reserved (and bound).
        with mock.patch.object(reserved, 'make'):
            lease_id, uuid = self.server_lease()
        self.sql(sa.delete(models.ServerBinding.__table__))
        self.sql(sa.update(models.Lease.__table__).values(
            status='CREATING'))
        self.assertEqual('BUILD', self.api.get_server(uuid)['status'])
        self.later(120)
        repairs = self.engine.reconcile()
        self.assertEqual(2, len(repairs), repairs)
        self.wait_gone(uuid)
        self.assertEqual('DELETED', db_leases.get(STORE, lease_id).status)
        for res in db_leases.reservations(STORE, lease_id):
            self.assertEqual([], db_ledger.slots(STORE, res.id))

    def cut_off(self, method: str, nic: Optional[dict] = None) -> tuple:
        """Boot a reserved server with a port (on a network, or `nic`), its
        nova-api killed in the hook at `method` of Nova's objects; (lease
        id, server id).
        """
        make = reserved.make

        def killed(*args) -> None:
            cls, name = method.split('.')
            with mock.patch.object(reserved, '_undo'), \
                    mock.patch.object(getattr(objects, cls), name,
                                      side_effect=Killed):
                try:
                    make(*args)
                except Killed:
                    pass
        with mock.patch.object(reserved, 'make', killed):
            resp = self.api.api_post('/servers', {
                'server': {'name': 'vm', 'imageRef': base.IMAGE,
                           'flavorRef': base.ONE_PER_NODE, 'networks': [
                               nic or {'uuid': nova_fixtures.NeutronFixture.
                                       network_1['id']}]},
                'os:scheduler_hints': {'lease_params': base.params(
                    base.when(60), base.when(120))}})
        server = resp.body['server']
        self.sql(sa.delete(models.ServerBinding.__table__))
        self.sql(sa.update(models.Lease.__table__).values(
            status='CREATING'))
        return server['reservation']['lease_id'], server['id']

    def ports_of(self, uuid: str) -> list:
        return [p['id'] for p in self.cloud.neutron.list_ports(True)[
            'ports'] if p['device_id'] == uuid]

    def assert_repaired(self, lease_id: str, uuid: str) -> None:
        """The reconciler removes the server, its port, its build request,
        and the lease, which frees its slot.
        """
        self.assertEqual('BUILD', self.api.get_server(uuid)['status'])
        self.assertEqual(1, len(self.ports_of(uuid)))
        self.later(120)
        repairs = ' '.join(self.engine.reconcile())
        self.assertIn('server %s was left half made' % uuid, repairs)
        self.wait_gone(uuid)
        self.assertEqual([], self.ports_of(uuid))
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))
        self.assertRaises(
            nova_exception.BuildRequestNotFound,
            objects.BuildRequest.get_by_instance_uuid,
            nova_context.get_admin_context(), uuid)
        self.assertEqual('DELETED', db_leases.get(STORE, lease_id).status)
        for res in db_leases.reservations(STORE, lease_id):
            self.assertEqual([], db_ledger.slots(STORE, res.id))
        self.assert_invariants()

    def test_a_boot_cut_off_after_its_port_before_its_mapping(self):
        # Nova's delete of the build request alone destroys the record in
        # the cell without its port.
        self.assert_repaired(*self.cut_off('InstanceMapping.save'))

    def test_a_boot_cut_off_between_its_mapping_and_its_build_request(self):
        # Both are written at once: the build request, were it left, would
        # be listed by Nova and never deleted.
        self.assert_repaired(*self.cut_off('BuildRequest.destroy'))

    def test_a_port_of_the_user_is_given_back_not_deleted(self):
        # Cut off before it wrote the server's network cache: the port,
        # made before the server, is the user's.
        port = self.cloud.neutron.create_port({'port': {
            'network_id': nova_fixtures.NeutronFixture.network_1['id'],
            'tenant_id': nova_fixtures.PROJECT_ID,
            'project_id': nova_fixtures.PROJECT_ID}})['port']
        self.cloud.neutron._ports[port['id']]['created_at'] = (
            '2026-01-01T00:00:00Z')
        lease_id, uuid = self.cut_off('InstanceMapping.save',
                                      nic={'port': port['id']})
        ctx = nova_context.get_admin_context()
        for cell in objects.CellMappingList.get_all(ctx):
            with nova_context.target_cell(ctx, cell) as cctxt:
                for instance in objects.InstanceList.get_by_filters(
                        cctxt, {'uuid': [uuid]}, expected_attrs=[
                            'info_cache']):
                    instance.info_cache.network_info = (
                        network_model.NetworkInfo([]))
                    instance.info_cache.save()
        self.later(120)
        self.engine.reconcile()
        self.wait_gone(uuid)
        kept = self.cloud.neutron.show_port(port['id'])['port']
        self.assertEqual('', kept['device_id'])
        self.assertEqual('DELETED', db_leases.get(STORE, lease_id).status)
        self.assert_invariants()

    def test_leftovers_are_cleared_once_neutron_answers(self):
        lease_id, uuid = self.cut_off('InstanceMapping.save')
        self.later(120)
        # Neutron away for the clearing (Nova's listing needs it too).
        with mock.patch.object(
                neutron_api.API, 'deallocate_for_instance',
                side_effect=neutron_exceptions.ConnectionFailed(
                    reason='the network service is down')):
            repairs = ' '.join(self.engine.reconcile())
        self.assertIn('server %s was left half made' % uuid, repairs)
        self.assertEqual(1, len(self.ports_of(uuid)))
        self.engine.reconcile()
        self.assertEqual([], self.ports_of(uuid))
        self.assert_invariants()

    def test_servers_of_a_deleted_lease_go(self):
        lease_id, uuid = self.server_lease()
        # Deleted while its boot was in flight: the end ran before the
        # servers were bound.
        self.sql(sa.delete(models.ServerBinding.__table__))
        db_leases.begin_delete(STORE, lease_id)
        self.run_engine()
        self.assertEqual('DELETED', db_leases.get(STORE, lease_id).status)
        self.assertEqual(uuid, self.api.get_server(uuid)['id'])
        self.engine.reconcile()
        self.wait_gone(uuid)
        self.assertEqual([], self.engine.reconcile())

    def test_a_server_deleted_behind_the_hooks_back_frees_its_slot(self):
        rid = self.running_lease(1)
        resp = self.post(self.boot_body(rid))
        uuid = resp.body['server']['id']
        self.node_of(uuid)
        self.run_engine()
        self.assertEqual({uuid}, set(self.bound(rid)))
        # Not through this nova-api (another one, or nova-manage).
        ctx = nova_context.get_admin_context()
        api = compute_api.API()
        api.delete(ctx, api.get(ctx, uuid))
        self.wait_gone(uuid)
        self.assertEqual({uuid}, set(self.bound(rid)))
        repairs = self.engine.reconcile()
        self.assertIn('server %s is gone' % uuid, ' '.join(repairs))
        self.assertEqual({}, self.bound(rid))
        again = self.post(self.boot_body(rid))
        self.assertEqual(202, again.status, again.content)

    def test_slots_held_by_a_boot_that_never_finished(self):
        rid = self.running_lease(2)
        self.assertTrue(db_ledger.claim_slots(
            STORE, rid, 2, db_ledger.CLAIM_PREFIX + 'dead-nova-api'))
        self.engine.reconcile()
        self.assertEqual(2, sum(1 for a in db_ledger.slots(STORE, rid)
                                if a.instance_uuid))
        self.engine.reconcile()
        self.assertEqual([None, None], [a.instance_uuid for a in
                                        db_ledger.slots(STORE, rid)])

    def test_capacity_held_for_a_change_never_made_is_freed(self):
        # nova-api died between holding what a change adds and writing it.
        rid = self.running_lease(1)
        slot, = db_ledger.slots(STORE, rid)
        lease = db_leases.get(STORE, db_leases.reservation(
            STORE, rid).lease_id)
        hold = db_holds.hold_id(self.clock())
        db_holds.hold(STORE, None, hold, [(rid, dict(
            node=slot.node, vcpus=slot.vcpus, memory_mb=slot.memory_mb,
            disk_gb=slot.disk_gb, start_at=slot.end_at,
            end_at=slot.end_at + datetime.timedelta(hours=1)))])
        self.engine.reconcile()
        self.assertEqual({hold}, db_ledger.claims(STORE,
                                                  db_ledger.HOLD_PREFIX))
        self.later(61)
        self.assertIn('%s: released' % hold, self.engine.reconcile())
        self.assertEqual(set(), db_ledger.claims(STORE,
                                                 db_ledger.HOLD_PREFIX))
        self.assertEqual([slot.id], [s.id for s in db_ledger.slots(
            STORE, rid, deleted=False)])
        # The change, were it written now, would hold nothing: refused.
        self.assertRaises(
            exception.LedgerConflict, db_leases.change, STORE, None,
            lease.id, lease.version, {'end_at': slot.end_at +
                                      datetime.timedelta(hours=1)},
            {}, {}, hold=(hold, 1))
        self.assertEqual(lease.end_at, db_leases.get(STORE, lease.id).end_at)
        self.assert_invariants()

    def test_a_server_lease_whose_servers_are_gone_goes(self):
        lease_id, uuid = self.server_lease()
        self.run_engine()
        ctx = nova_context.get_admin_context()
        api = compute_api.API()
        api.delete(ctx, api.get(ctx, uuid))
        self.wait_gone(uuid)
        self.engine.reconcile()
        self.assertEqual('DELETING', db_leases.get(STORE, lease_id).status)
        self.run_engine()
        self.assertEqual('DELETED', db_leases.get(STORE, lease_id).status)
