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

"""The lease API in nova-api, as the store sees it: slots that follow a
change and go with a deletion, changes that can not lose each other.  Its
HTTP contract is in gabbits/."""

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation import exception
from nova_reservation.lease import write as lease_write
from nova_reservation.tests.functional import base

STORE = db_api.Context()

when = base.when


class LeaseAPITest(base.ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.rsv = self.lease_api()

    def test_create_list_show_update_delete(self):
        resp = self.rsv('POST', '/leases', base.flavor_lease(amount=2))
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual('reservation 1.0',
                         resp.headers['OpenStack-API-Version'])
        lease = resp.json()['lease']
        self.assertEqual('PENDING', lease['status'])
        res = lease['reservations'][0]
        self.assertEqual(('flavor:instance', 2, None),
                         (res['resource_type'], res['amount'],
                          res['affinity']))
        self.assertEqual(['start_lease', 'end_lease'],
                         [e['event_type'] for e in lease['events']])

        listed = self.rsv('GET', '/leases').json()['leases']
        self.assertEqual([lease['id']], [x['id'] for x in listed])
        shown = self.rsv('GET', '/leases/%s' % lease['id']).json()['lease']
        self.assertEqual(lease['start_date'], shown['start_date'])

        # One date for the request and the check: a minute may turn
        # between two.
        end = when(150)[:16]
        resp = self.rsv('PUT', '/leases/%s' % lease['id'],
                        {'name': 'renamed', 'end_date': end})
        self.assertEqual(200, resp.status_code, resp.text)
        changed = resp.json()['lease']
        self.assertEqual('renamed', changed['name'])
        self.assertEqual(end.replace(' ', 'T') + ':00.000000',
                         changed['end_date'])
        slots = db_ledger.slots(STORE, res['id'])
        self.assertEqual({changed['end_date'][:16].replace('T', ' ')},
                         {str(s.end_at)[:16] for s in slots})

        resp = self.rsv('DELETE', '/leases/%s' % lease['id'])
        self.assertEqual(204, resp.status_code, resp.text)
        self.assertEqual([], db_ledger.slots(STORE, res['id']))
        self.run_engine()
        self.assertEqual(404, self.rsv('GET', '/leases/%s'
                                       % lease['id']).status_code)


class LeaseChangesTest(base.ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.rsv = self.lease_api()
        resp = self.rsv('POST', '/leases', base.flavor_lease(amount=1))
        self.lease = resp.json()['lease']
        self.rid = self.lease['reservations'][0]['id']
        self.path = '/leases/%s' % self.lease['id']

    def test_move_before_start_and_grow(self):
        # The start asked for, read once: a minute may turn meanwhile.
        start = when(200)[:16]
        resp = self.rsv('PUT', self.path, {'start_date': start,
                                           'end_date': when(260)[:16]})
        self.assertEqual(200, resp.status_code, resp.text)
        events = {e['event_type']: e['time'] for e in
                  resp.json()['lease']['events']}
        self.assertEqual(start, events['start_lease'][:16].replace('T', ' '))
        resp = self.rsv('PUT', self.path, {'reservations': [
            {'id': self.rid, 'amount': 2}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(2, resp.json()['lease']['reservations'][0][
            'amount'])
        self.assertEqual(2, len(db_ledger.slots(STORE, self.rid)))
        # Beyond the cloud: refused, nothing changed.
        resp = self.rsv('PUT', self.path, {'reservations': [
            {'id': self.rid, 'amount': 3}]})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual(2, len(db_ledger.slots(STORE, self.rid)))

    def test_a_refused_extension_says_the_latest_end_that_fits(self):
        # Both nodes: this lease (60 to 120 min) on one, and a later lease
        # (180 to 240 min) on both.
        later = self.rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=180, end=240, name='later'))
        self.assertEqual(201, later.status_code, later.text)
        resp = self.rsv('PUT', self.path, {'end_date': when(200)[:16]})
        self.assertEqual(409, resp.status_code, resp.text)
        latest = later.json()['lease']['start_date'][:19]
        self.assertIn('the latest end that fits is %s UTC'
                      % latest.replace('T', ' '),
                      resp.json()['error_message'])
        self.assertEqual(latest + 'Z', resp.json()['latest_end'])
        # That end is taken.
        resp = self.rsv('PUT', self.path, {'end_date': latest + 'Z'})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(latest, resp.json()['lease']['end_date'][:19])
        # A move that does not fit says no such thing.
        resp = self.rsv('PUT', self.path, {'start_date': when(170)[:16],
                                           'end_date': when(230)[:16]})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertNotIn('latest_end', resp.json())

    def test_concurrent_changes_do_not_lose_each_other(self):
        stale = db_leases.get(STORE, self.lease['id'])
        self.assertEqual(200, self.rsv('PUT', self.path,
                                       {'name': 'first'}).status_code)
        self.assertRaises(exception.LeaseChanged, lease_write.shared().change,
                          stale, stale.version, {'name': 'second'})
        self.assertEqual('first', self.rsv('GET', self.path).json()[
            'lease']['name'])
