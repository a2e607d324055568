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

"""Recurring leases (``recurrence``): one lease of several occurrences,
every day or week, all placed at creation or none, each with its own
events; a boot's servers hold nothing between two occurrences.
"""

import datetime

from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = base.STORE
WEEK = datetime.timedelta(weeks=1)
DAY = datetime.timedelta(days=1)


def weekly(count=3, amount=1, start=60, end=120, **extra) -> dict:
    return dict(base.flavor_lease(amount=amount, start=start, end=end,
                                  name='weekly'),
                recurrence=dict(every='week', count=count), **extra)


class RecurringLeaseTest(base.ReservationsTestCase):

    def create(self, body, code=201):
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(code, resp.status_code, resp.text)
        return resp.json()

    def test_every_occurrence_is_placed_with_its_own_events(self):
        lease = self.create(weekly())['lease']
        occurrences = lease['occurrences']
        self.assertEqual([0, 1, 2], [o['occurrence'] for o in occurrences])
        self.assertEqual((lease['id'], lease['id']),
                         (lease['series_id'], occurrences[0]['id']))
        rows = [db_leases.get(STORE, o['id']) for o in occurrences]
        for number, row in enumerate(rows):
            self.assertEqual((rows[0].start_at + number * WEEK,
                              rows[0].end_at + number * WEEK, 'PENDING'),
                             (row.start_at, row.end_at, row.status))
            shown = self.rsv('GET', '/leases/%s' % row.id).json()['lease']
            self.assertEqual(
                [('start_lease', row.start_at), ('end_lease', row.end_at)],
                [(e['event_type'], datetime.datetime.strptime(
                    e['time'], '%Y-%m-%dT%H:%M:%S.%f'))
                 for e in shown['events']
                 if e['event_type'] in ('start_lease', 'end_lease')])
            slots = db_ledger.slots(STORE, shown['reservations'][0]['id'])
            self.assertEqual([(row.start_at, row.end_at)],
                             [(s.start_at, s.end_at) for s in slots])
        # Listed once, with its occurrences.
        listed = self.rsv('GET', '/leases').json()['leases']
        self.assertEqual([(lease['id'], 3)],
                         [(x['id'], len(x['occurrences'])) for x in listed])

    def test_each_occurrence_of_a_capacity_lease_starts_and_ends(self):
        lease = self.create(dict(
            base.flavor_lease(start=0, end=30, name='daily'),
            recurrence=dict(every='day', count=2)))['lease']
        first, second = [db_leases.get(STORE, o['id'])
                         for o in lease['occurrences']]
        self.run_engine()
        self.assertEqual('ACTIVE', db_leases.get(STORE, first.id).status)
        # A server booted into the first occurrence ends with it.
        rid = lease['reservations'][0]['id']
        resp = self.boot_into(rid)
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.node_of(uuid)
        self.run_engine(at=epoch.to_epoch(first.end_at) + 1)
        self.wait_gone(uuid)
        self.assertEqual(('TERMINATED', 'PENDING'), (
            db_leases.get(STORE, first.id).status,
            db_leases.get(STORE, second.id).status))
        # The next one starts on its own, whatever the first held.
        self.run_engine(at=epoch.to_epoch(second.start_at) + 1)
        self.assertEqual('ACTIVE', db_leases.get(STORE, second.id).status)

    def test_one_occurrence_that_does_not_fit_refuses_the_series(self):
        # Both nodes are taken in the second week.
        start = db_api.utcnow() + WEEK
        full = self.create(dict(
            base.flavor_lease(amount=2, name='full'),
            start_date=(start + datetime.timedelta(minutes=30)).strftime(
                '%Y-%m-%d %H:%M'),
            end_date=(start + datetime.timedelta(minutes=150)).strftime(
                '%Y-%m-%d %H:%M')))['lease']
        flavors = self.admin_api.api_get('/flavors?is_public=None').body
        refused = self.create(weekly(), code=409)
        self.assertEqual(2, refused['occurrence'], refused)
        self.assertTrue(refused['error_message'].startswith(
            'occurrence 2 (from '), refused)
        self.assertIn('Not enough capacity', refused['error_message'])
        self.assertIn('earliest_start', refused)
        # Nothing of it is left: no occurrence, no private flavor.
        self.assertEqual([full['id']], [x.id for x in self.leases()])
        self.assertEqual(flavors, self.admin_api.api_get(
            '/flavors?is_public=None').body)

    def test_a_change_of_one_occurrence_leaves_the_others(self):
        lease = self.create(weekly())['lease']
        second = lease['occurrences'][1]['id']
        before = {o['id']: db_leases.get(STORE, o['id'])
                  for o in lease['occurrences']}
        new_end = before[second].end_at + datetime.timedelta(minutes=30)
        resp = self.rsv('PUT', '/leases/%s' % second,
                        {'end_date': new_end.strftime('%Y-%m-%d %H:%M')})
        self.assertEqual(200, resp.status_code, resp.text)
        for lease_id, row in before.items():
            now = db_leases.get(STORE, lease_id)
            self.assertEqual(new_end if lease_id == second else row.end_at,
                             now.end_at)
            self.assertEqual(row.start_at, now.start_at)

    def test_delete_the_series_or_one_occurrence(self):
        lease = self.create(weekly())['lease']
        ids = [o['id'] for o in lease['occurrences']]
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s' % ids[2])
                         .status_code)
        self.run_engine()
        self.assertEqual(['PENDING', 'PENDING', 'DELETED'],
                         [db_leases.get(STORE, i).status for i in ids])
        shown = self.rsv('GET', '/leases/%s' % ids[0]).json()['lease']
        self.assertEqual(ids[:2], [o['id'] for o in shown['occurrences']])
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s' % ids[0])
                         .status_code)
        self.run_engine()
        self.assertEqual(['DELETED'] * 3,
                         [db_leases.get(STORE, i).status for i in ids])
        for i in ids:
            reservation = db_leases.reservations(STORE, i)
            self.assertEqual([], db_ledger.slots(STORE, reservation[0].id)
                             if reservation else [])

    def test_bad_recurrences_are_400s_that_name_the_field(self):
        for recurrence, extra, field in (
                (dict(every='month', count=2), {}, 'recurrence.every'),
                (dict(every='week'), {}, 'recurrence'),
                (dict(every='week', count=2, until=base.when(20000)), {},
                 'recurrence'),
                (dict(every='week', count=0), {}, 'recurrence.count'),
                (dict(every='week', count=101), {}, 'recurrence.count'),
                (dict(every='week', count='2'), {}, 'recurrence.count'),
                (dict(every='week', until='soon'), {}, 'recurrence.until'),
                (dict(every='week', until=base.when(10)), {},
                 'recurrence.until'),
                (dict(every='day', count=2), dict(end=60 * 25),
                 'recurrence.every'),
                (dict(every='week', count=2, often=True), {},
                 'recurrence.often'),
                (dict(every='week', count=2), dict(if_busy='wait'),
                 'recurrence'),
                (dict(every='week', count=2), dict(on_end='extend_if_free'),
                 'recurrence')):
            end = extra.pop('end', 120)
            body = dict(base.flavor_lease(end=end), recurrence=recurrence,
                        **extra)
            resp = self.rsv('POST', '/leases', body)
            self.assertEqual(400, resp.status_code, (recurrence, resp.text))
            self.assertTrue(resp.json()['error_message'].startswith(field),
                            (recurrence, resp.text))
            resp = self.boot(base.params(base.when(60), base.when(end),
                                         recurrence=recurrence, **extra))
            self.assertEqual(400, resp.status, (recurrence, resp.content))
            self.assertIn('lease_params.' + field,
                          resp.body['badRequest']['message'])
        self.assertEqual([], self.leases())


