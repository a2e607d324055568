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

"""Two projects with real Keystone tokens: neither sees nor uses the
other's leases.
"""

from nova_reservation.tests.integration import base


class ProjectIsolationTest(base.CloudTestCase):

    def capacity_lease(self, user: str, name: str, flavor: str) -> dict:
        lease = self.openstack(
            user, 'reservation', 'lease', 'create', '--end-date',
            base.minutes(30), '--reservation',
            'resource_type=flavor:instance,flavor_id=%s,amount=1' % flavor,
            name)
        self.addCleanup(self.delete_lease, lease['id'])
        return lease

    def test_another_project_neither_sees_nor_uses_a_lease(self):
        tiny = self.flavor('m1.tiny')
        flavor = self.flavor_ref(tiny)
        lease = self.capacity_lease('alice', 'private-' + self.suffix, flavor)
        server = self.nova(
            'alice', 'boot', '--flavor', tiny, '--image', 'cirros',
            *self.nic('alice'), '--hint', 'lease_params=' + base.lease_params(
                'hinted-' + self.suffix, base.utc(3600), base.utc(7200)),
            'hinted-' + self.suffix)['id']
        self.addCleanup(self.delete_server, server)
        mine = {x['id'] for x in self.openstack(
            'alice', 'reservation', 'lease', 'list')}
        hinted = self.store('SELECT lease_id FROM rsv_server_bindings '
                            'WHERE instance_uuid = %s', server)[0]['lease_id']
        # This test's leases (other lanes' tests lease as alice and bob
        # meanwhile, and may share theirs with bob's project).
        own = {lease['id'], hinted}
        self.assertLessEqual(own, mine)

        # Bob's token: not in his list, not shown, not changed, not deleted.
        self.assertFalse(own & {x['id'] for x in self.openstack(
            'bob', 'reservation', 'lease', 'list')})
        for lease_id in (lease['id'], hinted):
            for command in (['show', lease_id],
                            ['set', '--name', 'taken', lease_id],
                            ['delete', lease_id]):
                done = self.run_cli('bob', 'openstack', 'reservation',
                                    'lease', *command, check=False)
                self.assertNotEqual(0, done.returncode, command)
                self.assertIn('policy does not allow', done.stderr, command)
        self.assertNotIn(server, {s['ID'] for s in self.openstack(
            'bob', 'server', 'list')})
        # Nor boot into its reservation.
        reservation_id = self.store(
            'SELECT id FROM rsv_reservations WHERE lease_id = %s',
            lease['id'])[0]['id']
        done = self.run_cli(
            'bob', 'openstack', 'server', 'create', '--flavor', tiny,
            '--image', 'cirros', *self.nic('bob'), '--hint',
            'reservation=' + reservation_id, 'intruder-' + self.suffix,
            check=False)
        self.assertNotEqual(0, done.returncode)
        self.assertIn('404', done.stderr)
        self.assertIn('reservation: %s not found' % reservation_id,
                      done.stderr)

        # And the other way round: Bob's lease is hidden from Alice.
        bobs = self.capacity_lease('bob', 'bobs-' + self.suffix, flavor)
        self.assertNotIn(bobs['id'], {x['id'] for x in self.openstack(
            'alice', 'reservation', 'lease', 'list')})
        done = self.run_cli('alice', 'openstack', 'reservation', 'lease',
                            'delete', bobs['id'], check=False)
        self.assertNotEqual(0, done.returncode)
        self.assertIn('policy does not allow', done.stderr)

        # Alice's leases are as they were; an admin sees them all.
        shown = self.openstack('alice', 'reservation', 'lease', 'show',
                               lease['id'])
        self.assertEqual('private-' + self.suffix, shown['name'])
        self.assertLessEqual(own, {x['id'] for x in self.openstack(
            'admin', 'reservation', 'lease', 'list')})
