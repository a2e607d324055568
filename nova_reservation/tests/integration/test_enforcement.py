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

"""Usage enforcement on the local cloud: its ExternalServiceFilter points
at a loopback port where this test puts a stand-in of an operator's
service written for Blazar; leases of three projects (members and admin)
made, changed and deleted with the real ``openstack reservation`` and
``nova`` CLIs are judged by it, and told to it at their end.  Elsewhere,
nothing listens there and the cloud lets leases through.
"""

from devcloud import enforcement as standin
from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base


class EnforcementCLITest(base.BlazarCLI):
    # The stand-in listens on the cloud's one enforcement port, which
    # every lane's leases are sent to: one test at a time may hold it
    # (it lets the other tests' leases through).
    SHARES = ('enforcement-service',)

    def setUp(self) -> None:
        super().setUp()
        self.service = self.useFixture(
            standin.EnforcementService(cloud.ENFORCEMENT_PORT))
        # Other tests' leases may come too: only this test's are refused.
        self.service.decide = self._decide
        self.refuse_updates = False

    def _decide(self, path: str, body: dict) -> tuple:
        name = str(body.get('lease', {}).get('name'))
        if not name.endswith(self.suffix):
            return standin.ACCEPT
        if name.startswith('refused-'):
            return standin.refuse('budget exhausted for %s' % name)
        if name.startswith('garbage-'):
            return standin.GARBAGE
        if path == 'check-update' and self.refuse_updates:
            return standin.refuse('no longer leases this week')
        return standin.ACCEPT

    def mine(self, path: str) -> list:
        return [b for b in self.service.bodies(path)
                if str(b['lease'].get('name')).endswith(self.suffix)]

    def test_the_service_judges_leases_of_the_clis(self):
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        reservation = ('resource_type=flavor:instance,flavor_id=%s,amount=1'
                       % flavor)
        lease = self.lease('alice', 'ok-' + self.suffix, reservation)
        sent, = self.mine('check-create')
        alice = self.openstack('admin', 'project', 'show',
                               base.CLOUD.variables('alice')[
                                   'OS_PROJECT_NAME'])['id']
        self.assertEqual(alice, sent['context']['project_id'])
        self.assertEqual(lease['user_id'], sent['context']['user_id'])
        self.assertIn('/v3', sent['context']['auth_url'] or '/v3')
        self.assertEqual(('ok-' + self.suffix, 'flavor:instance', 1),
                         (sent['lease']['name'],
                          sent['lease']['reservations'][0]['resource_type'],
                          sent['lease']['reservations'][0]['amount']))
        # The service user's token (the cloud sets no static one).
        tokens = [t for p, t, b in self.service.received
                  if str(b['lease'].get('name')).endswith(self.suffix)]
        self.assertTrue(all(tokens), tokens)

        # Refused for members of two projects and for admin: the reason
        # is the service's, and nothing is written.
        for user in ('alice', 'bob', 'admin'):
            name = 'refused-%s-%s' % (user, self.suffix)
            done = self.run_cli(
                user, 'openstack', 'reservation', 'lease', 'create',
                '--end-date', base.minutes(30), '--reservation',
                reservation, name, check=False)
            self.assert_lease_refused(done, 'budget exhausted for ' + name)
            self.assert_nothing_written(name)
        # A boot with lease_params goes the same road.
        name = 'refused-boot-' + self.suffix
        done = self.reserved_boot(name, '--image', 'cirros', '--nic', 'none')
        self.assert_refused(done, '403', 'budget exhausted')
        self.assert_nothing_written(name)
        # An answer it can not read: this cloud lets the lease through.
        garbage = self.lease('alice', 'garbage-' + self.suffix, reservation)
        self.assertEqual('ACTIVE', garbage['status'])

        # A change it refuses is not made.
        self.refuse_updates = True
        done = self.run_cli('alice', 'openstack', 'reservation', 'lease',
                            'set', '--end-date', base.minutes(50),
                            lease['id'], check=False)
        self.assert_lease_refused(done, 'no longer leases this week')
        self.assertEqual(lease['end_date'], self.openstack(
            'alice', 'reservation', 'lease', 'show', lease['id'])['end_date'])
        current = self.mine('check-update')[-1]
        self.assertEqual(lease['id'], current['current_lease']['id'])
        self.assertTrue(current['current_lease']['reservations'][0][
            'allocations'])

        # Its end is told to the service.
        self.delete_lease(lease['id'])
        self.wait_for('on-end of %s' % lease['id'], lambda: [
            b for b in self.mine('on-end')
            if b['lease']['id'] == lease['id']], timeout=90, interval=2)
