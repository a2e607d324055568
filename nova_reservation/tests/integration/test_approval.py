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

"""Approval on the local cloud with the real CLIs: the leases of a project
tagged ``reservation:approval`` in Keystone (``[reservation] approval_tag``,
with a hold of a minute, set on the local cloud) wait for an admin, who
approves them or rejects them with ``openstack reservation lease approve``
and ``reject``; one not decided expires.  Dora's project is tagged; alice's
and bob's are not.
"""

import concurrent.futures

from nova_reservation.tests.integration import base

TAG = 'reservation:approval'


class ApprovalCLITest(base.BlazarCLI):

    def setUp(self) -> None:
        super().setUp()
        self.dora = 'dora-' + self.suffix[-8:]
        self.new_user(self.dora, 'dora-' + self.suffix, TAG)
        self.flavor_id = self.flavor_ref(self.flavor('m1.tiny'))

    def waiting(self, user: str, name: str, start: int = 30) -> dict:
        """A lease of `user` of one m1.tiny from `start` minutes on."""
        lease = self.openstack(
            user, 'reservation', 'lease', 'create', '--start-date',
            base.minutes(start), '--end-date', base.minutes(start + 30),
            '--reservation', 'resource_type=flavor:instance,flavor_id=%s,'
            'amount=1' % self.flavor_id, name)
        self.addCleanup(self.delete_lease, lease['id'])
        return lease

    def decide(self, user: str, action: str, lease_id: str, *args: str):
        return self.run_cli(user, 'openstack', 'reservation', 'lease',
                            action, lease_id, *args, check=False)

    def gone(self, lease_id: str) -> None:
        self.wait_for_lease('lease %s gone' % lease_id, lease_id,
                            lambda x: x is None, timeout=90, interval=2)
        self.assertEqual([], self.store(
            'SELECT s.id FROM rsv_allocations s JOIN rsv_reservations r ON '
            'r.id = s.reservation_id WHERE r.lease_id = %s AND NOT '
            's.deleted', lease_id))

    def test_tagged_project_waits_admin_decides(self):
        # Alice's lease is any lease; dora's waits, whatever its size.
        alice = self.waiting('alice', 'plain-' + self.suffix)
        self.assertEqual('PENDING', alice['status'])
        lease = self.waiting(self.dora, 'tagged-' + self.suffix)
        self.assertEqual('PENDING_APPROVAL', lease['status'])
        self.assertIn('its project is tagged %s' % TAG,
                      lease['status_reason'])
        listed = self.rest(base.LEASES + '?status=PENDING_APPROVAL')
        self.assertIn(lease['id'], [x['id'] for x in listed['leases']])
        self.assertNotIn(alice['id'], [x['id'] for x in listed['leases']])

        # Only admins decide: the owner is refused by the policy; bob's
        # project does not even see the lease.
        done = self.decide(self.dora, 'approve', lease['id'])
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertIn('reservation:leases:approve', done.stderr)
        done = self.decide('bob', 'reject', lease['id'])
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertIn('no lease %s' % lease['id'], done.stderr)
        self.assertEqual('PENDING_APPROVAL', self.rest('%s/%s' % (
            base.LEASES, lease['id']))['lease']['status'])

        # Two admins at once: one approves, the other is told it is done.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: self.decide(
                'admin', 'approve', lease['id'], '--reason', 'ok'),
                range(2)))
        self.assertEqual([0, 1], sorted(min(a.returncode, 1)
                                        for a in answers))
        refused = next(a for a in answers if a.returncode)
        self.assertIn('does not wait for approval', refused.stderr)
        shown = self.openstack('admin', 'reservation', 'lease', 'show',
                               lease['id'])
        admin = self.openstack('admin', 'user', 'show', 'admin')['id']
        self.assertEqual(('PENDING', 'approved by %s: ok' % admin),
                         (shown['status'], shown['status_reason']))

        # Rejected, a boot's lease leaves nothing: its servers go too.
        name = 'boot-' + self.suffix
        self.run_cli(self.dora, 'nova', 'boot', '--flavor',
                     self.flavor('m1.tiny'), '--image', 'cirros',
                     *self.nic(self.dora), '--hint',
                     'lease_params=' + base.lease_params(
                         name, base.utc(3600), base.utc(5400)), name)
        server, = [s['ID'] for s in self.openstack(
            self.dora, 'server', 'list', '--name', '^%s' % name)]
        self.addCleanup(self.delete_server, server)
        booted = self.store('SELECT lease_id FROM rsv_server_bindings '
                            'WHERE instance_uuid = %s', server)
        self.assertEqual(1, len(booted))
        boot_lease = booted[0]['lease_id']
        self.assertEqual('PENDING_APPROVAL', self.rest(
            '%s/%s' % (base.LEASES, boot_lease))['lease']['status'])
        self.assertEqual(0, self.decide('admin', 'reject', boot_lease,
                                        '--reason', 'no').returncode)
        self.gone(boot_lease)
        self.wait_for_server('%s deleted' % server, server,
                             lambda s: s is None, timeout=90, interval=2)

        # A boot that would start now can not wait: refused, nothing made.
        now = 'now-' + self.suffix
        done = self.run_cli(self.dora, 'nova', 'boot', '--flavor',
                            self.flavor('m1.tiny'), '--image', 'cirros',
                            *self.nic(self.dora),
                            '--hint', 'lease_params=' + base.lease_params(
                                now, 'now', base.utc(1800)), now,
                            check=False)
        self.assert_refused(done, '403', 'approval',
                            'ask for a start in the future')
        self.assert_nothing_written(now)

    def test_undecided_lease_expires(self):
        lease = self.waiting(self.dora, 'undecided-' + self.suffix)
        self.assertEqual('PENDING_APPROVAL', lease['status'])
        # The hold is a minute; an engine looks every 5 s.
        self.gone(lease['id'])
        done = self.decide('admin', 'approve', lease['id'])
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertIn('no lease %s' % lease['id'], done.stderr)
