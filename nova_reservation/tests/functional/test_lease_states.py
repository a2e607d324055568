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

"""No lease gets stuck: failures are retried then explained, an admin can
retry, and every lease can be deleted whatever its state."""

import datetime

import sqlalchemy as sa

from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import models
from nova_reservation import status
from nova_reservation.tests.functional import base

STORE = db_api.Context()

when = base.when


class FailedStartTest(base.ReservationTestCase):

    def test_failed_start_is_retried_explained_and_retried_by_an_admin(self):
        self.flags(event_retries=2, retry_backoff=0, group='reservation')
        uuid = self.boot_reserved()
        lease = db_leases.get(
            STORE, self.api.get_server(uuid)['reservation']['lease_id'])
        slot = db_ledger.slot_of(
            STORE, db_leases.reservations(STORE, lease.id)[0].id, uuid)
        service = next(s for s in self.admin_api.get_services(
            binary='nova-compute', host=slot.host))
        self.admin_api.put_service(service['id'], {'status': 'disabled'})

        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        failed = db_leases.get(STORE, lease.id)
        self.assertEqual('ERROR', failed.status)
        self.assertIn('start failed', failed.status_reason)
        start = next(e for e in db_events.of_lease(STORE, lease.id)
                     if e.event_type == 'start')
        self.assertEqual((status.ERROR, 2), (start.status, start.attempts))
        shown = self.lease_api()('GET', '/leases/%s' % lease.id).json()
        self.assertEqual('ERROR', shown['lease']['status'])

        path = '/leases/%s/events/%s/retry' % (lease.id, start.uuid)
        self.assertEqual(403, self.lease_api()('POST', path, {}).status_code)
        self.admin_api.put_service(service['id'], {'status': 'enabled'})
        admin = self.lease_api('admin', roles=('reader', 'member', 'admin'))
        self.assertEqual(202, admin('POST', path, {}).status_code)
        self.assertEqual(409, admin('POST', path, {}).status_code)
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 2)
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease.id).status)
        server = self.admin_api.get_server(uuid)
        self.assertEqual(('ACTIVE', slot.host),
                         (server['status'], server['OS-EXT-SRV-ATTR:host']))


class DeleteInEveryStateTest(base.ReservationTestCase):

    def _set(self, lease_id: str, **values) -> None:
        with db_api.writing(STORE) as session:
            session.execute(sa.update(models.Lease).where(
                models.Lease.id == lease_id).values(**values))

    def test_every_lease_can_be_deleted(self):
        rsv = self.lease_api()
        made = {}
        for state in ('PENDING', 'ERROR', 'TERMINATED', 'CREATING',
                      'STARTING', 'DELETING'):
            made[state] = rsv('POST', '/leases', base.flavor_lease(
                amount=1, start=10 * len(made) + 60,
                end=10 * len(made) + 65)).json()['lease']['id']
            if state != 'PENDING':
                self._set(made[state], status=state)
        # A lease whose start crashed with its engine: claimed, never done.
        with db_api.writing(STORE) as session:
            session.execute(sa.update(models.Event).where(
                models.Event.lease_id == made['STARTING'],
                models.Event.event_type == 'start').values(
                status=status.IN_PROGRESS, claimed_by='dead-engine',
                claim_expires=db_api.utcnow() + datetime.timedelta(
                    hours=1)))
        resp = self.boot(base.params('now', base.when(60)))
        self.assertEqual(202, resp.status, resp.content)
        server = resp.body['server']['id']
        made['ACTIVE'] = resp.body['server']['reservation']['lease_id']

        for state, lease_id in made.items():
            resp = rsv('DELETE', '/leases/%s' % lease_id)
            self.assertEqual(204, resp.status_code, (state, resp.text))
        self.run_engine()
        for state, lease_id in made.items():
            self.assertEqual(404, rsv('GET', '/leases/%s'
                                      % lease_id).status_code, state)
        self.wait_gone(server)
        self.assertEqual([], rsv('GET', '/leases').json()['leases'])
        # Their capacity is free again.
        self.assertEqual(201, rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=50, end=200)).status_code)


class HostFailureTest(base.ReservationTestCase):
    NODES = ('host1', 'host2', 'host3')

    def test_future_slots_leave_a_failed_host(self):
        self.capture_notifications()
        rsv = self.lease_api()
        first = rsv('POST', '/leases',
                    base.flavor_lease(amount=2)).json()['lease']
        rid = first['reservations'][0]['id']
        nodes = {s.node for s in db_ledger.slots(STORE, rid)}
        self.assertEqual(2, len(nodes))
        failed = sorted(nodes)[0]
        self.set_compute(failed, 'disabled')
        self.engine.check_hosts()
        moved = {s.node for s in db_ledger.slots(STORE, rid)}
        self.assertNotIn(failed, moved)
        self.assertEqual(2, len(moved))
        self.assertFalse(db_leases.get(STORE, first['id']).degraded)

        # Another node fails: two slots, one healthy node; degraded.
        self.set_compute(sorted(moved)[0], 'disabled')
        self.engine.check_hosts()
        lease = db_leases.get(STORE, first['id'])
        self.assertTrue(lease.degraded)
        told = [p for _, p in self.notified('lease.update')]
        self.assertEqual([first['id']], [p['lease_id'] for p in told])
        self.assertTrue(told[0]['degraded'])
