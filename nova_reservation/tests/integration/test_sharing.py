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

"""A capacity reservation of alice's project shared with bob's, open to
ordinary boots, a boot that falls back, and a split, with the real CLIs
(``openstack reservation share`` and ``lease split``, python-blazarclient,
nova, openstack); carol's project is one it is never shared with.
"""

import json

from nova_reservation.tests.integration import base


class SharingCLITest(base.BlazarCLI):

    def project_id(self, user: str) -> str:
        project = (self.users.get(user) or base.CLOUD.variables(user))[
            'OS_PROJECT_NAME']
        return self.openstack('admin', 'project', 'show', project)['id']

    def bound(self, server_id: str) -> dict:
        """The server's ``reservation`` as ``nova show`` prints it."""
        value = self.nova('admin', 'show', server_id).get('reservation')
        return json.loads(value) if value else {}

    def test_shared_open_fallback_and_split(self):
        self.new_user('carol-' + self.suffix[-8:], 'carol-' + self.suffix)
        carol = 'carol-' + self.suffix[-8:]
        bob_project = self.project_id('bob')
        # The lane's m1.tiny: the open reservation takes only the ordinary
        # boots whose flavor its slots meet (traits too), none of another
        # lane's tests.
        tiny = self.flavor('m1.tiny')
        flavor = self.flavor_ref(tiny)
        lease = self.lease(
            'alice', 'team-' + self.suffix,
            'resource_type=flavor:instance,flavor_id=%s,amount=2' % flavor)
        rid = lease['reservation_id']
        hint = 'reservation=%s' % rid

        # Alice shares it with bob's project and opens it.
        rows = self.openstack('alice', 'reservation', 'share', 'set',
                              lease['id'], '--project', bob_project,
                              '--matching', 'open')
        self.assertEqual([(rid, [bob_project], 'open')], [
            (r['Reservation'], r['Shared with'].split(', '), r['Matching'])
            for r in rows])

        # Bob lists it, marked, and boots into it; carol sees nothing and
        # boots into nothing; bob can not delete it.
        listed = self.openstack('bob', 'reservation', 'lease', 'list')
        self.assertIn(lease['id'], [x['id'] for x in listed])
        shown = self.openstack('bob', 'reservation', 'lease', 'show',
                               lease['id'])
        self.assertEqual(lease['project_id'], shown['shared_by'])
        self.assertNotIn(lease['id'], [x['id'] for x in self.openstack(
            carol, 'reservation', 'lease', 'list')])
        self.assertIn('404', self.refused(
            carol, 'carol-in-' + self.suffix, tiny, hint))
        theirs, = self.boot('bob', 'bob-in-' + self.suffix, tiny, hint)
        self.assertEqual('ACTIVE', self.settled(theirs)['status'])
        done = self.run_cli('bob', 'openstack', 'reservation', 'lease',
                            'delete', lease['id'], check=False)
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertIn('only its owner changes it', done.stderr)

        # An ordinary boot of alice's goes into the open reservation's last
        # slot; the next, with the fallback, finds it full and runs as an
        # ordinary server.
        mine, = self.boot('alice', 'open-' + self.suffix, tiny)
        self.assertEqual('ACTIVE', self.settled(mine)['status'])
        self.assertEqual((rid, False), (
            self.bound(mine).get('reservation_id'),
            self.bound(mine).get('fallback')))
        spill, = self.boot('alice', 'spill-' + self.suffix, tiny, hint,
                           'reservation_fallback=any')
        self.assertEqual('ACTIVE', self.settled(spill)['status'])
        self.assertEqual({'reservation_id': rid, 'fallback': True,
                          'status': 'ORDINARY'}, self.bound(spill))
        # Without it, the 409.
        self.assertIn('0 of its 2 slots are free', self.refused(
            'alice', 'refused-' + self.suffix, tiny, hint))

        # The owner sees each project's slots.
        counted = self.openstack('alice', 'reservation', 'share', 'list',
                                 lease['id'])
        self.assertEqual({lease['project_id']: 1, bob_project: 1},
                         json.loads(counted[0]['Slots by project']))

        # Alice takes the share back: bob's new boots are refused, his
        # server runs on.
        self.openstack('alice', 'reservation', 'share', 'set', lease['id'],
                       '--remove-project', bob_project)
        self.assertIn('404', self.refused(
            'bob', 'bob-again-' + self.suffix, tiny,
            'reservation=%s' % rid))
        self.assertEqual('ACTIVE', self.server(theirs)['status'])
        self.assertNotIn(lease['id'], [x['id'] for x in self.openstack(
            'bob', 'reservation', 'lease', 'list')])

        # Alice hands one slot on to a new lease: every slot runs a
        # server, so a server goes with it, untouched.
        made = self.openstack('alice', 'reservation', 'lease', 'split',
                              lease['id'], '--amount', '1', '--name',
                              'handed-' + self.suffix)
        self.addCleanup(self.delete_lease, made['id'])
        self.assertEqual(lease['project_id'], made['project_id'])
        new_rid = made['reservations']
        moved = [s for s in (theirs, mine)
                 if self.bound(s).get('reservation_id') == new_rid]
        self.assertEqual(1, len(moved), (theirs, mine, new_rid))
        self.assertEqual(made['id'], self.bound(moved[0])['lease_id'])
        for server in (theirs, mine):
            self.assertEqual('ACTIVE', self.server(server)['status'])
        shown = self.openstack('alice', 'reservation', 'lease', 'show',
                               lease['id'])
        first, _ = json.JSONDecoder().raw_decode(shown['reservations'])
        self.assertEqual(1, first['amount'])
