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

"""Reservation quotas with the real CLIs: a project whose Keystone tag
limits it, an admin's own limit for it, the refusals of leases and of a
boot with lease_params, and who may see and set a quota.
"""

from nova_reservation.tests.integration import base


class QuotaCLITest(base.BlazarCLI):

    def test_tag_then_admin_limit_refuse_and_give_back(self):
        user = 'quota-' + self.suffix[-8:]
        project = 'quota-' + self.suffix
        # m1.tiny: 1 vCPU.  The tag lets the project hold one at a time.
        self.new_user(user, project, 'reservation-quota:vcpus=1')
        project_id = self.openstack('admin', 'project', 'show',
                                    project)['id']
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        shown = {r['Limit']: r for r in self.openstack(
            user, 'reservation', 'quota', 'show')}
        self.assertEqual((1, 'tag', 0), (
            shown['vcpus']['Most'], shown['vcpus']['Source'],
            shown['vcpus']['In use']))

        first = self.lease(user, 'first-' + self.suffix,
                           'resource_type=flavor:instance,flavor_id=%s,'
                           'amount=1' % flavor)
        done = self.run_cli(
            user, 'openstack', 'reservation', 'lease', 'create',
            '--end-date', base.minutes(30), '--reservation',
            'resource_type=flavor:instance,flavor_id=%s,amount=1' % flavor,
            'second-' + self.suffix, check=False)
        self.assert_lease_refused(done, 'Quota exceeded', 'vcpus',
                                  project_id)
        self.assert_nothing_written('second-' + self.suffix)
        # A boot whose lease would pass it: refused by nova-api, nothing
        # left.
        done = self.run_cli(
            user, 'nova', 'boot', '--flavor', self.flavor('m1.tiny'),
            '--image', 'cirros', '--nic', 'none', '--hint',
            'lease_params=' + base.lease_params(
                'boot-' + self.suffix, 'now', base.minutes(20)),
            'boot-' + self.suffix, check=False)
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertIn('Quota exceeded', done.stdout + done.stderr)
        self.assert_nothing_written('boot-' + self.suffix)

        # Another project's member neither sees nor sets it; a member does
        # not set it; an admin does, above the tag.
        for who in ('bob', user):
            refused = self.run_cli(who, 'openstack', 'reservation', 'quota',
                                   'set', project_id, '--vcpus', '5',
                                   check=False)
            self.assertNotEqual(0, refused.returncode, refused.stdout)
            self.assertIn('reservation:quotas:update', refused.stderr)
        refused = self.run_cli('bob', 'openstack', 'reservation', 'quota',
                               'show', project_id, check=False)
        self.assertIn('reservation:quotas:get', refused.stderr)
        rows = {r['Limit']: r for r in self.openstack(
            'admin', 'reservation', 'quota', 'set', project_id, '--vcpus',
            '2', '--hosts', 'unlimited')}
        self.assertEqual((2, 'project', 1), (
            rows['vcpus']['Most'], rows['vcpus']['Source'],
            rows['vcpus']['In use']))
        second = self.lease(user, 'second-' + self.suffix,
                            'resource_type=flavor:instance,flavor_id=%s,'
                            'amount=1' % flavor)

        # Back to the tag's: above it, a delete gives back.
        self.openstack('admin', 'reservation', 'quota', 'set', project_id,
                       '--vcpus', 'default')
        self.delete_lease(first['id'])
        self.delete_lease(second['id'])
        self.wait_for(
            'the quota given back', lambda: {
                r['Limit']: r for r in self.openstack(
                    user, 'reservation', 'quota', 'show')}['vcpus'][
                'In use'] == 0, timeout=60)
        self.lease(user, 'third-' + self.suffix,
                   'resource_type=flavor:instance,flavor_id=%s,amount=1'
                   % flavor)
