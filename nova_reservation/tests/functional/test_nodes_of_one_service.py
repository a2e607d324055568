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

"""Several compute nodes behind one nova-compute service, as Ironic's bare
metal nodes are: the ledger counts each node as a node (its own provider
in Placement), and a capacity lease's slots and servers go to the nodes,
not to their service.
"""

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE
BARE_METAL = ('bm1', 'bm2', 'bm3')


class NodesOfOneServiceTest(base.BootTestCase):
    NODES = ()
    SERVICES = {'conductor-bm': BARE_METAL}

    def test_the_cloud_has_three_nodes_of_one_service(self):
        hypervisors = self.admin_api.api_get(
            '/os-hypervisors/detail').body['hypervisors']
        self.assertEqual(
            [(n, 'conductor-bm') for n in BARE_METAL],
            sorted((h['hypervisor_hostname'], h['service']['host'])
                   for h in hypervisors))
        roots = self.placement.get('/resource_providers', version='1.14'
                                   ).body['resource_providers']
        self.assertEqual(list(BARE_METAL), sorted(
            p['name'] for p in roots
            if p['uuid'] == p['root_provider_uuid']))

    def test_a_capacity_lease_takes_nodes_not_their_service(self):
        # One server a node: three slots on the three nodes, and the
        # calendar shows each node.
        rid = self.running_lease(3)
        self.assertEqual(list(BARE_METAL), sorted(
            s.node for s in db_ledger.slots(STORE, rid)))
        resp = self.admin_rsv('GET', '/ledger')
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(list(BARE_METAL), [n['name'] for n in resp.json()[
            'ledger']['nodes']])
        uuids = [self.boot_into(rid, name='vm%d' % i).body['server']['id']
                 for i in range(3)]
        self.assertEqual(list(BARE_METAL),
                         sorted(self.node_of(u) for u in uuids))
        self.assertEqual(set(BARE_METAL), set(self.bound(rid).values()))
        # The fourth has no slot.
        resp = self.boot_into(rid, name='vm4')
        self.assertEqual(409, resp.status, resp.content)
        self.assertIn('0 of its 3 slots are free', resp.content.decode())