class RecurringServerLeaseTest(base.ReservationsTestCase):
    """A boot's recurring lease: its servers run in each occurrence and
    are shelved and offloaded (holding nothing) between them.
    """

    def test_a_boot_whose_second_week_is_full_is_a_409_naming_it(self):
        start = db_api.utcnow() + WEEK
        full = self.rsv('POST', '/leases', dict(
            base.flavor_lease(amount=2, name='full'),
            start_date=(start + datetime.timedelta(minutes=30)).strftime(
                '%Y-%m-%d %H:%M'),
            end_date=(start + datetime.timedelta(minutes=150)).strftime(
                '%Y-%m-%d %H:%M')))
        self.assertEqual(201, full.status_code, full.text)
        resp = self.boot(base.params(base.when(60), base.when(120),
                                     recurrence=dict(every='week',
                                                     count=3)))
        self.assertEqual(409, resp.status, resp.content)
        fault = resp.body['conflictingRequest']
        self.assertTrue(fault['message'].startswith('occurrence 2 (from '),
                        fault)
        self.assertEqual(2, fault['occurrence'])
        self.assertEqual([full.json()['lease']['id']],
                         [x.id for x in self.leases()])
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))

    def test_servers_run_in_each_occurrence_only(self):
        resp = self.boot(base.params('now', base.when(30), recurrence=dict(
            every='day', count=2)))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        first = db_leases.get(STORE, resp.body['server']['reservation'][
            'lease_id'])
        second = db_leases.occurrence(STORE, first, later=True)
        self.assertEqual((first.id, 1, first.start_at + DAY, 'PENDING'),
                         (second.series_id, second.occurrence,
                          second.start_at, second.status))
        self.node_of(uuid)
        self.run_engine()
        # The first occurrence ends: the server holds nothing till the next.
        self.run_engine(at=epoch.to_epoch(first.end_at) + 1)
        server = self._wait_for_server_parameter(
            self.admin_api.get_server(uuid),
            {'OS-EXT-STS:vm_state': 'shelved_offloaded'})
        self.assertIsNone(server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        # Shown reserved, for the next occurrence.
        self.assertEqual(('RESERVED', second.id),
                         (server['status'],
                          server['reservation']['lease_id']))
        self.assertEqual({}, self.placement.get(
            '/allocations/%s' % uuid).body['allocations'])
        self.assertEqual('TERMINATED', db_leases.get(STORE, first.id).status)
        binding = db_bindings.of_servers(STORE, [uuid])[0]
        self.assertEqual((second.id, 'RESERVED'),
                         (binding.lease_id, binding.state))
        self.assertEqual([uuid], [s.instance_uuid for s in db_ledger.slots(
            STORE, binding.reservation_id)])
        # The second starts: the server runs again on its slot's node.
        self.run_engine(at=epoch.to_epoch(second.start_at) + 1)
        node = self.node_of(uuid)
        self.assertEqual([(node, uuid)], [
            (s.node, s.instance_uuid)
            for s in db_ledger.slots(STORE, binding.reservation_id)])
        self.assertEqual('ACTIVE', db_leases.get(STORE, second.id).status)
        # The last occurrence's end is the lease's on_end (delete).
        self.run_engine(at=epoch.to_epoch(second.end_at) + 1)
        self.wait_gone(uuid)
        self.assertEqual('TERMINATED',
                         db_leases.get(STORE, second.id).status)
