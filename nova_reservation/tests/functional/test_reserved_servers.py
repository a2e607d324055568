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

"""A future lease's servers hold nothing and never run before the start,
on real Nova: no allocation, no instance on a node, no image; at the start
they are built as they were asked for.
"""

import base64
import json
from unittest import mock

from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures
from oslo_db import exception as db_exception

from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()
when = base.when
params = base.params
TINY = '1'   # m1.tiny: 1 vCPU
NETWORK = nova_fixtures.NeutronFixture.network_1['id']


class ReservedServerTest(base.ReservationTestCase):

    def test_a_cloud_full_now_takes_a_future_lease(self):
        # Both nodes are leased until 20 minutes from now.
        resp = self.boot(params('now', when(20)), count=2, name='busy')
        self.assertEqual(202, resp.status, resp.content)
        busy = self.leases()[0]
        images = len(self.glance.images)
        resp = self.boot(params(when(30), when(60)))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertEqual('RESERVED',
                         resp.body['server']['reservation']['status'])
        lease = self.lease_of_server(uuid)
        self.assertEqual('PENDING', lease.status)
        self.assert_holds_nothing(uuid, images)
        self.run_engine()
        self.assert_holds_nothing(uuid, images)
        slot = db_ledger.slot_of(
            STORE, self.api.get_server(uuid)['reservation']['reservation_id'],
            uuid)

        self.run_engine(at=epoch.to_epoch(busy.end_at) + 1)
        self.assert_holds_nothing(uuid, images)
        self.start_lease(lease)
        server = self.admin_api.get_server(uuid)
        self.assertEqual(('ACTIVE', slot.host, slot.node),
                         (server['status'], server['OS-EXT-SRV-ATTR:host'],
                          server['OS-EXT-SRV-ATTR:hypervisor_hostname']))
        self.assertIn(uuid, self.computes[slot.node].driver.
                      list_instance_uuids())
        self.assertEqual(images, len(self.glance.images))
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease.id).status)

        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        self._wait_until_deleted(server)
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease.id).status)

    def test_the_server_is_built_as_it_was_asked_for(self):
        cinder = self.useFixture(nova_fixtures.CinderFixture(
            self.cloud.harness))
        volume = nova_fixtures.CinderFixture.SWAP_OLD_VOL
        self.api.api_post('/os-keypairs', {'keypair': {'name': 'k1'}})
        user_data = base64.b64encode(b'#!/bin/sh\necho hi\n').decode()
        server = {
            'name': 'vm', 'imageRef': base.IMAGE,
            'flavorRef': base.ONE_PER_NODE, 'key_name': 'k1',
            'networks': [{'uuid': NETWORK}], 'user_data': user_data,
            'metadata': {'purpose': 'test'}, 'tags': ['blue', 'green'],
            'security_groups': [{'name': 'default'}],
            'block_device_mapping_v2': [
                {'boot_index': 0, 'uuid': base.IMAGE,
                 'source_type': 'image', 'destination_type': 'local'},
                {'boot_index': -1, 'uuid': volume, 'source_type': 'volume',
                 'destination_type': 'volume'}]}
        resp = self.api.api_post('/servers', {
            'server': server, 'os:scheduler_hints': {
                'lease_params': params(when(60), when(120))}},
            check_response_status=False)
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assert_holds_nothing(uuid, len(self.glance.images))
        # Its port is made, bound to no host yet.
        ports = self.cloud.neutron.list_ports(True, device_id=uuid)['ports']
        self.assertEqual([NETWORK], [p['network_id'] for p in ports])
        self.assertFalse(ports[0].get('binding:host_id'))
        self.assertEqual([volume], list(cinder.volume_ids_for_instance(uuid)))

        self.start_lease(self.lease_of_server(uuid))
        view = self.admin_api.get_server(uuid)
        self.assertEqual('ACTIVE', view['status'])
        self.assertEqual(base.IMAGE, view['image']['id'])
        self.assertEqual('vm', view['name'])
        self.assertEqual('k1', view['key_name'])
        self.assertEqual(user_data, view['OS-EXT-SRV-ATTR:user_data'])
        self.assertEqual('test', view['metadata']['purpose'])
        self.assertLessEqual({'blue', 'green'}, set(view['tags']))
        self.assertEqual(['default'],
                         [g['name'] for g in view['security_groups']])
        self.assertIn('private', view['addresses'])
        port = self.cloud.neutron.show_port(ports[0]['id'])['port']
        self.assertEqual(view['OS-EXT-SRV-ATTR:host'],
                         port['binding:host_id'])
        attached = self.api.api_get(
            '/servers/%s/os-volume_attachments' % uuid).body
        self.assertEqual([volume], [a['volumeId'] for a in
                                    attached['volumeAttachments']])

    def test_each_nova_action_on_a_reserved_server(self):
        uuid = self.boot_reserved()
        lease = self.lease_of_server(uuid)
        start = str(lease.start_at.replace(microsecond=0))
        done = [('PUT', '', {'server': {'name': 'renamed'}}),
                ('PUT', '/metadata', {'metadata': {'a': '1'}}),
                ('POST', '/metadata', {'metadata': {'b': '2'}}),
                ('PUT', '/metadata/c', {'meta': {'c': '3'}}),
                ('DELETE', '/metadata/a', None),
                ('PUT', '/tags/red', None),
                ('PUT', '/tags', {'tags': ['red', 'lease-' + lease.id]}),
                ('DELETE', '/tags/red', None)]
        for method, below, body in done:
            resp = self.api.api_request(
                '/servers/%s%s' % (uuid, below), method=method,
                body=None if body is None else json.dumps(body),
                check_response_status=False)
            self.assertLess(resp.status_code, 300,
                            (method, below, resp.content))
        view = self.api.get_server(uuid)
        self.assertEqual('renamed', view['name'])
        self.assertEqual({'b': '2', 'c': '3'},
                         {k: v for k, v in view['metadata'].items()
                          if k in 'abc'})
        self.assertEqual(['lease-' + lease.id], view['tags'])
        # Nova's checks of metadata hold for a reserved server too.
        for method, below, body, code in [
                ('PUT', '/metadata/x', {'meta': {'y': '1'}}, 400),
                ('POST', '/metadata', {'metadata': {'k': 'v' * 256}}, 400),
                ('POST', '/metadata', {'metadata': {'': 'v'}}, 400),
                ('POST', '/metadata', {'meta': {}}, 400),
                ('DELETE', '/metadata/nope', None, 404),
                ('DELETE', '/metadata', None, 405),
                ('PUT', '/tags/a,b', None, 400),
                ('PUT', '/tags', {'tags': ['x' * 61]}, 400),
                ('DELETE', '/tags/nope', None, 404),
                ('POST', '/tags', {'tags': []}, 405)]:
            resp = self.api.api_request(
                '/servers/%s%s' % (uuid, below), method=method,
                body=None if body is None else json.dumps(body),
                check_response_status=False)
            self.assertEqual(code, resp.status_code, (method, below))
        resp = self.other_api.api_request(
            '/servers/%s/metadata' % uuid, method='POST',
            body=json.dumps({'metadata': {'a': 'b'}}),
            check_response_status=False)
        self.assertEqual(404, resp.status_code)
        refused = [
            ('POST', '/action', {'reboot': {'type': 'SOFT'}}),
            ('POST', '/action', {'os-stop': None}),
            ('POST', '/action', {'os-start': None}),
            ('POST', '/action', {'unshelve': None}),
            ('POST', '/action', {'shelve': None}),
            ('POST', '/action', {'shelveOffload': None}),
            ('POST', '/action', {'pause': None}),
            ('POST', '/action', {'suspend': None}),
            ('POST', '/action', {'lock': None}),
            ('POST', '/action', {'resize': {'flavorRef': '1'}}),
            ('POST', '/action', {'rebuild': {'imageRef': base.IMAGE}}),
            ('POST', '/action', {'createImage': {'name': 'x'}}),
            ('POST', '/action', {'createBackup': {
                'name': 'x', 'backup_type': 'daily', 'rotation': 1}}),
            ('POST', '/action', {'changePassword': {'adminPass': 'x'}}),
            ('POST', '/action', {'rescue': None}),
            ('POST', '/action', {'os-getConsoleOutput': {}}),
            ('POST', '/os-volume_attachments',
             {'volumeAttachment': {'volumeId': 'x'}}),
            ('POST', '/os-interface', {'interfaceAttachment': {}}),
            ('DELETE', '/os-server-password', None),
            ('POST', '/remote-consoles', {'remote_console': {
                'protocol': 'vnc', 'type': 'novnc'}}),
        ]
        for method, below, body in refused:
            resp = self.api.api_request(
                '/servers/%s%s' % (uuid, below), method=method,
                body=None if body is None else json.dumps(body),
                check_response_status=False)
            self.assertEqual(409, resp.status_code, (method, below, body))
            message = resp.json()['conflictingRequest']['message']
            self.assertIn('reserved until %s' % start, message)
        view = self.admin_api.get_server(uuid)
        self.assertEqual(('RESERVED', 'shelved_offloaded', None),
                         (view['status'], view['OS-EXT-STS:vm_state'],
                          view['OS-EXT-STS:task_state']))
        # Shown in the list, and deleted like any server.
        self.assertIn(uuid, [s['id'] for s in self.api.get_servers()])
        self.api.delete_server(uuid)
        self.wait_gone(uuid)
        self.assertEqual([], db_ledger.slots(
            STORE, db_leases.reservations(STORE, lease.id)[0].id))

    def test_a_deleted_reserved_server_frees_its_slot_and_port(self):
        uuids = [self.boot_reserved(), self.boot_reserved()]
        self.assertEqual(409, self.boot(params(when(60), when(120))).status)
        self.api.delete_server(uuids[0])
        self.wait_gone(uuids[0])
        self.assertEqual([], self.cloud.neutron.list_ports(
            True, device_id=uuids[0])['ports'])
        self.boot_reserved()

    def test_multi_create_in_an_anti_affinity_group_without_network(self):
        group = self.api.post_server_groups(
            {'name': 'g', 'policy': 'anti-affinity'})
        resp = self.boot(params(when(60), when(120)), count=2,
                         extra_hints={'group': group['id']})
        self.assertEqual(202, resp.status, resp.content)
        uuids = [s['id'] for s in self.api.get_servers()]
        self.assertEqual(2, len(uuids))
        images = len(self.glance.images)
        for uuid in uuids:
            self.assert_holds_nothing(uuid, images)
        self.assertEqual(sorted(uuids), sorted(
            self.api.api_get('/os-server-groups/%s' % group['id']
                             ).body['server_group']['members']))
        self.start_lease(self.lease_of_server(uuids[0]))
        hosts = {self.admin_api.get_server(u)['OS-EXT-SRV-ATTR:host']
                 for u in uuids}
        self.assertEqual(set(self.NODES), hosts)
        for uuid in uuids:
            view = self.admin_api.get_server(uuid)
            self.assertEqual(('ACTIVE', {}),
                             (view['status'], view['addresses']))

    def test_what_nova_can_not_store_is_a_400_that_leaves_nothing(self):
        # MySQL's three-byte UTF-8 tables of Nova refuse four-byte text
        # that Nova's API let through; the second server fails, after the
        # first was made.
        real = objects.TagList.create
        calls = []

        def create(*args):
            calls.append(args)
            if len(calls) == 2:
                raise db_exception.DBDataError('Incorrect string value')
            return real(*args)
        ports = self.cloud.neutron.list_ports(True)['ports']
        with mock.patch.object(objects.TagList, 'create', create):
            resp = self.api.api_post('/servers', {
                'server': {'name': 'vm', 'imageRef': base.IMAGE,
                           'flavorRef': base.ONE_PER_NODE,
                           'networks': [{'uuid': NETWORK}],
                           'min_count': 2, 'max_count': 2},
                'os:scheduler_hints': {
                    'lease_params': params(when(60), when(120))}},
                check_response_status=False)
        self.assertEqual(400, resp.status, resp.content)
        self.assertIn('can not store', resp.body['badRequest']['message'])
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1, 'deleted': False}))
        self.assertEqual([], self.leases())
        self.assertEqual(ports, self.cloud.neutron.list_ports(True)['ports'])

    def test_min_count_makes_what_fits_in_the_slots(self):
        resp = self.api.api_post('/servers', {
            'server': {'name': 'vm', 'imageRef': base.IMAGE,
                       'flavorRef': base.ONE_PER_NODE, 'networks': 'none',
                       'min_count': 1, 'max_count': 2,
                       'return_reservation_id': True},
            'os:scheduler_hints': {
                'lease_params': params(when(60), when(120))}},
            check_response_status=False)
        self.assertEqual(202, resp.status, resp.content)
        servers = self.api.get_servers()
        self.assertEqual(2, len(servers))
        self.assertEqual({'RESERVED'}, {s['status'] for s in servers})


