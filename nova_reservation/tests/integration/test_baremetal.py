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

"""Bare-metal nodes in Ironic's shape (``tools/localcloud up --baremetal``):
one nova-compute service serving bm1 and bm2 (one unit of
CUSTOM_BAREMETAL_GOLD each) and bm3 (SILVER), with no vCPU, RAM or disk.
A node is enrolled alone and leased by Blazar's query language over its
capabilities and traits; a boot into the lease lands on it with only its
class allocated, while the service's other nodes stay everyone's, and a
lease of the flavor never takes a node an ordinary server holds.
"""

from devcloud import baremetal
from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base


class BareMetalTest(base.BlazarCLI):

    def classes(self) -> dict:
        """{node: its classes} of this lane's bare-metal service."""
        headers = {'OpenStack-API-Version': 'placement 1.14'}
        admin = self.admin_session()
        found = {}
        own = set(map(self.node, baremetal.NODES))
        for rp in admin.get(cloud.url('placement') + '/resource_providers',
                            headers=headers).json()['resource_providers']:
            if rp['name'] in own:
                found[rp['name']] = sorted(admin.get(
                    '%s/resource_providers/%s/inventories' % (
                        cloud.url('placement'), rp['uuid']),
                    headers=headers).json()['inventories'])
        return found

    def host_lease(self, user: str, name: str, requirements: str):
        """A lease of one node of this lane that meets `requirements`
        (hypervisor_properties) from now (the API's own dates) for 15
        minutes: the response.
        """
        resp = base.CLOUD.session(user).post(base.LEASES, json={
            'name': name, 'start_date': base.utc(2),
            'end_date': base.utc(900), 'reservations': [dict(
                resource_type='physical:host', min='1', max='1',
                hypervisor_properties=self.on_lane(requirements))]},
            raise_exc=False)
        if resp.status_code == 201:
            self.addCleanup(self.delete_lease, resp.json()['lease']['id'])
        return resp

    def test_a_node_is_leased_alone_by_its_capabilities_and_traits(self):
        self.assertEqual({self.node(node): [rc]
                          for node, rc in baremetal.NODES.items()},
                         self.classes(), 'tools/localcloud up --baremetal')
        for node, kind in (('bm1', 'gpu_rtx_6000'), ('bm3', 'compute')):
            host = self.openstack('admin', 'reservation', 'host', 'create',
                                  '--extra', 'node_type=' + kind,
                                  self.node(node))
            self.addCleanup(self.delete, 'reservation',
                            '/os-hosts/%s' % host['id'])
            self.assertEqual(self.node(baremetal.SERVICE),
                             host['service_name'])
        # Chameleon's query, through Blazar's CLI; on this lane's nodes
        # (the other lanes enroll theirs meanwhile).
        lease = self.lease('alice', 'bm-gpu-' + self.suffix,
                           'resource_type=physical:host,min=1,max=1,'
                           'hypervisor_properties=%s,'
                           'resource_properties=["==", "$node_type", '
                           '"gpu_rtx_6000"]' % self.on_lane())
        rid = lease['reservation_id']
        self.assertEqual([self.node('bm1')], [r['node'] for r in self.store(
            'SELECT node FROM rsv_allocations WHERE reservation_id = %s '
            'AND deleted = 0', rid)])
        # By trait: no other gold node of this lane is enrolled; the
        # silver one is bob's.
        resp = self.host_lease('bob', 'bm-gold-' + self.suffix,
                               '["==", "$traits", "%s"]' % baremetal.GOLD)
        self.assertEqual(409, resp.status_code, resp.text)
        resp = self.host_lease('bob', 'bm-other-' + self.suffix,
                               '["!=", "$traits", "%s"]' % baremetal.GOLD)
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual([self.node('bm3')], [r['node'] for r in self.store(
            'SELECT node FROM rsv_allocations WHERE reservation_id = %s '
            'AND deleted = 0', resp.json()['lease']['reservations'][0][
                'id'])])
        # alice's server on her node, with only its class allocated.
        gold = self.flavor('bm.gold')
        server_id, = self.boot('alice', 'bm-' + self.suffix, gold,
                               'reservation=' + rid)
        server = self.settled(server_id)
        self.assertEqual('ACTIVE', server['status'], server)
        self.assertEqual(self.node('bm1'),
                         server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        allocations = self.admin_session().get(
            '%s/allocations/%s' % (cloud.url('placement'), server_id),
            headers={'OpenStack-API-Version': 'placement 1.14'}).json()[
                'allocations']
        self.assertEqual([{baremetal.GOLD: 1}],
                         [a['resources'] for a in allocations.values()])
        # The node no one enrolled is everyone's: bob's ordinary server.
        ordinary_id, = self.boot('bob', 'bm-ordinary-' + self.suffix, gold)
        ordinary = self.settled(ordinary_id)
        self.assertEqual(self.node('bm2'),
                         ordinary['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        # Then no gold node is left for a lease of the flavor.
        flavors = {f['name']: f['id'] for f in self.rest(
            cloud.url('nova') + '/flavors')['flavors']}
        done = self.run_cli(
            'alice', 'openstack', 'reservation', 'lease', 'create',
            '--start-date', base.minutes(60), '--end-date',
            base.minutes(120), '--reservation',
            'resource_type=flavor:instance,flavor_id=%s,amount=1'
            % flavors[gold], 'bm-later-' + self.suffix, '-f', 'json',
            check=False)
        self.assert_lease_refused(done, 'Not enough capacity',
                                  baremetal.GOLD)
        self.assert_nothing_written('bm-later-' + self.suffix)
        self.assert_invariants()
