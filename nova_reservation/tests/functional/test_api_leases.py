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

"""The lease API (Blazar v1 shapes) in nova-api."""

import requests

from nova_reservation.api.handlers import leases
from nova_reservation.db import api as db_api
from nova_reservation.tests.functional import base

when = base.when


def flavor_lease(amount=1, start=60, end=120, name='cap'):
    return {'name': name, 'start_date': when(start)[:16],
            'end_date': when(end)[:16], 'events': [],
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': base.ONE_PER_NODE,
                              'amount': amount, 'affinity': 'None'}]}


class LeaseAPITest(base.ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.rsv = self.lease_api()

    def test_create_list_show_update_delete(self):
        resp = self.rsv('POST', '/leases', flavor_lease(amount=2))
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

        resp = self.rsv('PUT', '/leases/%s' % lease['id'],
                        {'name': 'renamed', 'end_date': when(150)[:16]})
        self.assertEqual(200, resp.status_code, resp.text)
        changed = resp.json()['lease']
        self.assertEqual('renamed', changed['name'])
        self.assertEqual(when(150)[:16].replace(' ', 'T') + ':00.000000',
                         changed['end_date'])
        slots = db_api.allocations_of(res['id'])
        self.assertEqual({changed['end_date'][:16].replace('T', ' ')},
                         {str(s.end_at)[:16] for s in slots})

        resp = self.rsv('DELETE', '/leases/%s' % lease['id'])
        self.assertEqual(204, resp.status_code, resp.text)
        self.assertEqual([], db_api.allocations_of(res['id']))
        self.run_engine()
        self.assertEqual(404, self.rsv('GET', '/leases/%s'
                                       % lease['id']).status_code)

    def test_server_leases_are_listed_and_deleted_like_the_others(self):
        resp = self.boot(base.params(when(60), when(120)))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.run_engine()
        leases = self.rsv('GET', '/leases').json()['leases']
        self.assertEqual(['l1'], [x['name'] for x in leases])
        res = leases[0]['reservations'][0]
        self.assertEqual(('server', [uuid]), (res['resource_type'],
                                              res['servers']))
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % leases[0]['id']).status_code)
        self.run_engine()
        self.wait_gone(uuid)
        self.assertEqual([], self.rsv('GET', '/leases').json()['leases'])

    def test_no_capacity_is_a_409_with_the_earliest_start(self):
        self.assertEqual(201, self.rsv('POST', '/leases',
                                       flavor_lease(amount=2)).status_code)
        resp = self.rsv('POST', '/leases', flavor_lease(start=90, end=150))
        self.assertEqual(409, resp.status_code, resp.text)
        body = resp.json()
        self.assertEqual(409, body['error_code'])
        self.assertIn('earliest start that fits', body['error_message'])
        self.assertIn('earliest_start', body)

    def test_change_that_does_not_fit_leaves_the_lease_as_it_was(self):
        first = self.rsv('POST', '/leases', flavor_lease(amount=2)).json()
        self.rsv('POST', '/leases', flavor_lease(amount=2, start=130,
                                                 end=200))
        before = self.rsv('GET', '/leases/%s' % first['lease']['id']).json()
        resp = self.rsv('PUT', '/leases/%s' % first['lease']['id'],
                        {'end_date': when(150)[:16]})
        self.assertEqual(409, resp.status_code, resp.text)
        after = self.rsv('GET', '/leases/%s' % first['lease']['id']).json()
        self.assertEqual(before, after)
        self.assertEqual('PENDING', after['lease']['status'])

    def test_other_project_and_roles(self):
        lease = self.rsv('POST', '/leases', flavor_lease()).json()['lease']
        other = self.lease_api('other', 'other-project')
        path = '/leases/%s' % lease['id']
        for method, body in (('GET', None), ('PUT', {'name': 'x'}),
                             ('DELETE', None)):
            resp = other(method, path, body)
            self.assertEqual(403, resp.status_code, resp.text)
            self.assertEqual('PolicyNotAuthorized',
                             resp.json()['error_name'])
        self.assertEqual([], other('GET', '/leases').json()['leases'])
        reader = self.lease_api('reader', roles=('reader',))
        self.assertEqual(200, reader('GET', path).status_code)
        self.assertEqual(403, reader('PUT', path, {'name': 'x'}).status_code)
        self.assertEqual(403, reader('POST', '/leases',
                                     flavor_lease()).status_code)
        admin = self.lease_api('admin', roles=('reader', 'member', 'admin'))
        self.assertEqual(200, admin('GET', path).status_code)
        self.assertEqual(403, self.rsv('GET', '/os-hosts').status_code)