class QuotaTest(base.ReservationTestCase):
    """A reserved server counts as an offloaded one: the instance always,
    cores and RAM only where Nova counts them from its records.
    """

    def _in_use(self) -> dict:
        quota = self.api.api_get('/os-quota-sets/%s/detail'
                                 % nova_fixtures.PROJECT_ID).body
        return {k: quota['quota_set'][k]['in_use']
                for k in ('instances', 'cores', 'ram')}

    def _check(self, from_placement: bool) -> None:
        self.flags(count_usage_from_placement=from_placement,
                   group='quota')
        self.flags(instances=2, cores=20, ram=-1, group='quota')
        lease = params(when(60), when(120))
        self.assertEqual(202, self.boot(lease, flavor=TINY).status)
        used = self._in_use()
        self.assertEqual(1, used['instances'])
        self.assertEqual(0 if from_placement else 1, used['cores'])
        # The quota is checked at the boot: a third instance is over it.
        self.assertEqual(202, self.boot(lease, flavor=TINY).status)
        resp = self.boot(lease, flavor=TINY)
        self.assertEqual(403, resp.status, resp.content)
        self.assertIn('Quota exceeded', resp.body['forbidden']['message'])
        self.assertEqual(2, len(self.leases()) - len(
            [x for x in self.leases() if x.status == 'DELETED']))

    def test_counted_from_the_records(self):
        self._check(False)

    def test_counted_from_placement(self):
        self._check(True)


