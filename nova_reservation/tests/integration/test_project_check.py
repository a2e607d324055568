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

"""Project ids that the real Keystone does not know, refused with the real
CLIs: an admin's quota for one, alice sharing a lease with one (her token
may not look up bob's project: nova-api asks with its own credentials),
and nothing written for either.
"""

import json
import uuid

from nova_reservation.tests.integration import base


class ProjectCheckCLITest(base.BlazarCLI):

    def assert_unknown(self, done, field: str, project_id: str) -> None:
        out = done.stdout + done.stderr
        self.assertNotEqual(0, done.returncode, out)
        self.assertIn('%s: project %s is not known to Keystone'
                      % (field, project_id), out)

    def shared_with(self, lease_id: str) -> list:
        shown = self.openstack('alice', 'reservation', 'lease', 'show',
                               lease_id)
        first, _ = json.JSONDecoder().raw_decode(shown['reservations'])
        return first['shared_with']

    def test_unknown_project_ids_are_refused(self):
        unknown = uuid.uuid4().hex
        bob_project = self.openstack('admin', 'project', 'show',
                                     'beta')['id']

        done = self.run_cli('admin', 'openstack', 'reservation', 'quota',
                            'set', unknown, '--vcpus', '4', check=False)
        self.assert_unknown(done, 'project_id', unknown)
        self.assertEqual([], self.store(
            'SELECT name FROM rsv_quotas WHERE project_id = %s', unknown))

        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        lease = self.lease(
            'alice', 'checked-' + self.suffix,
            'resource_type=flavor:instance,flavor_id=%s,amount=1' % flavor)
        done = self.run_cli('alice', 'openstack', 'reservation', 'share',
                            'set', lease['id'], '--project', bob_project,
                            '--project', unknown, check=False)
        # The CLI sends the projects sorted.
        field = 'reservations[0].shared_with[%d]' % sorted(
            [bob_project, unknown]).index(unknown)
        self.assert_unknown(done, field, unknown)
        self.assertEqual([], self.shared_with(lease['id']))

        # A project Keystone knows is shared with, though alice's token
        # may not look it up.
        self.openstack('alice', 'reservation', 'share', 'set', lease['id'],
                       '--project', bob_project)
        self.assertEqual([bob_project], self.shared_with(lease['id']))
