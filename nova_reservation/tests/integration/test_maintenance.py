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

"""A maintenance window over the nodes that a running lease (a server in
it) and a future lease of alice's use, on the local cloud: both leases
move to another node (the window over every node is refused, naming
them), the lease's server and an ordinary server are told and
live-migrated off (the lease's to its slot's new node, still in its
lease), and the nodes' compute services are disabled with the window's
reason at the start and enabled at the end.

The window is made through the lease API: python-blazarclient's
``--reservation`` takes only the keys it knows for each type (and no
list), so it can not send a maintenance reservation; the CLIs show it.
"""

from nova_reservation.tests.integration import base


class MaintenanceTest(base.BlazarCLI):

    def make(self, user: str, hosts: list, start: int, end: int,
             reason: str = 'firmware'):
        """POST a window as `user`, `start` to `end` seconds from now:
        the response.
        """
        resp = base.CLOUD.session(user).post(base.LEASES, json={
            'name': 'window-' + self.suffix,
            'start_date': base.utc(start), 'end_date': base.utc(end),
            'reservations': [{'resource_type': 'maintenance',
                              'hosts': hosts, 'reason': reason}]},
            raise_exc=False)
        if resp.status_code == 201:
            self.addCleanup(self.delete_lease, resp.json()['lease']['id'])
        return resp

    def flavor_lease(self, name: str, flavor: str, start: str,
                     where: list) -> dict:
        """Alice's lease of one server of `flavor` from `start` for
        seven minutes, on the lane's nodes that hold `where`.
        """
        resp = base.CLOUD.session('alice').post(base.LEASES, json={
            'name': '%s-%s' % (name, self.suffix), 'start_date': start,
            'end_date': base.utc(420), 'reservations': [{
                'resource_type': 'flavor:instance', 'flavor_id': flavor,
                'amount': 1, 'resource_properties': self.on_lane(where)}]},
            raise_exc=False)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.addCleanup(self.delete_lease, lease['id'])
        return lease

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
        tiny = self.flavor('m1.tiny')
        flavor = self.flavor_ref(tiny)
        # A server moves within its cell only: the running lease off
        # compute2 (cell2's; compute1 and compute3 are cell1's), and the
        # window below leaves it the other.  Through the lease API
        # (Blazar's CLI does not read nested requirements).
        cell1 = {self.node('compute1'), self.node('compute3')}
        running = self.flavor_lease('running', flavor, 'now', [
            '!=', '$hypervisor_hostname', self.node('compute2')])
        self.wait_for_lease('lease running', running['id'], lambda x: x and
                            x['status'] == 'ACTIVE', timeout=60, interval=2)
        running['reservation_id'] = running['reservations'][0]['id']
        [leased] = self.boot('alice', 'leased-' + self.suffix, tiny,
                             'reservation=%s' % running['reservation_id'])
        self.assertEqual('ACTIVE', self.settled(leased)['status'])
        [busy] = self.nodes(running['reservation_id'])
        # It starts after the window below is made and before it ends (75
        # to 120 s after).
        future = self.flavor_lease('future', flavor, base.utc(100), [])
        [first] = future['reservations']
        [node] = self.nodes(first['id'])
        nodes = sorted({busy, node} - (cell1 - {busy}))

        # A member makes no window; one over every node of the lane (the
        # lane's flavor takes no other) is refused, naming both leases
        # (they have nowhere to go), and nothing moves.
        self.assertEqual(403, self.make('bob', nodes, 180, 300).status_code)
        lane = self.lane_nodes()
        every = [h['Hypervisor Hostname'] for h in self.openstack(
            'admin', 'hypervisor', 'list') if h['Hypervisor Hostname'] in lane]
        resp = self.make('admin', every, 180, 300)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertLessEqual({running['id'], future['id']}, {
            x['lease_id'] for x in resp.json()['leases']})
        self.assertEqual({busy}, self.nodes(running['reservation_id']))

        # An ordinary server on the running lease's node; the window over
        # the leases' nodes: both leases move off, the running one with
        # its server's slot.
        args = ['server', 'create', '--flavor', tiny, '--image', 'cirros',
                *self.nic('admin'), '--availability-zone',
                'nova:%s' % self.openstack('admin', 'hypervisor', 'show',
                                           busy)['service_host'],
                'ordinary-' + self.suffix, '-f', 'json']
        ordinary = base.parse_json(self.run_cli('admin', 'openstack',
                                                *args).stdout)['id']
        self.addCleanup(self.delete_server, ordinary)
        self.settled(ordinary)
        # Its start more than preempt_margin (a minute) away, so that the
        # servers are moved before it; 45 s long, room for the checks.
        # Its reason names the test: other lanes' windows are in the
        # calendar too.
        reason = 'rack 7 cabling ' + self.suffix
        resp = self.make('admin', nodes, 75, 120, reason=reason)
        self.assertEqual(201, resp.status_code, resp.text)
        window = resp.json()['lease']
        self.assertFalse(self.nodes(first['id']) & set(nodes))
        [target] = self.nodes(running['reservation_id'])
        self.assertNotIn(target, nodes)
        # Bob's project sees it in the calendar, with its reason only.
        ledger = base.CLOUD.session('bob').get(
            base.LEASES.rsplit('/', 1)[0] + '/ledger').json()['ledger']
        self.assertIn((reason, None), [
            (a.get('reason'), a['lease_id']) for n in ledger['nodes']
            for a in n['allocations'] if a['type'] == 'maintenance'])
        shown = self.openstack('admin', 'reservation', 'lease', 'show',
                               window['id'])
        self.assertIn('"resource_type": "maintenance"',
                      shown['reservations'])

        # Both servers are told and moved off before the start: the
        # lease's to its slot's node, still in its lease.
        for server in (ordinary, leased):
            self.wait_for_server(
                'server told', server, lambda s: s and (
                    s.get('metadata') or {}).get(
                    'reservation:maintenance_at'), timeout=240)
        self.wait_for_server(
            'server moved off', ordinary, lambda s: s and s.get(
                'OS-EXT-SRV-ATTR:hypervisor_hostname') not in nodes and
            s['status'] == 'ACTIVE', timeout=300)
        self.wait_for_server(
            'lease server moved to its slot', leased, lambda s: s and s.get(
                'OS-EXT-SRV-ATTR:hypervisor_hostname') == target and
            s['status'] == 'ACTIVE', timeout=300)
        moved = self.rest('%s/servers/%s' % (base.cloud.url('nova'),
                                             leased))['server']
        self.assertIn('lease-' + running['id'], moved['tags'])
        self.assertEqual({target}, self.nodes(running['reservation_id']))

        # At the start the nodes' compute services are disabled with the
        # reason; at the end enabled again.
        self.wait_for_lease('window active', window['id'],
                            lambda x: x and x['status'] == 'ACTIVE',
                            timeout=400)
        for name in nodes:
            service = self.compute(name)
            self.assertEqual('disabled', service['status'])
            self.assertTrue(service['disabled_reason'].startswith(
                reason + ' (maintenance window '), service)
        self.wait_for_lease('window over', window['id'],
                            lambda x: x and x['status'] == 'TERMINATED',
                            timeout=400)
        for name in nodes:
            self.wait_for('compute service of %s enabled' % name,
                          lambda: self.compute(name)['status'] == 'enabled',
                          timeout=120)
