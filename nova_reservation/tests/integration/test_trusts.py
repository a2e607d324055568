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

"""A lease's Keystone trust of its owner to the engine: made with the lease
(alice's, in her project, impersonating, with her roles), shown in the
lease, deleted with it; a trust to the engine that no lease holds (its
nova-api died before it wrote the lease) deleted by the reconciler; the
volumes made as the owner at the start, for a server deleted meanwhile.
"""

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base


class TrustTest(base.CloudTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.admin = base.CLOUD.session('admin')
        self.engine_user = self.openstack('admin', 'user', 'show',
                                          'nova-reservation')['id']

    def trust(self, trust_id: str):
        """The trust as Keystone shows it; None once it is deleted."""
        resp = self.admin.get('%s/OS-TRUST/trusts/%s' % (
            cloud.url('keystone'), trust_id), raise_exc=False)
        if resp.status_code == 404:
            return None
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()['trust']

    def wait_deleted(self, trust_id: str, timeout: float) -> None:
        self.wait_for('trust %s deleted' % trust_id,
                      lambda: self.trust(trust_id) is None,
                      timeout=timeout, interval=2)

    def test_a_lease_s_trust_is_its_owner_s_and_goes_with_it(self):
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        lease = self.openstack(
            'alice', 'reservation', 'lease', 'create', '--start-date',
            base.minutes(60), '--end-date', base.minutes(120),
            '--reservation', 'resource_type=flavor:instance,flavor_id=%s,'
            'amount=1' % flavor, 'trust-' + self.suffix)
        self.addCleanup(self.delete_lease, lease['id'])
        trust_id = lease['trust_id']
        self.assertTrue(trust_id, lease)
        trust = self.trust(trust_id)
        alice = self.openstack('admin', 'user', 'show', 'alice')['id']
        alpha = self.openstack('admin', 'project', 'show', 'alpha')['id']
        self.assertEqual(
            (alice, self.engine_user, alpha, True),
            (trust['trustor_user_id'], trust['trustee_user_id'],
             trust['project_id'], trust['impersonation']), trust)
        self.assertIn('member', [r['name'] for r in trust['roles']])
        self.delete_lease(lease['id'])
        self.wait_deleted(trust_id, 60)

    def test_a_trust_no_lease_holds_is_deleted(self):
        # What a nova-api killed between the trust and the lease leaves.
        alice = base.CLOUD.session('alice')
        resp = alice.post(cloud.url('keystone') + '/OS-TRUST/trusts', json={
            'trust': {'trustor_user_id': alice.get_user_id(),
                      'trustee_user_id': self.engine_user,
                      'project_id': alice.get_project_id(),
                      'impersonation': True,
                      'roles': [{'name': 'member'}]}})
        trust_id = resp.json()['trust']['id']
        self.addCleanup(alice.delete, '%s/OS-TRUST/trusts/%s' % (
            cloud.url('keystone'), trust_id), raise_exc=False)
        # Seen at two passes of the reconciler (every 15 s here).
        self.wait_deleted(trust_id, 120)

    def test_a_start_whose_trust_is_gone_still_starts(self):
        # Its owner deleted the trust: the engine makes the volume in its
        # own project, as without one, rather than leave the lease stuck.
        image = self.image_ref()
        name = 'untrusted-' + self.suffix
        server = self.openstack(
            'alice', 'server', 'create', '--flavor', self.flavor('m1.tiny'),
            '--nic', 'none', '--block-device', 'source_type=image,uuid=%s,'
            'destination_type=volume,volume_size=1,boot_index=0,'
            'delete_on_termination=true' % image, '--hint',
            'lease_params=' + base.lease_params(
                name, base.utc(60), base.utc(900)), name)
        self.addCleanup(self.delete_server, server['id'])
        trust_id, = [r['trust_id'] for r in self.store(
            'SELECT trust_id FROM rsv_leases WHERE name = %s', name)]
        base.CLOUD.session('alice').delete('%s/OS-TRUST/trusts/%s' % (
            cloud.url('keystone'), trust_id))
        self.wait_for_server('%s active' % server['id'], server['id'],
                             lambda s: s and s['status'] in (
                                 'ACTIVE', 'ERROR'), timeout=240)
        self.assertEqual('ACTIVE', self.server(server['id'])['status'])

    def test_a_server_deleted_while_its_volume_is_made_leaves_none(self):
        # Cinder takes 40 s to make the volume the lease's start makes as
        # alice: the server is deleted meanwhile, before the engine records
        # the volume in its block device mapping, so that Nova's delete
        # knows nothing of it.
        # (The local cloud's volume driver reads the type's extra spec.)
        vtype = self.openstack(
            'admin', 'volume', 'type', 'create', '--public', '--property',
            'localcloud:create_seconds=40', 'slow-' + self.suffix)
        self.addCleanup(self.delete, 'volumev3', '/types/' + vtype['id'])
        name = 'deleted-' + self.suffix
        server = self.openstack(
            'alice', '--os-compute-api-version', '2.67', 'server', 'create',
            '--flavor', self.flavor('m1.tiny'), '--image', 'cirros',
            '--nic', 'none', '--block-device', 'source_type=blank,'
            'destination_type=volume,volume_size=1,volume_type=%s,'
            'delete_on_termination=true' % vtype['name'], '--hint',
            'lease_params=' + base.lease_params(
                name, base.utc(45), base.utc(900)), name)
        self.addCleanup(self.delete_server, server['id'])
        made = 'reserved-%s-' % server['id']
        volume = self.wait_for('the volume of %s being made' % server['id'],
                               lambda: self.volume_named(made),
                               timeout=180, interval=1)
        self.assertEqual('creating', volume['status'], volume)
        self.delete_server(server['id'])
        self.wait_for_server('%s deleted' % server['id'], server['id'],
                             lambda s: s is None, timeout=60)
        self.wait_for('volume %s deleted' % volume['id'],
                      lambda: self.volume(volume['id']) is None,
                      timeout=180, interval=2)

    def volume_named(self, prefix: str):
        """The volume of any project whose name starts with `prefix`."""
        found = [v for v in self.admin.get(
            self.admin.get_endpoint(service_type='volumev3',
                                    interface='public') + '/volumes/detail',
            params=dict(all_tenants=1)).json()['volumes']
            if (v['name'] or '').startswith(prefix)]
        return found[0] if found else None
