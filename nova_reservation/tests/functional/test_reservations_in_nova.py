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

"""Capacity and host reservations made through the lease API, used by real
boots in real Nova."""

from oslo_utils import uuidutils

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class CapacityReservationTest(base.ReservationsTestCase):

    def test_flavor_reservation(self):
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': '1',
                            'affinity': 'None'}, start=8.0)
        rid = lease['reservations'][0]['id']
        reserved = db_ledger.slots(STORE, rid)[0].node
        # First, while the start is surely ahead: the refusal is by the
        # clock, and two boots can take the 8 s on a slow machine.
        early = self.boot_into(rid)
        self.assertEqual(409, early.status, early.content)
        self.assertIn('not active', early.body['conflictingRequest'][
            'message'])

        # Ordinary boots fill the cloud, but not the capacity promised to
        # the lease (before its start or after it).
        first = self._create_server(name='o1', image_uuid=base.IMAGE,
                                    flavor_id=base.ONE_PER_NODE,
                                    networks='none')
        self.assertNotEqual(reserved, self.node_of(first['id']))
        self._create_server(name='o2', image_uuid=base.IMAGE,
                            flavor_id=base.ONE_PER_NODE, networks='none',
                            expected_state='ERROR')

        self.wait_for_start(lease)
        resp = self.boot_into(rid)
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertEqual(reserved, self.node_of(uuid))
        self.run_engine()   # binds the server to its slot
        self.assertEqual(uuid, db_ledger.slots(STORE, rid)[0].instance_uuid)

        full = self.boot_into(rid, name='vm2')
        self.assertEqual(409, full.status, full.content)
        self.assertIn('0 of its 1 slots are free',
                      full.body['conflictingRequest']['message'])
        other = self.boot_into(rid, api=self.other_api)
        self.assertEqual(404, other.status, other.content)
        too_big = self.boot_into(rid, flavor='4')
        self.assertEqual(400, too_big.status, too_big.content)
        self.assertTrue(too_big.body['badRequest']['message'].startswith(
            'flavorRef:'))

        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % lease['id']).status_code)
        self.run_engine()
        self.wait_gone(uuid)
        self.assertEqual(404, self.rsv('GET', '/leases/%s'
                                       % lease['id']).status_code)

    def test_flavor_reservation_booted_with_the_reservation_id(self):
        # Blazar's flavor-based workflow: --flavor <reservation id>, no
        # hint; the reservation's flavor copies the flavor asked for.
        self.admin_api.post_extra_spec(base.ONE_PER_NODE, {
            'extra_specs': {'hw:cpu_policy': 'shared'}})
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 1},
                           start=8.0)
        rid = lease['reservations'][0]['id']
        # Before the start: a 409 that says when it starts.
        before = self.boot(None, flavor=rid, name='early')
        self.assertEqual(409, before.status, before.content)
        self.assertIn('not active', before.body['conflictingRequest'][
            'message'])
        self.wait_for_start(lease)
        private = self.api.api_get('/flavors/%s' % rid).body['flavor']
        source = self.api.api_get('/flavors/%s'
                                  % base.ONE_PER_NODE).body['flavor']
        for field in ('vcpus', 'ram', 'disk', 'extra_specs'):
            self.assertEqual(source[field], private[field], field)
        resp = self.boot(None, flavor=rid, name='a')
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertEqual(db_ledger.slots(STORE, rid)[0].node,
                         self.node_of(uuid))
        second = self.boot(None, flavor=rid, name='b')
        self.assertEqual(409, second.status, second.content)
        self.assertNotIn(rid, [f['id'] for f in
                               self.other_api.get_flavors()])
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % lease['id']).status_code)
        self.run_engine()
        self.wait_gone(uuid)
        self.assertEqual(404, self.admin_api.api_get(
            '/flavors/%s' % rid, check_response_status=False).status)

    def test_virtual_reservation_with_its_private_flavor(self):
        lease = self.lease({'resource_type': 'virtual:instance',
                            'vcpus': 1, 'memory_mb': 1024, 'disk_gb': 1,
                            'amount': 2, 'affinity': 'True',
                            'resource_properties': ''})
        res = lease['reservations'][0]
        slots = db_ledger.slots(STORE, res['id'])
        self.assertEqual(1, len({s.node for s in slots}))   # affinity
        # As in Blazar: a server group of the reservation's affinity.
        group = self.api.api_get('/os-server-groups/%s' % res[
            'server_group_id']).body['server_group']
        self.assertEqual(('reservation:%s' % res['id'], 'affinity'),
                         (group['name'], group['policy']))
        self.wait_for_start(lease)
        # Blazar's way: boot with the reservation's flavor and group, no
        # reservation hint.
        uuids = []
        for name in ('a', 'b'):
            resp = self.boot(None, flavor=res['flavor_id'], name=name,
                             extra_hints={'group': group['id']})
            self.assertEqual(202, resp.status, resp.content)
            uuids.append(resp.body['server']['id'])
        self.assertEqual({slots[0].node}, {self.node_of(u) for u in uuids})
        self.assertEqual(sorted(uuids), sorted(self.api.api_get(
            '/os-server-groups/%s' % group['id']).body['server_group'][
            'members']))
        third = self.boot(None, flavor=res['flavor_id'], name='c')
        self.assertEqual(409, third.status, third.content)
        flavors = [f['id'] for f in self.api.get_flavors()]
        self.assertIn(res['flavor_id'], flavors)
        other = [f['id'] for f in self.other_api.get_flavors()]
        self.assertNotIn(res['flavor_id'], other)
        # The lease's end takes its flavor and its group.
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % lease['id']).status_code)
        self.run_engine()
        for uuid in uuids:
            self.wait_gone(uuid)
        for path in ('/os-server-groups/%s' % group['id'],
                     '/flavors/%s' % res['flavor_id']):
            self.assertEqual(404, self.admin_api.api_get(
                path, check_response_status=False).status, path)


