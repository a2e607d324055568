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

"""A maintenance window over a node that a running lease and a future
lease of alice's use, on the local cloud: the running lease refuses a
window that meets it, the future one moves off, an ordinary server is
told and live-migrated off, and the node's compute service is disabled
with the window's reason at the start and enabled at the end.

The window is made through the lease API: python-blazarclient's
``--reservation`` takes only the keys it knows for each type (and no
list), so it can not send a maintenance reservation; the CLIs show it.
"""

import json

from nova_reservation.tests.integration import base


class MaintenanceTest(base.BlazarCLI):

    def make(self, user: str, hosts: list, start: int, end: int,
             reason: str = 'firmware'):
        """POST a window as `user`: the response."""
        resp = base.CLOUD.session(user).post(base.LEASES, json={
            'name': 'window-' + self.suffix,
            'start_date': base.minutes(start), 'end_date': base.minutes(end),
            'reservations': [{'resource_type': 'maintenance',
                              'hosts': hosts, 'reason': reason}]},
            raise_exc=False)
        if resp.status_code == 201:
            self.addCleanup(self.delete_lease, resp.json()['lease']['id'])
        return resp

    def nodes(self, reservation_id: str) -> set:
        return {r['node'] for r in self.store(
            'SELECT node FROM rsv_allocations WHERE reservation_id = %s '
            'AND deleted = 0', reservation_id)}

    def compute(self, node: str) -> dict:
        host = self.openstack('admin', 'hypervisor', 'show', node)[
            'service_host']
        [service] = self.rest('%s/os-services?binary=nova-compute&host=%s'
                              % (base.cloud.url('nova'), host))['services']
        return service

    def test_window_over_running_and_future_leases(self):
        flavor = self.openstack('admin', 'flavor', 'show', 'm1.tiny')['id']
        running = self.lease(
            'alice', 'running-' + self.suffix,
            'resource_type=flavor:instance,flavor_id=%s,amount=1' % flavor,
            end=3)
        [busy] = self.nodes(running['reservation_id'])
        future = self.openstack(
            'alice', 'reservation', 'lease', 'create', '--start-date',
            base.minutes(5), '--end-date', base.minutes(8), '--reservation',
            'resource_type=flavor:instance,flavor_id=%s,amount=1' % flavor,
            'future-' + self.suffix)
        self.addCleanup(self.delete_lease, future['id'])
        first, _ = json.JSONDecoder().raw_decode(self.openstack(
            'alice', 'reservation', 'lease', 'show', future['id'])[
            'reservations'])
        [node] = self.nodes(first['id'])

        # A member makes no window; one that meets the running lease is
        # refused, naming it.
        self.assertEqual(403, self.make('bob', [node], 4, 9).status_code)
        resp = self.make('admin', [busy], 1, 9)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn(running['id'], [
            x['lease_id'] for x in resp.json()['leases']])

        # An ordinary server on the node; the window over it from after
        # the running lease: the future lease moves off.
        args = ['server', 'create', '--flavor', 'm1.tiny', '--image',
                'cirros', *self.nic('admin'), '--availability-zone',
                'nova:%s' % self.openstack('admin', 'hypervisor', 'show',
                                           node)['service_host'],
                'ordinary-' + self.suffix, '-f', 'json']
        ordinary = base.parse_json(self.run_cli('admin', 'openstack',
                                                *args).stdout)['id']
        self.addCleanup(self.delete_server, ordinary)
        self.settled(ordinary)
        resp = self.make('admin', [node], 4, 9, reason='rack 7 cabling')
        self.assertEqual(201, resp.status_code, resp.text)
        window = resp.json()['lease']
        self.assertNotIn(node, self.nodes(first['id']))
        # Bob's project sees it in the calendar, with its reason only.
        ledger = base.CLOUD.session('bob').get(
            base.LEASES.rsplit('/', 1)[0] + '/ledger').json()['ledger']
        self.assertIn(('rack 7 cabling', None), [
            (a.get('reason'), a['lease_id']) for n in ledger['nodes']
            for a in n['allocations'] if a['type'] == 'maintenance'])
        shown = self.openstack('admin', 'reservation', 'lease', 'show',
                               window['id'])
        self.assertIn('"resource_type": "maintenance"',
                      shown['reservations'])

        # The server is told and moved off before the start.
        self.wait_for_server(
            'server told', ordinary, lambda s: s and (s.get('metadata') or
                                                      {}).get(
                'reservation:maintenance_at'), timeout=240)
        self.wait_for_server(
            'server moved off', ordinary, lambda s: s and s.get(
                'OS-EXT-SRV-ATTR:hypervisor_hostname') != node and
            s['status'] == 'ACTIVE', timeout=300)

        # At the start the node's compute service is disabled with the
        # reason; at the end enabled again.
        self.wait_for_lease('window active', window['id'],
                            lambda x: x and x['status'] == 'ACTIVE',
                            timeout=400)
        service = self.compute(node)
        self.assertEqual('disabled', service['status'])
        self.assertTrue(service['disabled_reason'].startswith(
            'rack 7 cabling (maintenance window '), service)
        self.wait_for_lease('window over', window['id'],
                            lambda x: x and x['status'] == 'TERMINATED',
                            timeout=400)
        self.wait_for('compute service of %s enabled' % node,
                      lambda: self.compute(node)['status'] == 'enabled',
                      timeout=120)
