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

"""A reservation's new shape, as Blazar allows before the start: a
virtual:instance reservation's vcpus, memory_mb, disk_gb and affinity, a
physical:host reservation's requirements.  It is placed again whole, its
old slots go, and its private flavor and server group follow; after the
start only its size changes.
"""

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class InstanceReshapeTest(base.ReservationsTestCase):

    def put(self, lease, **changes):
        return self.rsv('PUT', '/leases/%s' % lease['id'], {'reservations': [
            dict(id=lease['reservations'][0]['id'], **changes)]})

    def slots(self, rid) -> list:
        return sorted((s.node, s.vcpus, s.memory_mb, s.disk_gb)
                      for s in db_ledger.slots(STORE, rid))

    def test_a_new_shape_replaces_the_slots_flavor_and_group(self):
        lease = self.lease({'resource_type': 'virtual:instance', 'vcpus': 1,
                            'memory_mb': 512, 'disk_gb': 1, 'amount': 1},
                           start=600)
        rid = lease['reservations'][0]['id']
        self.assertIsNone(lease['reservations'][0]['server_group_id'])
        self.assertEqual(1, len(self.slots(rid)))

        resp = self.put(lease, vcpus=2, memory_mb=1024, disk_gb=2, amount=2,
                        affinity='false')
        self.assertEqual(200, resp.status_code, resp.text)
        res = resp.json()['lease']['reservations'][0]
        self.assertEqual((2, 1024, 2, 2, False), (
            res['vcpus'], res['memory_mb'], res['disk_gb'], res['amount'],
            res['affinity']))
        # Anti-affinity: one slot on each node, and nothing else.
        self.assertEqual([('host1', 2, 1024, 2), ('host2', 2, 1024, 2)],
                         self.slots(rid))
        flavor = self.admin_api.api_get('/flavors/%s' % rid).body['flavor']
        self.assertEqual((2, 1024, 2), (flavor['vcpus'], flavor['ram'],
                                        flavor['disk']))
        group = self.api.api_get('/os-server-groups/%s' % res[
            'server_group_id']).body['server_group']
        self.assertEqual('anti-affinity', group['policy'])

        # Back to no affinity: the group goes.
        resp = self.put(lease, affinity=None)
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertIsNone(resp.json()['lease']['reservations'][0][
            'server_group_id'])
        self.assertEqual(404, self.api.api_get(
            '/os-server-groups/%s' % res['server_group_id'],
            check_response_status=False).status)

    def test_a_shape_that_does_not_fit_changes_nothing(self):
        lease = self.lease({'resource_type': 'virtual:instance', 'vcpus': 1,
                            'memory_mb': 512, 'disk_gb': 1, 'amount': 1},
                           start=600)
        rid = lease['reservations'][0]['id']
        before = self.slots(rid)
        resp = self.put(lease, vcpus=64)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual(before, self.slots(rid))
        self.assertEqual(lease, self.rsv('GET', '/leases/%s' % lease[
            'id']).json()['lease'])
        flavor = self.admin_api.api_get('/flavors/%s' % rid).body['flavor']
        self.assertEqual(1, flavor['vcpus'])

    def test_a_running_reservation_keeps_its_shape(self):
        lease = self.lease({'resource_type': 'virtual:instance', 'vcpus': 1,
                            'memory_mb': 512, 'disk_gb': 1, 'amount': 1})
        self.wait_for_start(lease)
        resp = self.put(lease, vcpus=2)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('reservations[0].vcpus', resp.json()['error_message'])
        # Its size still grows.
        resp = self.put(lease, amount=2)
        self.assertEqual(200, resp.status_code, resp.text)

    def test_a_server_lease_has_no_shape_to_change(self):
        server_id = self.boot_reserved()
        rid = self.admin_api.get_server(server_id)['reservation'][
            'reservation_id']
        lease_id = db_leases.reservation(STORE, rid).lease_id
        resp = self.rsv('PUT', '/leases/%s' % lease_id, {'reservations': [
            {'id': rid, 'vcpus': 2}]})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('reservations[0].vcpus: can not change',
                      resp.json()['error_message'])


class HostReshapeTest(base.ReservationsTestCase):
    NODES = ('host1', 'host2', 'host3')

    def test_new_requirements_choose_the_hosts_again(self):
        for name, gpu in (('host2', 'no'), ('host3', 'yes')):
            resp = self.admin_rsv('POST', '/os-hosts', {'name': name,
                                                        'gpu': gpu})
            self.assertEqual(201, resp.status_code, resp.text)
        lease = self.lease({'resource_type': 'physical:host', 'min': 1,
                            'max': 1, 'resource_properties':
                            '["==", "$gpu", "no"]'}, start=600)
        rid = lease['reservations'][0]['id']
        self.assertEqual(['host2'], [
            s.node for s in db_ledger.slots(STORE, rid)])
        resp = self.rsv('PUT', '/leases/%s' % lease['id'], {
            'reservations': [{'id': rid, 'resource_properties':
                              '["==", "$gpu", "yes"]'}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual('["==", "$gpu", "yes"]', resp.json()['lease'][
            'reservations'][0]['resource_properties'])
        self.assertEqual(['host3'], [
            s.node for s in db_ledger.slots(STORE, rid)])
        # Requirements no host meets: a 409, and the hosts stay.
        resp = self.rsv('PUT', '/leases/%s' % lease['id'], {
            'reservations': [{'id': rid, 'hypervisor_properties':
                              '[">=", "$vcpus", "1000"]'}]})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual(['host3'], [
            s.node for s in db_ledger.slots(STORE, rid)])
