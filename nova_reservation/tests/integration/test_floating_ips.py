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

"""Floating IP reservations on the local cloud's real Neutron, through
python-blazarclient's and openstackclient's commands: an admin registers
addresses of ``public``; a user's lease makes them floating IPs of the
user's project at its start (the user attaches one to a server's port)
and deletes them at its end.
"""

import json

from nova_reservation.tests.integration import base
from nova_reservation.tests.integration import cli_dates

# Outside public's allocation pool (.10 to .200): Neutron gives out those.
ADDRESSES = ('172.24.4.221', '172.24.4.222')
LATER = '172.24.4.225'


class FloatingIPTest(base.BlazarCLI):
    # It registers and leases given addresses of public, the one external
    # network of every lane.
    SHARES = ('floating-ips',)

    def register(self, network: str, address: str) -> dict:
        made = self.openstack('admin', 'reservation', 'floatingip', 'create',
                              network, address)
        self.addCleanup(self.delete, 'reservation',
                        '/floatingips/' + made['id'])
        return made

    def neutron_fips(self, user: str) -> dict:
        """{address: floating IP} of the user's project, as Neutron has
        them.
        """
        return {f['Floating IP Address']: f for f in self.openstack(
            user, 'floating', 'ip', 'list')}

    def test_registered_reserved_made_and_deleted(self):
        network = self.openstack('admin', 'network', 'show', 'public')['id']
        for address in ADDRESSES:
            made = self.register(network, address)
            self.assertEqual(network, made['floating_network_id'])
        # An address Neutron gives out itself is refused, naming it; a
        # member may not register one.
        done = self.run_cli('admin', 'openstack', 'reservation',
                            'floatingip', 'create', network, '172.24.4.50',
                            check=False)
        self.assertNotEqual(0, done.returncode)
        self.assertIn('floating_ip_address', done.stderr)
        done = self.run_cli('alice', 'openstack', 'reservation',
                            'floatingip', 'create', network, '172.24.4.223',
                            check=False)
        self.assertNotEqual(0, done.returncode)
        self.assertIn('policy does not allow', done.stderr)

        # Blazar's CLI takes dates to the minute: the start 30 to 90 s
        # away (room for the checks before it), a minute long (room for
        # the checks inside it).
        start = cli_dates.soon(30)
        end = cli_dates.plus(start, 1)
        lease = self.openstack(
            'alice', 'reservation', 'lease', 'create', '--start-date',
            start, '--end-date', end, '--reservation',
            'resource_type=virtual:floatingip,network_id=%s,amount=2,'
            'required_floatingips=%s' % (network, json.dumps(ADDRESSES)),
            'fips-' + self.suffix)
        self.addCleanup(self.delete_lease, lease['id'])
        # bob can not have one of them then: a 409 with the earliest
        # start.
        done = self.run_cli(
            'bob', 'openstack', 'reservation', 'lease', 'create',
            '--start-date', start, '--end-date', end,
            '--reservation', 'resource_type=virtual:floatingip,'
            'network_id=%s,amount=1,required_floatingips=["%s"]'
            % (network, ADDRESSES[0]), 'fips-bob-' + self.suffix,
            check=False)
        self.assertNotEqual(0, done.returncode)
        self.assertIn('earliest start', done.stderr)
        # Nothing in Neutron before the start.
        self.assertFalse(set(ADDRESSES) & set(self.neutron_fips('alice')))

        self.wait_for_lease('lease active', lease['id'],
                            lambda x: x and x['status'] == 'ACTIVE',
                            timeout=180, interval=3)
        mine = self.neutron_fips('alice')
        self.assertLessEqual(set(ADDRESSES), set(mine))
        # alice attaches one to a port of hers.
        port = self.openstack('alice', 'port', 'create', '--network',
                              self.network('alice'),
                              'fip-port-' + self.suffix)
        self.addCleanup(self.delete, 'network', '/v2.0/ports/' + port['id'])
        fip = mine[ADDRESSES[0]]
        self.run_cli('alice', 'openstack', 'floating', 'ip', 'set', '--port',
                     port['id'], fip['ID'])
        self.assertEqual(port['id'], self.openstack(
            'alice', 'floating', 'ip', 'show', fip['ID'])['port_id'])

        self.wait_for_lease('lease ended', lease['id'],
                            lambda x: x and x['status'] == 'TERMINATED',
                            timeout=240, interval=3)
        self.wait_for('floating IPs deleted', lambda: not set(
            ADDRESSES) & set(self.neutron_fips('alice')), timeout=60,
            interval=3)

    def test_deleted_before_its_start_makes_nothing(self):
        network = self.openstack('admin', 'network', 'show', 'public')['id']
        self.register(network, LATER)
        lease = self.openstack(
            'bob', 'reservation', 'lease', 'create', '--start-date',
            base.minutes(10), '--end-date', base.minutes(20),
            '--reservation', 'resource_type=virtual:floatingip,'
            'network_id=%s,amount=1,required_floatingips=["%s"]'
            % (network, LATER), 'fips-gone-' + self.suffix)
        self.run_cli('bob', 'openstack', 'reservation', 'lease', 'delete',
                     lease['id'])
        self.wait_for('lease gone', lambda: self.rest(
            '%s/%s' % (base.LEASES, lease['id'])) is None, timeout=60,
            interval=2)
        # (An admin lists every project's.)
        self.assertNotIn(LATER, self.neutron_fips('admin'))
