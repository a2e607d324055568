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

"""Two engines at once against one store: every event runs exactly once,
as Nova's own record of actions on the servers shows.
"""

import collections

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base


class TwoEnginesTest(base.CloudTestCase):
    LEASES = 6

    def test_every_event_exactly_once(self):
        engines = [n for n in base.CLOUD.running() if n.startswith('engine')]
        self.assertGreaterEqual(len(engines), 2,
                                'run the cloud with --engines 2')
        alice = base.CLOUD.session('alice')
        nova = cloud.url('nova')
        image = self.image_ref()
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        start, end = base.utc(45), base.utc(75)
        servers = {}
        for i in range(self.LEASES):
            name = 'twice-%d-%s' % (i, self.suffix)
            resp = alice.post(nova + '/servers', json={
                'server': dict(name=name, flavorRef=flavor, imageRef=image,
                               networks='auto'),
                'os:scheduler_hints': {'lease_params': base.lease_params(
                    name, start, end, on_end='none')}},
                headers={'OpenStack-API-Version': 'compute 2.91'},
                raise_exc=False)
            self.assertEqual(202, resp.status_code, resp.text)
            server = resp.json()['server']
            servers[server['id']] = server['reservation']['lease_id']
            self.addCleanup(self.delete_server, server['id'])

        def ended():
            rows = self.store(
                'SELECT status FROM rsv_leases WHERE id IN (%s)' % ', '.join(
                    ['%s'] * len(servers)), *servers.values())
            return all(r['status'] == 'TERMINATED' for r in rows)
        self.wait_for('the leases to end', ended, timeout=240)

        events = self.store(
            'SELECT lease_id, event_type, status, runs, claimed_by FROM '
            'rsv_events WHERE lease_id IN (%s)' % ', '.join(
                ['%s'] * len(servers)), *servers.values())
        self.assertEqual({('DONE', 1)}, {(e['status'], e['runs'])
                                         for e in events})
        self.assertLessEqual({'start', 'end'},
                             {e['event_type'] for e in events})
        # What Nova did to each server: made reserved, one unshelve (the
        # build at the start), never a shelve.
        admin = base.CLOUD.session('admin')
        for server_id in servers:
            actions = collections.Counter(
                a['action'] for a in admin.get(
                    '%s/servers/%s/os-instance-actions' % (nova, server_id),
                    headers={'OpenStack-API-Version': 'compute 2.91'}
                ).json()['instanceActions'])
            self.assertEqual(1, actions['unshelve'], actions)
            self.assertEqual(0, actions['shelve'], actions)
            self.assertEqual('ACTIVE', self.server(server_id)['status'])
