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

"""Preemptible servers on the local cloud, through the openstack CLI: the
boot hook in nova-api, the filter in nova-scheduler, and the engines, each
in its own process.
"""

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base


class PreemptibleCLITest(base.BlazarCLI):

    def test_a_preemptible_server_is_marked_by_nova_api_and_the_engine(self):
        servers = self.boot('alice', 'spot-' + self.suffix,
                            self.flavor('m1.tiny'), 'preemptible=true',
                            'on_preempt=delete')
        self.assertEqual(1, len(servers))
        server = self.settled(servers[0])
        self.assertEqual('ACTIVE', server['status'], server.get('fault'))
        # As alice sees it through the CLI.
        marks = self.server(servers[0], 'alice')['properties']
        self.assertEqual('true', marks['reservation:preemptible'])
        self.assertEqual('delete', marks['reservation:on_preempt'])
        # An engine tags it and tells it until when its node holds it.
        marked = self.wait_for_server(
            '%s tagged' % servers[0], servers[0],
            lambda s: s and 'preemptible' in (s.get('tags') or []) and
            'reservation:preemptible_until' in s['metadata'],
            timeout=120, interval=2)
        self.assertIn(servers[0], [s['ID'] for s in self.openstack(
            'alice', 'server', 'list', '--tags', 'preemptible')])
        until = marked['metadata']['reservation:preemptible_until']
        self.assertTrue(until == 'none' or until.endswith('Z'), until)

    def test_bad_hints_and_own_marks_are_refused_by_name(self):
        for hints, said in ((('preemptible=perhaps',), 'preemptible'),
                            (('preemptible=true', 'on_preempt=hibernate'),
                             'on_preempt'),
                            (('on_preempt=delete',), 'on_preempt')):
            stderr = self.refused('alice', 'bad-spot-' + self.suffix,
                                  self.flavor('m1.tiny'), *hints)
            self.assertIn(said, stderr)
            self.assertIn('400', stderr)
        ordinary = self.boot('alice', 'plain-' + self.suffix,
                             self.flavor('m1.tiny'))
        self.settled(ordinary[0])
        done = self.run_cli('alice', 'openstack', 'server', 'set',
                            '--property', 'reservation:preemptible=true',
                            ordinary[0], check=False)
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertIn('reservation:preemptible', done.stderr)

    def test_preemptible_servers_leave_in_time_and_come_back(self):
        # The lane's nodes hold one m1.large each; the cloud gives notice
        # 2 minutes and moves servers off 1 minute before a start.  The
        # lane's flavor keeps the lease and the spots on the lane's nodes:
        # no other lane's lease evicts them, nor does this one theirs.
        flavor = self.flavor_ref(self.flavor('m1.large'))
        # Every node of the lane, the promised one too, takes a
        # preemptible server.
        self.wait_for_empty_nodes()
        # Through the lease API, to the second: the start 135 s away
        # leaves the spots over a minute to land before the margin.
        start = base.utc(135)
        resp = base.CLOUD.session('alice').post(base.LEASES, json={
            'name': 'later-' + self.suffix, 'start_date': start,
            'end_date': base.utc(1800), 'reservations': [{
                'resource_type': 'flavor:instance', 'flavor_id': flavor,
                'amount': 1}]}, raise_exc=False)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.addCleanup(self.delete_lease, lease['id'])
        node = self.store('SELECT s.node FROM rsv_allocations s JOIN '
                          'rsv_reservations r ON s.reservation_id = r.id '
                          'WHERE r.lease_id = %s AND s.deleted = 0',
                          lease['id'])[0]['node']
        spots = self.boot('bob', 'spot-' + self.suffix,
                          self.flavor('m1.large'), 'preemptible=true',
                          count=3)
        on = {self.settled(s)['OS-EXT-SRV-ATTR:hypervisor_hostname']: s
              for s in spots}
        self.assertEqual(3, len(on), on)
        spot = on[node]
        # Told, then shelved before the start (no other node of the lane
        # is free).
        told = self.wait_for_server(
            '%s told' % spot, spot,
            lambda s: s and 'reservation:preempt_at' in s['metadata'],
            user='bob',
            timeout=240, interval=5)['properties']['reservation:preempt_at']
        self.assertEqual(base.when(start), base.when(told))
        self.assertEqual('SHELVED_OFFLOADED', self.wait_for_server(
            '%s shelved' % spot, spot,
            lambda s: s and s['status'] == 'SHELVED_OFFLOADED', user='bob',
            timeout=180, interval=2)['status'])
        self.assertLess(0, base.seconds_from_now(start))
        others = [s for n, s in on.items() if n != node]
        self.assertEqual({'ACTIVE'}, {self.server(s, 'bob')['status']
                                      for s in others})
        # The lease starts on time, on that node.
        self.wait_for_lease('lease active', lease['id'],
                            lambda x: x and x['status'] == 'ACTIVE',
                            timeout=150, interval=2)
        self.assertEqual('ACTIVE', self.openstack(
            'alice', 'reservation', 'lease', 'show', lease['id'])['status'])
        # Once the lease is gone, the server comes back by itself.
        self.delete_lease(lease['id'])
        back = self.wait_for_server(
            '%s back' % spot, spot, lambda s: s and s['status'] == 'ACTIVE',
            timeout=120, interval=2)
        self.assertEqual(node, back['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.assert_invariants()

    def wait_for_empty_nodes(self, timeout: float = 120) -> None:
        """Wait until no compute node of the lane holds a server, as
        Nova's scheduler sees them (each node's record): for a test that
        fills every node of the lane, after an earlier test whose servers
        may still be leaving (other lanes' nodes are other tests').
        """
        mine = self.lane_nodes(computes_only=True)
        seen: list = []

        def empty() -> bool:
            # The nodes' counts left the API at 2.88.
            resp = self.admin_session().get(
                cloud.url('nova') + '/os-hypervisors/detail',
                raise_exc=False, connect_retries=2,
                headers={'OpenStack-API-Version': 'compute 2.87'})
            self.assertEqual(200, resp.status_code, resp.text)
            seen[:] = [(h['hypervisor_hostname'], h['running_vms'])
                       for h in resp.json()['hypervisors']
                       if h['hypervisor_hostname'] in mine]
            return len(seen) == len(mine) and all(
                vms == 0 for _, vms in seen)
        try:
            self.wait_for('every node of the lane empty', empty,
                          timeout=timeout, interval=2)
        except self.failureException:
            self.fail('nodes still in use (node, servers): %s' % seen)
