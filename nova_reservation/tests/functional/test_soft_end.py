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

"""A soft end (``on_end: extend_if_free``): at its end a lease whose
capacity is still free runs on for its own length (at most
`max_extensions` times), its owner told; otherwise it ends.
"""

import datetime

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.db import notices as db_notices
from nova_reservation import notifications
from nova_reservation.tests.functional import base

STORE = base.STORE


class SoftEndTest(base.ReservationsTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.capture_notifications()

    def soft_lease(self, **extra):
        resp = self.boot(base.params('now', base.when(60),
                                     on_end='extend_if_free', **extra))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.node_of(uuid)
        self.run_engine()
        return uuid, db_leases.get(STORE, resp.body['server'][
            'reservation']['lease_id'])

    def test_extended_while_free_then_ended(self):
        uuid, lease = self.soft_lease()
        length = lease.end_at - lease.start_at
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        extended = db_leases.get(STORE, lease.id)
        self.assertEqual((lease.end_at + length, 1, 'ACTIVE'),
                         (extended.end_at, extended.extensions,
                          extended.status))
        self.assertEqual('ACTIVE', self.admin_api.get_server(uuid)['status'])
        self.assertIn('lease.update', [t for t, _ in self.notified()])
        shown = self.rsv('GET', '/leases/%s' % lease.id).json()['lease']
        self.assertEqual(('extend_if_free', 1, 1),
                         (shown['on_end'], shown['max_extensions'],
                          shown['extensions']))
        # Once as many times as it may: it ends, its server deleted.
        self.run_engine(at=epoch.to_epoch(extended.end_at) + 1)
        self.wait_gone(uuid)
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease.id).status)

    def test_ended_when_its_capacity_is_taken_then(self):
        uuid, lease = self.soft_lease(max_extensions=3)
        # Both nodes are promised from a minute after its end.
        later = self.rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=61, end=180, name='later'))
        self.assertEqual(201, later.status_code, later.text)
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        self.wait_gone(uuid)
        ended = db_leases.get(STORE, lease.id)
        self.assertEqual(('TERMINATED', lease.end_at),
                         (ended.status, ended.end_at))
        self.assertFalse(ended.extensions)   # never extended

    def test_bad_soft_ends_are_400s_that_name_the_field(self):
        for extra, field in (
                (dict(max_extensions=2), 'lease_params.max_extensions'),
                (dict(on_end='extend_if_free', max_extensions=0),
                 'lease_params.max_extensions'),
                (dict(on_end='extend_if_free', max_extensions='2'),
                 'lease_params.max_extensions'),
                (dict(on_end='extend_forever'), 'lease_params.on_end')):
            resp = self.boot(base.params(base.when(60), base.when(120),
                                         **extra))
            self.assertEqual(400, resp.status, (extra, resp.content))
            self.assertIn(field, resp.body['badRequest']['message'])
        for extra, field in (
                (dict(max_extensions=2), 'max_extensions'),
                (dict(on_end='extend_if_free', max_extensions=101),
                 'max_extensions'),
                (dict(on_end=None), 'on_end')):
            body = dict(base.flavor_lease(), **extra)
            resp = self.rsv('POST', '/leases', body)
            self.assertEqual(400, resp.status_code, (extra, resp.text))
            self.assertTrue(resp.json()['error_message'].startswith(field),
                            resp.text)
        self.assertEqual([], self.leases())

    def test_the_lease_api_takes_a_soft_end(self):
        body = dict(base.flavor_lease(), on_end='extend_if_free',
                    max_extensions=2)
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        self.assertEqual(('extend_if_free', 2, 0),
                         (lease['on_end'], lease['max_extensions'],
                          lease['extensions']))
        row = db_leases.get(STORE, lease['id'])
        self.assertEqual(datetime.timedelta(hours=1),
                         row.end_at - row.start_at)

    def test_an_extension_told_while_the_broker_is_away_is_told_later(self):
        self.flags(event_claim_timeout=30, group='reservation')
        uuid, lease = self.soft_lease()

        class Unreachable(notifications.Notifier):
            def send(self, event_type, payload):
                raise ConnectionError('broker gone')

        self.engine.notifier = Unreachable()
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        self.assertEqual(1, db_leases.get(STORE, lease.id).extensions)
        # Stored with the extension, in its transaction.
        self.assertEqual(['lease.update'], [
            n.event_type for n in db_notices.unsent(STORE)])
        self.engine.notifier = notifications.Notifier()
        self.clock.now += 31   # the first try's hold has expired
        self.run_engine(at=self.clock.now)
        told = [p for t, p in self.notified('lease.update')
                if p['lease_id'] == lease.id]
        self.assertEqual(1, len(told))
        shown = self.rsv('GET', '/leases/%s' % lease.id).json()['lease']
        self.assertEqual(shown['end_date'], told[0]['end_date'])
        self.assertEqual([], db_notices.unsent(STORE))
