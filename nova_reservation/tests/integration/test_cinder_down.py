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

"""Cinder's API down at a reserved boot that names a volume (a 503 that says
to try again, nothing written), and at the start of a lease whose server
boots from a new volume (the start is tried again, and the server is built
once Cinder answers).
"""

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base


class CinderDownTest(base.CloudTestCase):
    # It stops cinder-api, which every lane's tests use: alone on the
    # cloud.
    ALONE = True

    def stop_cinder_api(self) -> None:
        base.CLOUD.stop('cinder-api')
        # Started again whatever the test finds.
        self.addCleanup(self.start_cinder_api)

    def start_cinder_api(self) -> None:
        if 'cinder-api' not in base.CLOUD.running():
            base.CLOUD.start_cinder_api()
            base.CLOUD.wait_cinder()

    def test_at_the_boot(self):
        volume = self.openstack('alice', 'volume', 'create', '--size', '1',
                                '--image', 'cirros',
                                'alice-volume-' + self.suffix)
        self.addCleanup(self.delete, 'volumev3', '/volumes/' + volume['id'])
        self.wait_for('alice\'s volume available', lambda: self.volume(
            volume['id'])['status'] == 'available')
        self.stop_cinder_api()
        name = 'cinder-down-' + self.suffix
        done = self.reserved_boot(
            name, '--block-device',
            'source=volume,dest=volume,bootindex=0,id=' + volume['id'],
            '--nic', 'none')
        self.start_cinder_api()
        # Never a 500: a service Nova needs is down, to be tried again.
        self.assert_refused(done, '503')
        self.assert_nothing_written(name)
        kept = self.volume(volume['id'])
        self.assertEqual(('available', []),
                         (kept['status'], kept['attachments']))

    def test_at_the_start(self):
        image = self.image_ref()
        name = 'cinder-down-start-' + self.suffix
        # Away from before the boot (which does not need it for a volume
        # made at the start) so that the start meets it away.
        self.stop_cinder_api()
        server = self.openstack(
            'alice', 'server', 'create', '--flavor', self.flavor('m1.tiny'),
            '--nic', 'net-id=' + self.network('alice'), '--block-device',
            'source_type=image,uuid=%s,destination_type=volume,'
            'volume_size=1,boot_index=0,delete_on_termination=true' % image,
            '--hint', 'lease_params=' + base.lease_params(
                name, base.utc(20), base.utc(600), on_end='delete'), name)
        self.addCleanup(self.delete_server, server['id'])
        self.assertEqual('RESERVED', server['status'], server)
        lease_id = self.store('SELECT id FROM rsv_leases WHERE name = %s',
                              name)[0]['id']
        self.addCleanup(self.delete_lease, lease_id)
        # The engine's start fails while Cinder is away, and is tried
        # again.
        self.wait_for('the start to fail once', lambda: self.store(
            "SELECT attempts FROM rsv_events WHERE lease_id = %s AND "
            "event_type = 'start' AND attempts > 0", lease_id),
            timeout=120, interval=2)
        self.start_cinder_api()
        self.wait_for_server('%s active' % server['id'], server['id'],
                             lambda s: s and s['status'] in ('ACTIVE',
                                                             'ERROR'),
                             timeout=180)
        shown = self.rest('%s/servers/%s' % (cloud.url('nova'),
                                             server['id']))['server']
        self.assertEqual('ACTIVE', shown['status'], shown)
        attached = shown['os-extended-volumes:volumes_attached']
        self.assertEqual(1, len(attached), attached)
        self.assertEqual('in-use', self.volume(attached[0]['id'])['status'])
        self.wait_for_lease('%s active' % lease_id, lease_id,
                            lambda x: x and x['status'] == 'ACTIVE')