class EnrolledNodeTest(base.BootTestCase):
    """A node of a multi-node service is enrolled as a reservable host by
    its name or UUID, alone: its siblings stay the shared pool's, for
    ordinary boots and leases alike.
    """
    NODES = ()
    SERVICES = {'conductor-bm': BARE_METAL}

    def enroll(self, name: str):
        return self.admin_rsv('POST', '/os-hosts', {'name': name})

    def ordinary(self, name: str, state: str = 'ACTIVE') -> dict:
        return self._create_server(name=name, image_uuid=base.IMAGE,
                                   flavor_id=base.ONE_PER_NODE,
                                   networks='none', expected_state=state)

    def freepool(self) -> list:
        return {a['name']: a['hosts'] for a in self.admin_api.api_get(
            '/os-aggregates').body['aggregates']}.get('freepool', [])

    def test_a_node_is_enrolled_by_name_or_uuid_alone(self):
        by_name = {h['hypervisor_hostname']: h['id'] for h in
                   self.admin_api.api_get('/os-hypervisors').body[
                       'hypervisors']}
        resp = self.enroll('bm2')
        self.assertEqual(201, resp.status_code, resp.text)
        resp = self.enroll(by_name['bm3'])
        self.assertEqual(201, resp.status_code, resp.text)
        bm3 = resp.json()['host']
        self.assertEqual(('bm3', 'conductor-bm'), (
            bm3['hypervisor_hostname'], bm3['service_name']))
        resp = self.enroll('bm3')
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual(['conductor-bm'], self.freepool())
        # Ordinary boots: bm1 only (the enrolled two are set aside).
        first = self.ordinary('o1')
        self.assertEqual('bm1', first['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.ordinary('o2', 'ERROR')
        # A node that runs a server is refused, by its own servers only.
        resp = self.enroll('bm1')
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('bm1 runs 1 servers', resp.json()['error_message'])
        # The service leaves the freepool with its last enrolled node.
        hosts = {h['hypervisor_hostname']: h['id'] for h in self.admin_rsv(
            'GET', '/os-hosts').json()['hosts']}
        self.assertEqual(204, self.admin_rsv(
            'DELETE', '/os-hosts/%s' % hosts['bm2']).status_code)
        self.assertEqual(['conductor-bm'], self.freepool())
        self.assertEqual(204, self.admin_rsv(
            'DELETE', '/os-hosts/%s' % hosts['bm3']).status_code)
        self.assertEqual([], self.freepool())

    def test_a_host_lease_of_one_node_leaves_its_siblings(self):
        for name in ('bm1', 'bm2'):
            self.assertEqual(201, self.enroll(name).status_code)
        lease = self.lease({'resource_type': 'physical:host', 'min': '1',
                            'max': '1'})
        rid = lease['reservations'][0]['id']
        self.wait_for_start(lease)
        [node] = {s.node for s in db_ledger.slots(STORE, rid)}
        # The service is in the lease's aggregate, and stays in the
        # freepool for its other enrolled node.
        aggregates = {a['name']: a['hosts'] for a in self.admin_api.api_get(
            '/os-aggregates').body['aggregates']}
        self.assertEqual((['conductor-bm'], ['conductor-bm']),
                         (aggregates[rid], aggregates['freepool']))
        resp = self.boot_into(rid)
        self.assertEqual(202, resp.status, resp.content)
        self.assertEqual(node, self.node_of(resp.body['server']['id']))
        # An ordinary boot goes to the node no one enrolled; a capacity
        # lease too.
        self.assertEqual('bm3', self.ordinary('o1')[
            'OS-EXT-SRV-ATTR:hypervisor_hostname'])
        resp = self.rsv('POST', '/leases', base.flavor_lease(
            amount=1, start=3600, end=7200))
        self.assertEqual(409, resp.status_code, resp.text)


class MaintenanceOfNodesTest(base.BootTestCase):
    """A maintenance window over some nodes of a multi-node service leaves
    the service enabled for the others (the window holds its nodes whole
    in the ledger); over all of them, it disables the service.
    """
    NODES = ()
    SERVICES = {'conductor-bm': BARE_METAL}

    def window(self, nodes: list) -> dict:
        resp = self.admin_rsv('POST', '/leases', {
            'name': 'window', 'start_date': base.soon(2),
            'end_date': base.soon(3600), 'reservations': [{
                'resource_type': 'maintenance', 'hosts': nodes,
                'reason': 'firmware'}]})
        self.assertEqual(201, resp.status_code, resp.text)
        return resp.json()['lease']

    def service(self) -> dict:
        [found] = self.admin_api.api_get(
            '/os-services?binary=nova-compute').body['services']
        return found

    def test_a_window_on_one_node_leaves_the_others_in_service(self):
        made = self.window(['bm1'])
        self.start_lease(db_leases.get(STORE, made['id']))
        self.assertEqual('enabled', self.service()['status'])
        # Ordinary boots during the window: the two other nodes, never
        # the window's.
        nodes = [self._create_server(
            name='o%d' % i, image_uuid=base.IMAGE,
            flavor_id=base.ONE_PER_NODE, networks='none')[
            'OS-EXT-SRV-ATTR:hypervisor_hostname'] for i in (1, 2)]
        self.assertEqual(['bm2', 'bm3'], sorted(nodes))
        self.assertEqual(set(), self.nova_client().failed_nodes())

    def test_a_window_on_every_node_disables_the_service(self):
        made = self.window(list(BARE_METAL))
        row = db_leases.get(STORE, made['id'])
        self.start_lease(row)
        service = self.service()
        self.assertEqual('disabled', service['status'])
        self.assertIn('(maintenance window %s)' % made['id'],
                      service['disabled_reason'])
        self.run_engine(at=epoch.to_epoch(row.end_at) + 1)
        self.assertEqual('enabled', self.service()['status'])
