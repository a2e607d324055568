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

from nova_reservation.tests.integration import base


class BlazarCLITest(base.BlazarCLI):

    def test_host_reservation(self):
        name, host = self.enroll()
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