class TwoCellsTest(base.ReservationTestCase):
    NODES = ('host1', 'host2')
    CELLS = {'host2': 'cell2'}

    def test_reserved_servers_start_in_the_cells_of_their_nodes(self):
        # Two servers over one interval fill both nodes: the ledger spans
        # both cells, and each server is made in the cell of its node.
        uuids = [self.boot_reserved(), self.boot_reserved()]
        slots = {}
        for uuid in uuids:
            rid = self.api.get_server(uuid)['reservation']['reservation_id']
            slots[uuid] = db_ledger.slot_of(STORE, rid, uuid).node
        self.assertEqual(set(self.NODES), set(slots.values()))
        ctxt = nova_context.get_admin_context()
        for uuid in uuids:
            cell = objects.InstanceMapping.get_by_instance_uuid(
                ctxt, uuid).cell_mapping.name
            self.assertEqual(self.CELLS.get(slots[uuid], 'cell1'), cell)
        # Each boot's lease starts an hour after its boot: the later one.
        start = max(db_leases.get(STORE, self.api.get_server(uuid)[
            'reservation']['lease_id']).start_at for uuid in uuids)
        self.run_engine(at=epoch.to_epoch(start) + 1)
        for uuid in uuids:
            view = self.admin_api.get_server(uuid)
            self.assertEqual(('ACTIVE', slots[uuid]),
                             (view['status'],
                              view['OS-EXT-SRV-ATTR:hypervisor_hostname']))
