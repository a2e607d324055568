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
        # Of this lane's hosts: the other lanes enroll theirs meanwhile.
        lease = self.lease('alice', 'hosts-' + self.suffix,
                           'resource_type=physical:host,min=1,max=1,'
                           'hypervisor_properties=' + self.on_lane())
        hint = 'reservation=%s' % lease['reservation_id']

        small = self.flavor('m1.small')
        mine = self.boot('alice', 'in-host-' + self.suffix, small, hint)
        self.assertEqual(1, len(mine))
        server = self.settled(mine[0])
        self.assertEqual('ACTIVE', server['status'], server.get('fault'))
        self.assertEqual(name, server['OS-EXT-SRV-ATTR:host'])

        # Another project can not use the reservation.
        self.assertIn('404', self.refused(
            'bob', 'bob-in-host-' + self.suffix, small, hint))
        # Ordinary boots never land on the reserved host.
        ordinary = self.boot('bob', 'ordinary-' + self.suffix,
                             self.flavor('m1.tiny'), count=3)
        self.assertEqual(3, len(ordinary))
        hosts = {self.settled(s)['OS-EXT-SRV-ATTR:host'] for s in ordinary}
        self.assertNotIn(name, hosts)
        self.assertNotIn(None, hosts)

    def test_capacity_reservation(self):
        tiny = self.flavor('m1.tiny')
        flavor = self.flavor_ref(tiny)
        lease = self.lease(
            'alice', 'slots-' + self.suffix,
            'resource_type=flavor:instance,flavor_id=%s,amount=2' % flavor)
        hint = 'reservation=%s' % lease['reservation_id']
        booted = [self.boot('alice', 'slot%d-%s' % (i, self.suffix),
                            tiny, hint) for i in range(2)]
        for servers in booted:
            self.assertEqual(1, len(servers))
            self.assertEqual('ACTIVE', self.settled(servers[0])['status'])
        # Beyond the amount, or from another project: refused.
        self.assertIn('0 of its 2 slots are free', self.refused(
            'alice', 'slot3-' + self.suffix, tiny, hint))
        self.assertIn('404', self.refused(
            'bob', 'bob-slot-' + self.suffix, tiny, hint))


class AvailabilityCLITest(base.BlazarCLI):
    """`openstack reservation availability list`, this package's plugin
    command beside python-blazarclient's.
    """

    def windows(self, user: str, *args: str) -> list:
        return self.openstack(user, 'reservation', 'availability', 'list',
                              *args)

    def test_hosts_free_when_a_lease_ends(self):
        self.enroll()
        # This lane's hosts only: the other lanes enroll and lease theirs
        # meanwhile (the CLI leaves out an empty query, on one lane).
        hosts = ('--min', '1', '--hypervisor-properties', self.on_lane())
        first = self.windows('alice', *hosts, '--duration', '1h')[0]
        self.assertLess(abs(base.seconds_from_now(first['Earliest'])), 60)
        lease = self.lease('alice', 'hosts-' + self.suffix,
                           'resource_type=physical:host,min=1,max=1,'
                           'hypervisor_properties=' + self.on_lane())
        # The only enrolled host of this lane is the lease's until its
        # end: the first window opens then, for any project.
        for user in ('alice', 'bob'):
            first = self.windows(user, *hosts, '--duration', '1h')[0]
            self.assertEqual(base.when(lease['end_date']),
                             base.when(first['Earliest']))
        table = self.run_cli('bob', 'openstack', 'reservation',
                             'availability', 'list', *hosts,
                             '--duration', '1h', '--limit', '1').stdout
        self.assertRegex(table, r'\| Earliest +\| Latest +\|')
        self.assertIn(first['Earliest'], table)

    def test_servers_of_a_flavor(self):
        found = self.windows('alice', '--flavor', self.flavor('m1.tiny'),
                             '--amount', '2', '--duration', '90',
                             '--limit', '3')
        self.assertTrue(1 <= len(found) <= 3, found)
        self.assertLess(abs(base.seconds_from_now(found[0]['Earliest'])), 60)
        for window in found:
            self.assertLessEqual(base.when(window['Earliest']),
                                 base.when(window['Latest']))

    def test_bad_requests_name_what_is_wrong(self):
        for args, said in ((('--flavor', self.flavor('m1.tiny'),
                             '--duration', '0'), 'duration'),
                           (('--min', '1', '--duration', '1h', '--before',
                             '2000-01-01T00:00:00Z'), 'before'),
                           (('--flavor', 'no-such-flavor', '--duration',
                             '1h'), 'no-such-flavor'),
                           (('--vcpus', '1', '--duration', '1h'),
                            '--memory-mb')):
            done = self.run_cli('alice', 'openstack', 'reservation',
                                'availability', 'list', *args, check=False)
            self.assertNotEqual(0, done.returncode, done.stdout)
            self.assertIn(said, done.stderr)
            self.assertNotIn('500', done.stderr)