class LeaseChangesTest(base.ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.rsv = self.lease_api()
        resp = self.rsv('POST', '/leases', flavor_lease(amount=1))
        self.lease = resp.json()['lease']
        self.rid = self.lease['reservations'][0]['id']
        self.path = '/leases/%s' % self.lease['id']

    def test_move_before_start_and_grow(self):
        resp = self.rsv('PUT', self.path, {'start_date': when(200)[:16],
                                           'end_date': when(260)[:16]})
        self.assertEqual(200, resp.status_code, resp.text)
        events = {e['event_type']: e['time'] for e in
                  resp.json()['lease']['events']}
        self.assertEqual(when(200)[:16], events['start_lease'][:16].replace(
            'T', ' '))
        resp = self.rsv('PUT', self.path, {'reservations': [
            {'id': self.rid, 'amount': 2}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(2, resp.json()['lease']['reservations'][0][
            'amount'])
        self.assertEqual(2, len(db_api.allocations_of(self.rid)))
        # Beyond the cloud: refused, nothing changed.
        resp = self.rsv('PUT', self.path, {'reservations': [
            {'id': self.rid, 'amount': 3}]})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual(2, len(db_api.allocations_of(self.rid)))

    def test_concurrent_changes_do_not_lose_each_other(self):
        stale = db_api.get_lease(self.lease['id'])
        self.assertEqual(200, self.rsv('PUT', self.path,
                                       {'name': 'first'}).status_code)
        self.assertRaises(db_api.LeaseChanged, leases._planner().change,
                          stale, stale.version, {'name': 'second'})
        self.assertEqual('first', self.rsv('GET', self.path).json()[
            'lease']['name'])

    def test_bad_changes(self):
        for body, field in (({'colour': 'red'}, 'colour'),
                            ({'end_date': 'soon'}, 'end_date'),
                            ({'end_date': when(-5)[:16]}, 'end_date'),
                            ({'reservations': [{'id': 'nope'}]},
                             'reservations[0].id'),
                            ({'reservations': [{'id': self.rid,
                                                'amount': 0}]},
                             'reservations[0].amount'),
                            ({'reservations': [{'id': self.rid,
                                                'flavor_id': '1'}]},
                             'reservations[0].flavor_id'),
                            ({}, 'lease')):
            resp = self.rsv('PUT', self.path, body)
            self.assertEqual(400, resp.status_code, (body, resp.text))
            self.assertTrue(resp.json()['error_message'].startswith(
                field + ':'), (body, resp.text))
        self.assertEqual(self.lease['end_date'], self.rsv(
            'GET', self.path).json()['lease']['end_date'])


def bad(**changes):
    body = flavor_lease()
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def bad_reservation(**changes):
    res = dict(flavor_lease()['reservations'][0])
    res.update(changes)
    return bad(reservations=[{k: v for k, v in res.items()
                              if v is not None}])


class LeaseValidationTest(base.ReservationTestCase):

    def test_every_bad_body_is_a_400_naming_the_field(self):
        rsv = self.lease_api()
        host = {'resource_type': 'physical:host', 'min': 1, 'max': 1}
        cases = [
            (bad(name=None), 'name'),
            (bad(name=''), 'name'),
            (bad(start_date='someday'), 'start_date'),
            (bad(start_date='2020-01-01 00:00'), 'start_date'),
            (bad(end_date=None), 'end_date'),
            (bad(end_date=when(30)[:16]), 'end_date'),
            (bad(reservations=[]), 'reservations'),
            (bad(reservations='x'), 'reservations'),
            (bad(events=[{'event_type': 'x'}]), 'events'),
            (bad(colour='red'), 'colour'),
            (bad_reservation(resource_type='virtual:floatingip'),
             'reservations[0].resource_type'),
            (bad_reservation(amount=None), 'reservations[0].amount'),
            (bad_reservation(amount='many'), 'reservations[0].amount'),
            (bad_reservation(amount=-1), 'reservations[0].amount'),
            (bad_reservation(flavor_id='nope'), 'reservations[0].flavor_id'),
            (bad_reservation(affinity='maybe'), 'reservations[0].affinity'),
            (bad(reservations=[dict(host, min=2, max=1)]),
             'reservations[0].min'),
            (bad(reservations=[dict(host, hypervisor_properties='[">="')]),
             'reservations[0].hypervisor_properties'),
            (bad(reservations=[dict(host, resource_properties='["~", 1]')]),
             'reservations[0].resource_properties'),
            (bad(reservations=[{'resource_type': 'virtual:instance',
                                'vcpus': 0, 'memory_mb': 1, 'amount': 1}]),
             'reservations[0].vcpus'),
        ]
        for body, field in cases:
            resp = rsv('POST', '/leases', body)
            self.assertEqual(400, resp.status_code, (field, resp.text))
            self.assertTrue(resp.json()['error_message'].startswith(
                field + ':'), (field, resp.text))
        self.assertEqual([], db_api.list_leases())
        not_json = requests_post(rsv, '/leases', b'{not json')
        self.assertEqual(400, not_json.status_code)
        self.assertEqual(404, rsv('GET', '/nothing').status_code)

    def test_a_405_lists_the_methods_allowed_on_the_path(self):
        rsv, admin = self.lease_api(), self.lease_api(
            'admin', roles=('reader', 'member', 'admin'))
        lease = rsv('POST', '/leases', flavor_lease()).json()['lease']
        cases = [
            (rsv, 'PATCH', '/leases', 'GET, POST'),
            (rsv, 'DELETE', '/leases/', 'GET, POST'),
            (rsv, 'POST', '/leases/%s' % lease['id'], 'DELETE, GET, PUT'),
            (rsv, 'GET', '/leases/%s/events/1/retry' % lease['id'], 'POST'),
            (admin, 'DELETE', '/os-hosts', 'GET, POST'),
            (admin, 'PATCH', '/os-hosts/1', 'DELETE, GET, PUT'),
            (admin, 'PUT', '/os-hosts/1/allocation', 'GET'),
            (rsv, 'POST', '/openapi.json', 'GET'),
        ]
        for client, method, path, allow in cases:
            resp = client(method, path)
            self.assertEqual(405, resp.status_code, (method, path))
            self.assertEqual('MethodNotAllowed', resp.json()['error_name'])
            self.assertEqual(allow, resp.headers.get('Allow'),
                             (method, path))
            # Each method it lists is one the path takes.
            for listed in allow.split(', '):
                self.assertNotEqual(405, client(listed, path).status_code,
                                    (listed, path))


def requests_post(client, path, data):
    return requests.post(client.base + path, data=data, headers=dict(
        client.headers, **{'Content-Type': 'application/json'}))
