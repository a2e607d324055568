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

"""Reserved boots, through the real CLI, that name another project's
network, port or volume, or a volume that does not exist: each is refused
with a 4xx that names what is wrong, and nothing is written: no live lease,
no server, no port, no attachment, the other project's port and volume
untouched.
"""

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

MISSING = '00000000-0000-4000-8000-000000000000'


class RefusedResourcesTest(base.CloudTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.admin = base.CLOUD.session('admin')
        # The boots are a member's of a project of the test's own: the
        # ports of alice's are those of every lane's tests.
        self.user = 'refused-' + self.suffix[-8:]
        self.project = 'refused-' + self.suffix
        self.new_user(self.user, self.project)

    def own_ports(self) -> set:
        project_id = self.openstack('admin', 'project', 'show',
                                    self.project)['id']
        return {p['id'] for p in self.admin.get(
            cloud.url('network') + '/v2.0/ports',
            params=dict(project_id=project_id)).json()['ports']}

    def reserved_boot(self, name: str, *args: str):
        """`base.CloudTestCase.reserved_boot`, as the test's own user."""
        return self.run_cli(
            self.user, 'nova', 'boot', '--flavor', self.flavor('m1.tiny'),
            *args, '--hint', 'lease_params=' + base.lease_params(
                name, base.utc(3600), base.utc(7200)), name, check=False)

    def test_what_is_not_the_project_s_or_not_there(self):
        image = '--image=cirros'
        on = 'source=volume,dest=volume,bootindex=0,id='
        port = self.openstack('bob', 'port', 'create', '--network',
                              self.network('bob'), 'bob-port-' + self.suffix)
        self.addCleanup(self.delete, 'network', '/v2.0/ports/' + port['id'])
        volume = self.openstack('bob', 'volume', 'create', '--size', '1',
                                'bob-volume-' + self.suffix)
        self.addCleanup(self.delete, 'volumev3', '/volumes/' + volume['id'])
        self.wait_for('bob\'s volume available', lambda: self.volume(
            volume['id'])['status'] == 'available')
        ports = self.own_ports()
        for case, args, status, words in (
                ('network', (image, '--nic', 'net-id=' +
                             self.network('bob')), '400',
                 (self.network('bob'),)),
                ('port', (image, '--nic', 'port-id=' + port['id']), '400',
                 (port['id'],)),
                ('volume', ('--block-device', on + volume['id'], '--nic',
                            'none'), '400', (volume['id'],)),
                ('missing', ('--block-device', on + MISSING, '--nic',
                             'none'), '400', (MISSING,))):
            name = 'refused-%s-%s' % (case, self.suffix)
            done = self.reserved_boot(name, *args)
            self.assert_refused(done, status, *words)
            self.assert_nothing_written(name)
        # None made for the project.
        self.assertEqual(set(), self.own_ports() - ports)
        kept = self.admin.get('%s/v2.0/ports/%s' % (
            cloud.url('network'), port['id'])).json()['port']
        self.assertEqual(('', ''), (kept['device_id'], kept['device_owner']))
        kept = self.volume(volume['id'])
        self.assertEqual(('available', []),
                         (kept['status'], kept['attachments']))