class HostReservationTest(base.ReservationsTestCase):
    NODES = ('host1', 'host2', 'host3')

    def _aggregates(self) -> dict:
        return {a['name']: a for a in self.admin_api.api_get(
            '/os-aggregates').body['aggregates']}

    def test_host_reservation(self):
        resp = self.admin_rsv('POST', '/os-hosts', {'name': 'host3',
                                                    'gpu': 'yes'})
        self.assertEqual(201, resp.status_code, resp.text)
        host = resp.json()['host']
        self.assertEqual(('host3', 'yes'), (host['hypervisor_hostname'],
                                            host['gpu']))
        self.assertEqual(['host3'], self._aggregates()['freepool']['hosts'])

        # Ordinary boots never land on a reservable host.
        for name in ('o1', 'o2', 'o3', 'o4'):
            server = self._create_server(name=name, image_uuid=base.IMAGE,
                                         flavor_id=base.TINY, networks='none')
            self.assertNotEqual('host3', self.node_of(server['id']))

        lease = self.lease({'resource_type': 'physical:host', 'min': '1',
                            'max': '1', 'hypervisor_properties':
                            '[">=", "$memory_mb", "4096"]',
                            'resource_properties': '["==", "$gpu", "yes"]'})
        rid = lease['reservations'][0]['id']
        allocs = self.admin_rsv('GET', '/os-hosts/allocations').json()
        self.assertEqual([{'id': rid, 'lease_id': lease['id'],
                           'start_date': lease['start_date'],
                           'end_date': lease['end_date']}],
                         allocs['allocations'][0]['reservations'])
        self.assertEqual([], self.admin_rsv(
            'GET', '/os-hosts/allocations?lease_id=%s'
            % uuidutils.generate_uuid()).json()['allocations'])
        self.assertEqual(400, self.admin_rsv(
            'GET', '/os-hosts/allocations?lease_id=x').status_code)
        self.wait_for_start(lease)
        aggs = self._aggregates()
        self.assertEqual([], aggs['freepool']['hosts'])
        lease_agg = aggs[rid]   # named as Blazar names it
        self.assertEqual(['host3'], lease_agg['hosts'])
        self.assertEqual(lease['project_id'], lease_agg['metadata'][
            'reservation:project_id'])

        resp = self.boot_into(rid, flavor=base.TINY)
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertEqual('host3', self.node_of(uuid))
        # The host is the project's: as many servers as it holds.
        second = self.boot_into(rid, flavor=base.TINY, name='vm2')
        self.assertEqual(202, second.status, second.content)
        second = second.body['server']['id']
        self.assertEqual('host3', self.node_of(second))
        self.run_engine()
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease['id']).status)
        self.assertEqual([None], [s.instance_uuid for s in
                                  db_ledger.slots(STORE, rid)])
        other = self.boot_into(rid, api=self.other_api, flavor=base.TINY)
        self.assertEqual(404, other.status, other.content)
        ordinary = self._create_server(name='o5', image_uuid=base.IMAGE,
                                       flavor_id=base.TINY, networks='none')
        self.assertNotEqual('host3', self.node_of(ordinary['id']))
        self.assertEqual(409, self.admin_rsv(
            'DELETE', '/os-hosts/%s' % host['id']).status_code)

        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % lease['id']).status_code)
        self.run_engine()
        self.wait_gone(uuid)
        self.wait_gone(second)
        aggs = self._aggregates()
        self.assertEqual(['host3'], aggs['freepool']['hosts'])
        self.assertNotIn(rid, aggs)

    def test_no_matching_host_is_a_409(self):
        self.admin_rsv('POST', '/os-hosts', {'name': 'host3'})
        body = {'name': 'l', 'start_date': base.soon(60),
                'end_date': base.soon(3600),
                'reservations': [{'resource_type': 'physical:host',
                                  'min': 2, 'max': 2}]}
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('2 to 2 reservable hosts', resp.json()['error_message'])

    def test_a_node_that_holds_promised_capacity_is_not_enrolled(self):
        # One slot on each of the three nodes.
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 3},
                           start=600)
        resp = self.admin_rsv('POST', '/os-hosts', {'name': 'host3'})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('name: host3 holds capacity of lease %s'
                      % lease['id'], resp.json()['error_message'])
        self.assertNotIn('host3', self._aggregates().get(
            'freepool', {}).get('hosts', []))
        # Once the lease is gone, the node can be enrolled.
        self.rsv('DELETE', '/leases/%s' % lease['id'])
        resp = self.admin_rsv('POST', '/os-hosts', {'name': 'host3'})
        self.assertEqual(201, resp.status_code, resp.text)
