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

"""A reserved server's ports, with Nova's stand-in for Neutron: a port
handed to the boot, what does not exist, and Neutron down at the boot or at
the start.  (Another project's port or volume, and a volume that does not
exist, need the real services' checks: the integration suite has them.)
"""

from nova.tests import fixtures as nova_fixtures

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.tests.functional import base
from nova_reservation.tests.functional.base import params
from nova_reservation.tests.functional.base import when

STORE = base.STORE
NETWORK = nova_fixtures.NeutronFixture.network_1['id']
MISSING = '00000000-0000-4000-8000-000000000000'


class PortsTest(base.ReservationTestCase):

    def reserved_boot(self, **server):
        body = dict({'name': 'vm', 'imageRef': base.IMAGE,
                     'flavorRef': base.ONE_PER_NODE}, **server)
        return self.api.api_post('/servers', {
            'server': body, 'os:scheduler_hints': {
                'lease_params': params(when(60), when(120))}},
            check_response_status=False)

    def assert_nothing_made(self, ports: list) -> None:
        self.assertEqual([], self.leases())
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))
        self.assertEqual(ports, self.cloud.neutron.list_ports(True)['ports'])

    def test_a_port_of_the_user_is_kept_unbound_and_given_back(self):
        port = self.cloud.neutron.create_port({'port': {
            'network_id': NETWORK, 'tenant_id': nova_fixtures.PROJECT_ID,
            'project_id': nova_fixtures.PROJECT_ID}})['port']
        resp = self.reserved_boot(networks=[{'port': port['id']}])
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        held = self.cloud.neutron.show_port(port['id'])['port']
        self.assertEqual(uuid, held['device_id'])
        self.assertFalse(held.get('binding:host_id'))
        lease = db_leases.get(STORE, resp.body['server']['reservation'][
            'lease_id'])
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        view = self.admin_api.get_server(uuid)
        self.assertEqual('ACTIVE', view['status'])
        bound = self.cloud.neutron.show_port(port['id'])['port']
        self.assertEqual(view['OS-EXT-SRV-ATTR:host'],
                         bound['binding:host_id'])
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        self.wait_gone(uuid)
        # The user's port stays, free for another server (as Nova does).
        kept = self.cloud.neutron.show_port(port['id'])['port']
        self.assertEqual('', kept['device_id'])

    def test_what_does_not_exist_is_a_4xx_that_leaves_nothing(self):
        ports = self.cloud.neutron.list_ports(True)['ports']
        for server, words in (
                (dict(networks=[{'uuid': MISSING}]), MISSING),
                (dict(networks=[{'port': MISSING}]), MISSING)):
            resp = self.reserved_boot(**server)
            self.assertIn(resp.status, (400, 404), resp.content)
            self.assertIn(words, resp.content.decode())
            self.assert_nothing_made(ports)

    def test_neutron_down_at_the_boot_leaves_nothing(self):
        ports = self.cloud.neutron.list_ports(True)['ports']
        self.cloud.neutron.down = True
        self.addCleanup(setattr, self.cloud.neutron, 'down', False)
        resp = self.reserved_boot(networks=[{'uuid': NETWORK}])
        self.cloud.neutron.down = False
        # Nova's own answer is a 500: the hook says what it is.
        self.assertEqual(503, resp.status, resp.content)
        message = resp.body['serviceUnavailable']['message']
        self.assertIn('ConnectionFailed', message)
        self.assertIn('try again', message)
        self.assert_nothing_made(ports)

    def test_neutron_down_at_the_start_then_retried(self):
        self.flags(event_retries=0, group='reservation')
        resp = self.reserved_boot(networks=[{'uuid': NETWORK}])
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        lease = db_leases.get(STORE, resp.body['server']['reservation'][
            'lease_id'])
        self.cloud.neutron.down = True
        self.addCleanup(setattr, self.cloud.neutron, 'down', False)
        try:
            self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        except AssertionError:
            pass
        failed = db_leases.get(STORE, lease.id)
        self.assertEqual('ERROR', failed.status)
        self.assertTrue(failed.status_reason)
        self.cloud.neutron.down = False
        # Nothing half-made: still offloaded, its port unbound.
        self.assertEqual('shelved_offloaded', self.admin_api.get_server(
            uuid)['OS-EXT-STS:vm_state'])
        port, = self.cloud.neutron.list_ports(True, device_id=uuid)['ports']
        self.assertFalse(port.get('binding:host_id'))
        event = next(e for e in self.rsv_admin(
            'GET', '/leases/%s' % lease.id).json()['lease']['events']
            if e['event_type'] == 'start_lease')
        self.assertEqual(202, self.rsv_admin(
            'POST', '/leases/%s/events/%s/retry' % (lease.id, event['id'])
        ).status_code)
        self.run_engine()
        self.assertEqual('ACTIVE', self.admin_api.get_server(uuid)['status'])

    def rsv_admin(self, method: str, path: str, body=None):
        return self.lease_api('admin', roles=('reader', 'member', 'admin'))(
            method, path, body)
