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

"""`openstack reservation lease create` (python-blazarclient) for a host
reservation and a capacity reservation, and boots into them.
"""

import json

from nova_reservation.tests.integration import base


class BlazarCLITest(base.CloudTestCase):

    def lease(self, user: str, name: str, reservation: str) -> dict:
        lease = self.openstack(
            user, 'reservation', 'lease', 'create', '--end-date',
            base.minutes(30), '--reservation', reservation, name)
        self.addCleanup(self.delete_lease, lease['id'])
        lease = self.wait_for('lease %s active' % name, lambda: (
            lambda x: x['status'] == 'ACTIVE' and x)(self.openstack(
                user, 'reservation', 'lease', 'show', lease['id'])),
            timeout=60, interval=2)
        # The CLI shows each reservation as a JSON document, one after
        # the other.
        first, _ = json.JSONDecoder().raw_decode(lease['reservations'])
        return dict(lease, reservation_id=first['id'])

    def boot(self, user: str, name: str, flavor: str, *hints: str,
             count: int = 1) -> list:
        args = ['server', 'create', '--flavor', flavor, '--image', 'cirros',
                '--nic', 'none', name]
        for hint in hints:
            args += ['--hint', hint]
        if count > 1:
            args += ['--min', str(count), '--max', str(count)]
        self.run_cli(user, 'openstack', *args, '-f', 'json')
        servers = [s['ID'] for s in self.openstack(
            user, 'server', 'list', '--name', '^%s' % name)]
        for server_id in servers:
            self.addCleanup(self.delete_server, server_id)
        return servers

    def refused(self, user: str, name: str, flavor: str, hint: str) -> str:
        """A boot that Nova's API refuses: the error it gives."""
        done = self.run_cli(user, 'openstack', 'server', 'create',
                            '--flavor', flavor, '--image', 'cirros', '--nic',
                            'none', '--hint', hint, name, check=False)
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertEqual([], self.openstack(user, 'server', 'list',
                                            '--name', '^%s' % name))
        rid = hint.split('=', 1)[1]
        if '404' in done.stderr:
            self.assertIn('reservation: %s not found' % rid, done.stderr)
        return done.stderr

    def settled(self, server_id: str) -> dict:
        return self.wait_for('%s built' % server_id, lambda: (
            lambda s: s['status'] in ('ACTIVE', 'ERROR') and s)(
                self.server(server_id)), timeout=90, interval=2)

    def test_host_reservation(self):
        # A node that holds no server and no promised capacity.
        for name in ('compute3', 'compute2', 'compute1'):
            done = self.run_cli('admin', 'openstack', 'reservation', 'host',
                                'create', name, '-f', 'json', check=False)
            if not done.returncode:
                break
        self.assertEqual(0, done.returncode, done.stderr)
        host = base.parse_json(done.stdout)
        self.addCleanup(self.run_cli, 'admin', 'openstack', 'reservation',
                        'host', 'delete', str(host['id']), check=False)
        self.assertIn(name, [h['hypervisor_hostname'] for h in
                             self.openstack('admin', 'reservation', 'host',
                                            'list')])
        lease = self.lease('alice', 'hosts-' + self.suffix,
                           'resource_type=physical:host,min=1,max=1')
        hint = 'reservation=%s' % lease['reservation_id']

        mine = self.boot('alice', 'in-host-' + self.suffix, 'm1.small', hint)
        self.assertEqual(1, len(mine))
        server = self.settled(mine[0])
        self.assertEqual('ACTIVE', server['status'], server.get('fault'))
        self.assertEqual(name, server['OS-EXT-SRV-ATTR:host'])

        # Another project can not use the reservation.
        self.assertIn('404', self.refused(
            'bob', 'bob-in-host-' + self.suffix, 'm1.small', hint))
        # Ordinary boots never land on the reserved host.
        ordinary = self.boot('bob', 'ordinary-' + self.suffix, 'm1.tiny',
                             count=3)
        self.assertEqual(3, len(ordinary))
        hosts = {self.settled(s)['OS-EXT-SRV-ATTR:host'] for s in ordinary}
        self.assertNotIn(name, hosts)
        self.assertNotIn(None, hosts)

    def test_capacity_reservation(self):
        flavor = self.openstack('admin', 'flavor', 'show', 'm1.tiny')['id']
        lease = self.lease(
            'alice', 'slots-' + self.suffix,
            'resource_type=flavor:instance,flavor_id=%s,amount=2' % flavor)
        hint = 'reservation=%s' % lease['reservation_id']
        booted = [self.boot('alice', 'slot%d-%s' % (i, self.suffix),
                            'm1.tiny', hint) for i in range(2)]
        for servers in booted:
            self.assertEqual(1, len(servers))
            self.assertEqual('ACTIVE', self.settled(servers[0])['status'])
        # Beyond the amount, or from another project: refused.
        self.assertIn('0 of its 2 slots are free', self.refused(
            'alice', 'slot3-' + self.suffix, 'm1.tiny', hint))
        self.assertIn('404', self.refused(
            'bob', 'bob-slot-' + self.suffix, 'm1.tiny', hint))
