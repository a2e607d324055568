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

"""The workflows of Blazar's scenario tests (blazar-tempest-plugin's
host, flavor-based and instance reservations, lease expiration and
update), followed step by step with the ``openstack`` CLI.

Where this project answers differently on purpose, the step checks this
project's answer and says why (the API reference's compatibility table lists
each): a boot beyond a reservation is refused by nova-api with a 409
instead of ending in ERROR, and an ordinary boot still runs on the shared
pool where capacity is not promised.
"""

from nova_reservation.tests.integration import base
from nova_reservation.tests.integration import cli_dates


class BlazarScenarioTest(base.BlazarCLI):

    def show(self, lease_id: str, user: str = 'alice') -> dict:
        """The lease as the API shows it (its reservations and events as
        JSON, which the CLI prints as text).
        """
        return base.CLOUD.session(user).get(
            '%s/%s' % (base.LEASES, lease_id)).json()['lease']

    def aggregate(self, name: str):
        done = self.run_cli('admin', 'openstack', 'aggregate', 'show', name,
                            '-f', 'json', check=False)
        return base.parse_json(done.stdout) if not done.returncode else None

    def gone(self, server_id: str) -> None:
        self.wait_for_server('%s deleted' % server_id, server_id,
                             lambda s: s is None, timeout=120)

    def ended(self, lease_id: str) -> dict:
        """Blazar's wait for a lease's end: its end_lease event DONE."""
        def done():
            lease = self.show(lease_id)
            return lease if [e for e in lease['events'] if e['event_type'] ==
                             'end_lease' and e['status'] == 'DONE'] else None
        return self.wait_for('lease %s ended' % lease_id, done,
                             timeout=240, interval=2)

    def create(self, user: str, body: dict):
        """The API's answer to a lease creation, as Blazar's client sends
        it.
        """
        answer = base.CLOUD.session(user).post(
            base.LEASES, json=body, raise_exc=False)
        if answer.status_code == 201:
            self.addCleanup(self.delete_lease, answer.json()['lease']['id'])
        return answer

    def test_host_reservation_and_expiration(self):
        name, host = self.enroll()
        self.assertIn(name, self.aggregate('freepool')['hosts'])
        on_host = self.on_lane('["==", "$hypervisor_hostname", "%s"]' % name)

        # A missing parameter and an invalid request are 400s.
        body = dict(name='scenario-1-missing-param', start_date='now',
                    end_date=base.minutes(60), events=[])
        body['reservations'] = [dict(
            hypervisor_properties=on_host, min='1',
            resource_type='physical:host', resource_properties='')]
        answer = self.create('alice', body)
        self.assertEqual(400, answer.status_code, answer.text)
        body['reservations'][0].update(min='bar', max='foo')
        answer = self.create('alice', body)
        self.assertEqual(400, answer.status_code, answer.text)

        # A lease that starts now and ends within two minutes.
        lease = self.lease('alice', 'scenario-2-expiration-' + self.suffix,
                           'resource_type=physical:host,min=1,max=1,'
                           'hypervisor_properties=' + on_host, end=2)
        rid = lease['reservation_id']
        self.assertIn(name, self.wait_for('aggregate %s' % rid,
                                          lambda: self.aggregate(rid))[
            'hosts'])
        server = self.boot('alice', 'in-host-' + self.suffix,
                           self.flavor('m1.tiny'), 'reservation=' + rid)[0]
        self.assertEqual(name, self.settled(server)['OS-EXT-SRV-ATTR:host'])

        lease = self.ended(lease['id'])
        self.gone(server)
        self.assertIsNone(self.aggregate(rid))
        self.assertIn(name, self.aggregate('freepool')['hosts'])
        self.assertEqual('TERMINATED', lease['status'])
        self.assertIn('deleted', lease['reservations'][0]['status'])

    def test_flavor_reservation(self):
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        lease = self.lease('alice', 'flavor-instance-scenario-' + self.suffix,
                           'resource_type=flavor:instance,flavor_id=%s,'
                           'amount=1' % flavor)
        rid = lease['reservation_id']
        self.assertIsNone(lease['reservation'].get('server_group_id'))

        # The reservation's flavor is the reservation's id.
        server = self.boot('alice', 'flavor-rsv-' + self.suffix, rid)[0]
        built = self.settled(server)
        self.assertEqual('ACTIVE', built['status'], built.get('fault'))
        # Beyond the reserved amount: Blazar's server ends in ERROR
        # (NoValidHost); here nova-api refuses it and makes nothing.
        self.assertIn('409', self.refused(
            'alice', 'flavor-rsv2-' + self.suffix, rid))

        # Deleting the lease terminates its server and removes the flavor.
        self.run_cli('alice', 'openstack', 'reservation', 'lease', 'delete',
                     lease['id'])
        self.gone(server)
        self.wait_for('flavor %s removed' % rid, lambda: self.run_cli(
            'admin', 'openstack', 'flavor', 'show', rid,
            check=False).returncode)

    def test_instance_reservation_update(self):
        lease = self.lease('alice', 'instance-scenario-' + self.suffix,
                           'resource_type=virtual:instance,vcpus=1,'
                           'memory_mb=1024,disk_gb=10,amount=1,'
                           'affinity=False,resource_properties='
                           + self.on_lane(), end=60)
        rid = lease['reservation_id']
        group = lease['reservation']['server_group_id']
        self.assertEqual(['anti-affinity'], [self.openstack(
            'alice', 'server', 'group', 'show', group)['policy']])

        server = self.boot('alice', 'instance-rsv-' + self.suffix, rid,
                           'group=' + group)[0]
        built = self.settled(server)
        self.assertEqual('ACTIVE', built['status'], built.get('fault'))
        self.assertIn('409', self.refused(
            'alice', 'instance-rsv2-' + self.suffix, rid, 'group=' + group))

        # Blazar's update scenario: the end brought forward ends the lease
        # and terminates its server; the lease then shows TERMINATED.
        # (The first whole minute 25 s away: room for the CLI's run.)
        self.run_cli('alice', 'openstack', 'reservation', 'lease', 'set',
                     '--end-date', cli_dates.soon(25), lease['id'])
        lease = self.ended(lease['id'])
        self.gone(server)
        self.assertEqual('TERMINATED', lease['status'])
        self.assertIn('deleted', lease['reservations'][0]['status'])
        for kind, thing in (('server group', group), ('flavor', rid)):
            done = self.run_cli('admin', 'openstack', *kind.split(), 'show',
                                thing, check=False)
            self.assertNotEqual(0, done.returncode, done.stdout)
