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

"""Servers booted from a volume, with Nova's stand-in for Cinder."""

from nova.tests import fixtures as nova_fixtures

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base
from nova_reservation.tests.functional.base import params
from nova_reservation.tests.functional.base import when

STORE = base.STORE
BIG_DISK = 'bigdisk'


class VolumeBackedTest(base.ReservationTestCase):
    """Servers booted from a volume: the ledger counts their disk as
    Placement does (no root disk on the node), and their volume is made or
    attached as Nova does, at the start.
    """

    def setUp(self) -> None:
        super().setUp()
        self.cinder = self.useFixture(nova_fixtures.CinderFixture(
            self.cloud.harness))
        # Its root disk takes more than half a node's (1028 GB), little
        # else: a node holds one from an image, many from volumes.
        self.admin_api.post_flavor({'flavor': {
            'name': 'bigdisk', 'id': BIG_DISK, 'vcpus': 1, 'ram': 512,
            'disk': 600}})

    def _boot(self, root: dict, count: int = 1,
              flavor: str = base.ONE_PER_NODE, **lease):
        server = {'name': 'bfv', 'flavorRef': flavor,
                  'networks': 'none', 'imageRef': '',
                  'min_count': count, 'max_count': count,
                  'block_device_mapping_v2': [dict(root, boot_index=0)]}
        return self.api.api_post('/servers', {
            'server': server, 'os:scheduler_hints': {
                'lease_params': params(when(60), when(120), **lease)}},
            check_response_status=False)

    def _run(self, on_end: str) -> tuple:
        """A server from an image's volume, with a lease that ends with
        `on_end`, once its lease has ended: (its id, the lease's row).
        """
        resp = self._boot({'uuid': base.IMAGE, 'source_type': 'image',
                           'destination_type': 'volume', 'volume_size': 1},
                          on_end=on_end)
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        lease = self.lease_of_server(uuid)
        self.start_lease(lease)
        self.assertEqual('ACTIVE', self.admin_api.get_server(uuid)['status'])
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        return uuid, db_leases.get(STORE, lease.id)

    def test_on_end_shelve(self):
        uuid, lease = self._run('shelve')
        self.assertEqual('TERMINATED', lease.status)
        # A volume-backed server is offloaded at once; its volume stays.
        self.assertEqual('SHELVED_OFFLOADED',
                         self.admin_api.get_server(uuid)['status'])
        self.assertEqual(1, len(list(self.cinder.volume_ids_for_instance(
            uuid))))

    def test_on_end_snapshot(self):
        images = len(self.glance.images)
        uuid, lease = self._run('snapshot')
        self.assertEqual('TERMINATED', lease.status)
        self.wait_gone(uuid)
        # Nova's snapshot of a volume-backed server: an image that names
        # the volume's snapshot.
        self.assertEqual(images + 1, len(self.glance.images))
        self.assertEqual(1, len(self.cinder.volume_snapshots))

    def test_the_ledger_counts_no_root_disk_for_them(self):
        resp = self._boot({'uuid': base.IMAGE, 'source_type': 'image',
                           'destination_type': 'volume',
                           'volume_size': 1}, count=6, flavor=BIG_DISK)
        self.assertEqual(202, resp.status, resp.content)
        lease = self.leases()[0]
        slots = [s for r in db_leases.reservations(STORE, lease.id)
                 for s in db_ledger.slots(STORE, r.id)]
        self.assertEqual([0] * 6, [s.disk_gb for s in slots])
        # Their nodes' disks are left to image-backed ones: one each.
        resp = self.boot(params(when(60), when(120)), flavor=BIG_DISK,
                         count=2)
        self.assertEqual(202, resp.status, resp.content)
        resp = self.boot(params(when(60), when(120)), flavor=BIG_DISK)
        self.assertEqual(409, resp.status, resp.content)

    def test_an_ordinary_one_takes_what_leases_leave_of_ram(self):
        # Every node's disk is promised to a lease later, not its RAM.
        resp = self.boot(params(when(60), when(120)), flavor=BIG_DISK,
                         count=2)
        self.assertEqual(202, resp.status, resp.content)
        image_backed = self.cloud.boot('plain', BIG_DISK)
        self.assertEqual(202, image_backed.status, image_backed.content)
        self.assertEqual('ERROR', self._wait_for_state_change(
            image_backed.body['server'], 'ERROR')['status'])
        server = {'name': 'bfv', 'flavorRef': BIG_DISK, 'networks': 'none',
                  'imageRef': '', 'block_device_mapping_v2': [{
                      'boot_index': 0, 'uuid': base.IMAGE,
                      'source_type': 'image', 'destination_type': 'volume',
                      'volume_size': 1, 'delete_on_termination': True}]}
        made = self.api.post_server({'server': server})
        self._wait_for_state_change(made, 'ACTIVE')

    def test_a_volume_made_from_an_image_at_the_start(self):
        resp = self._boot({'uuid': base.IMAGE, 'source_type': 'image',
                           'destination_type': 'volume', 'volume_size': 1,
                           'delete_on_termination': True})
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assert_holds_nothing(uuid, len(self.glance.images))
        self.assertEqual([], list(self.cinder.volume_ids_for_instance(uuid)))
        self.start_lease(self.lease_of_server(uuid))
        self.assertEqual('ACTIVE', self.admin_api.get_server(uuid)['status'])
        made = list(self.cinder.volume_ids_for_instance(uuid))
        self.assertEqual(1, len(made))
        self.assertIn(made[0], self.cinder.volumes)

    def test_an_existing_volume_is_reserved_at_the_boot(self):
        volume = nova_fixtures.CinderFixture.IMAGE_BACKED_VOL
        resp = self._boot({'uuid': volume, 'source_type': 'volume',
                           'destination_type': 'volume'})
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assert_holds_nothing(uuid, len(self.glance.images))
        # Reserved in Cinder for the server, as Nova does at a boot.
        self.assertEqual([volume],
                         list(self.cinder.volume_ids_for_instance(uuid)))
        lease = self.lease_of_server(uuid)
        self.start_lease(lease)
        self.assertEqual('ACTIVE', self.admin_api.get_server(uuid)['status'])
        attached = self.api.api_get(
            '/servers/%s/os-volume_attachments' % uuid).body
        self.assertEqual([volume], [a['volumeId'] for a in
                                    attached['volumeAttachments']])
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        self.wait_gone(uuid)
        # Detached, and left where it was.
        self.assertEqual([], list(self.cinder.volume_ids_for_instance(uuid)))
