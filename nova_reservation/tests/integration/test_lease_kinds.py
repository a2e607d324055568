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

"""Lease kinds on the local cloud with the real CLIs: default leases from
a project's tag in Keystone (``[reservation] default_lease_tag``, set on
the local cloud), a boot's waiting lease, and a recurring one.
"""

import json
import time

from nova_reservation.tests.integration import base


class ProjectTagTest(base.CloudTestCase):

    def boot(self, user: str, name: str) -> str:
        server = self.openstack(user, 'server', 'create', '--flavor',
                                self.flavor('m1.tiny'), '--image', 'cirros',
                                *self.nic(user), name)['id']
        self.addCleanup(self.delete_server, server)
        return server

    def lease_of(self, server: str) -> list:
        return self.store('SELECT l.id, l.name, l.start_at, l.end_at '
                          'FROM rsv_server_bindings b JOIN rsv_leases l '
                          'ON l.id = b.lease_id WHERE b.instance_uuid = %s',
                          server)

    def test_a_tagged_project_s_boots_are_leases(self):
        name = 'tagged-' + self.suffix
        self.new_user('carol-' + self.suffix[-10:], name,
                      'reservation:default_lease=2h')
        user = 'carol-' + self.suffix[-10:]
        server = self.boot(user, 'forgotten-' + self.suffix)
        found = self.lease_of(server)
        self.assertEqual(1, len(found), found)
        lease = found[0]
        self.addCleanup(self.delete_lease, lease['id'])
        self.assertEqual('default: forgotten-' + self.suffix, lease['name'])
        self.assertAlmostEqual(2 * 3600, (lease['end_at'] - lease[
            'start_at']).total_seconds(), delta=5)
        # The owner sees it with the lease API, and the server runs.
        self.assertIn(lease['id'], {x['id'] for x in self.openstack(
            user, 'reservation', 'lease', 'list')})
        self.wait_for_server('the server to run', server,
                             lambda s: s and s['status'] == 'ACTIVE')
        # A project without the tag boots ordinary servers.
        plain = self.boot('alice', 'plain-' + self.suffix)
        time.sleep(1)
        self.assertEqual([], self.lease_of(plain))
        self.assertNotIn('reservation:lease_id', self.openstack(
            'alice', 'server', 'show', plain)['properties'])


class WaitingAndRecurringTest(base.CloudTestCase):

    def boot(self, name: str, **lease) -> dict:
        """`nova boot` as alice with lease_params `lease`."""
        server = self.nova('alice', 'boot', '--flavor',
                           self.flavor('m1.tiny'), '--image', 'cirros',
                           *self.nic('alice'), '--hint',
                           'lease_params=' + json.dumps(dict(
                               name=name, **lease)), name)
        self.addCleanup(self.delete_server, server['id'])
        lease_id = self.store('SELECT lease_id FROM rsv_server_bindings '
                              'WHERE instance_uuid = %s', server['id'])[0][
            'lease_id']
        self.addCleanup(self.delete_lease, lease_id)
        return dict(server, lease_id=lease_id)

    def lease_row(self, lease_id: str) -> dict:
        return self.store('SELECT * FROM rsv_leases WHERE id = %s',
                          lease_id)[0]

    def test_a_waiting_boot_holds_nothing_until_there_is_room(self):
        # Every compute node of the lane is leased whole an hour from now,
        # for an hour (its bare-metal nodes have no vCPU to lease so; the
        # other lanes' nodes are their tests').
        computes = self.lane_nodes(computes_only=True)
        nodes = [n for n in self.openstack('admin', 'hypervisor', 'list')
                 if n['Hypervisor Hostname'] in computes]
        reservation = ('resource_type=virtual:instance,vcpus=4,memory_mb='
                       '8192,disk_gb=80,amount=%d,affinity=None' % len(nodes))
        if self.on_lane():
            # python-blazarclient splits the pairs only before a known
            # key and '=': the JSON's commas stay in its value.
            reservation += ',resource_properties=' + self.on_lane()
        full = self.openstack(
            'admin', 'reservation', 'lease', 'create', '--start-date',
            base.minutes(60), '--end-date', base.minutes(120),
            '--reservation', reservation, 'full-' + self.suffix)
        self.addCleanup(self.delete_lease, full['id'])
        name = 'patient-' + self.suffix
        server = self.boot(name, start=base.minutes(70),
                           end=base.minutes(100), if_busy='wait')
        row = self.lease_row(server['lease_id'])
        self.assertEqual('WAITING', row['status'])
        self.assertIn('Not enough capacity', row['status_reason'])
        shown = self.openstack('alice', 'server', 'show', server['id'])
        self.assertEqual('RESERVED', shown['status'])
        self.assertEqual([], self.store(
            'SELECT s.id FROM rsv_allocations s JOIN rsv_reservations r ON '
            'r.id = s.reservation_id WHERE r.lease_id = %s AND NOT '
            's.deleted', server['lease_id']))
        # Room: the full lease goes; an engine places the waiting one, at
        # a try of its own (the engines try every few seconds: on a busy
        # machine some tries may come, and find no room, before this).
        tried = self.lease_row(server['lease_id'])['tries'] or 0
        self.delete_lease(full['id'])
        placed = self.wait_for('the waiting lease placed', lambda: (
            lambda x: x['status'] == 'PENDING' and x)(
                self.lease_row(server['lease_id'])), timeout=90)
        self.assertLess(tried, placed['tries'])
        slots = self.store(
            'SELECT s.instance_uuid FROM rsv_allocations s JOIN '
            'rsv_reservations r ON r.id = s.reservation_id WHERE '
            'r.lease_id = %s AND NOT s.deleted', server['lease_id'])
        self.assertEqual([server['id']], [s['instance_uuid'] for s in slots])
        shown = self.openstack('alice', 'reservation', 'lease', 'show',
                               server['lease_id'])
        self.assertEqual('PENDING', shown['status'])

    def test_a_recurring_boot_lease_is_one_series(self):
        name = 'daily-' + self.suffix
        server = self.boot(name, start='now', end=base.minutes(30),
                           recurrence=dict(every='day', count=3))
        series = self.store('SELECT id, occurrence, status, start_at FROM '
                            'rsv_leases WHERE series_id = %s ORDER BY '
                            'occurrence', server['lease_id'])
        self.assertEqual([0, 1, 2], [x['occurrence'] for x in series])
        self.assertEqual(server['lease_id'], series[0]['id'])
        self.wait_for_server('the server to run', server['id'],
                             lambda s: s and s['status'] == 'ACTIVE')
        # Listed once, with its occurrences.
        listed = [x for x in self.openstack('alice', 'reservation', 'lease',
                                            'list') if x['name'] == name]
        self.assertEqual([server['lease_id']], [x['id'] for x in listed])
        # Deleted as one: every occurrence goes, and the server.
        self.run_cli('alice', 'openstack', 'reservation', 'lease', 'delete',
                     server['lease_id'])
        self.wait_for('the series gone', lambda: all(
            x['status'] == 'DELETED' for x in self.store(
                'SELECT status FROM rsv_leases WHERE series_id = %s',
                server['lease_id'])), timeout=120)
        self.wait_for_server('the server gone', server['id'],
                             lambda s: s is None, timeout=120)
