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

"""Hostile and careless requests to the boot hook and the lease API, on real
Nova: never a 5xx, and a refused request writes nothing.

One test per class of input that once answered 500 or was accepted
although wrong.
"""

import json

import hypothesis
from hypothesis import strategies as st
import requests

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()

when = base.when
EMOJI = 'l\U0001F600 夜 ñ'
EDGES = ('9999-12-31T23:59:59-01:00', '0001-01-01T00:00:00+01:00')


def nested(depth: int) -> str:
    return '[' * depth + ']' * depth


class HostileTestCase(base.ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.rsv = self.lease_api()

    def store(self) -> tuple:
        """What a request may have written: leases, reservations, slots,
        servers.
        """
        leases = db_leases.get_all(STORE)
        return ([(x.id, x.name, x.start_at, x.end_at, x.status, x.version,
                  x.updated_at) for x in leases],
                [(r.id, r.amount, r.max_count, r.min_count)
                 for x in leases for r in db_leases.reservations(STORE, x.id)],
                [(a.node, a.start_at, a.end_at) for x in leases
                 for r in db_leases.reservations(STORE, x.id)
                 for a in db_ledger.slots(STORE, r.id)],
                sorted(s['id'] for s in self.api.get_servers()))

    def assertRefused(self, status, field, send):
        """`send()` answers `status` naming `field` and writes nothing."""
        before = self.store()
        resp = send()
        self.assertEqual(status, resp.status_code, resp.text)
        body = resp.json()
        message = (body['error_message'] if 'error_message' in body
                   else list(body.values())[0]['message'])
        self.assertTrue(message.startswith(field + ':'), message)
        self.assertEqual(before, self.store())
        return message

    # ------------------------------------------------------- requests

    def boot_raw(self, body, content_type='application/json'):
        """POST /servers with a body as given, text or bytes."""
        return self.api.api_request(
            '/servers', method='POST', check_response_status=False,
            body=body, headers={'Content-Type': content_type})

    def boot_hint(self, lease_params, **server):
        body = {'server': dict(self._build_server(
            name='vm', image_uuid=base.IMAGE, flavor_id=base.ONE_PER_NODE,
            networks='none'), **server),
            'os:scheduler_hints': {'lease_params': lease_params}}
        return self.boot_raw(json.dumps(body))

    def api_raw(self, method, path, data, content_type='application/json'):
        return requests.request(method, self.rsv.base + path, data=data,
                                headers=dict(self.rsv.headers, **{
                                    'Content-Type': content_type}))

    def lease_params(self, **fields) -> dict:
        values = dict(name='l1', start=base.when(60), end=base.when(120))
        values.update(fields)
        return values


class HookTest(HostileTestCase):
    """POST /servers with lease_params."""

    def test_dates_at_the_edge_of_the_calendar(self):
        for edge in EDGES:
            self.assertRefused(400, 'lease_params.start', lambda: (
                self.boot_hint(json.dumps(self.lease_params(start=edge)))))
            self.assertRefused(400, 'lease_params.end', lambda: (
                self.boot_hint(json.dumps(self.lease_params(end=edge)))))

    def test_deep_nesting(self):
        self.assertRefused(400, 'lease_params', lambda: self.boot_hint(
            nested(2000)))
        self.assertRefused(400, 'lease_params', lambda: self.boot_hint(
            json.loads(nested(30))))
        self.assertRefused(400, 'body', lambda: self.boot_raw(
            nested(50000)))
        self.assertRefused(400, 'body', lambda: self.boot_raw(
            '{"server": %s}' % nested(5000)))

    def test_a_list_or_object_where_one_value_goes(self):
        for field, value in (('name', ['x']), ('start', {'a': 1}),
                             ('end', [base.when(120)]), ('on_end', ['delete']),
                             ('before_end', [5])):
            self.assertRefused(400, 'lease_params.' + field, lambda: (
                self.boot_hint(json.dumps(self.lease_params(
                    **{field: value})))))

    def test_a_reservation_hint_that_is_no_id(self):
        for value in (EMOJI, ['x'], {'a': 1}, 'x' * 5000, '\x00'):
            body = {'server': self._build_server(
                name='vm', image_uuid=base.IMAGE,
                flavor_id=base.ONE_PER_NODE, networks='none'),
                'os:scheduler_hints': {'reservation': value}}
            self.assertRefused(400, 'reservation', lambda: self.boot_raw(
                json.dumps(body)))

    def test_names_in_any_language_are_kept_as_given(self):
        resp = self.boot_hint(json.dumps(self.lease_params(name=EMOJI)))
        self.assertEqual(202, resp.status_code, resp.text)
        self.assertEqual(EMOJI, resp.json()['server']['reservation'][
            'lease_name'])
        lease, = db_leases.get_all(STORE)
        self.assertEqual(EMOJI, lease.name)
        shown = self.rsv('GET', '/leases/%s' % lease.id).json()['lease']
        self.assertEqual(EMOJI, shown['name'])

    def test_control_characters(self):
        self.assertRefused(400, 'lease_params.start', lambda: (
            self.boot_hint(json.dumps(self.lease_params(
                start=base.when(60) + '\x00')))))
        self.assertRefused(400, 'lease_params.name', lambda: (
            self.boot_hint(json.dumps(self.lease_params(name='a\x00b')))))

    def test_content_types(self):
        body = json.dumps({'server': self._build_server(
            name='vm', image_uuid=base.IMAGE, flavor_id=base.ONE_PER_NODE,
            networks='none'), 'os:scheduler_hints': {
                'lease_params': json.dumps(self.lease_params())}})
        # Nova refuses these, and the hook leaves them to it.
        for content_type in ('application/xml',
                             'application/x-www-form-urlencoded'):
            before = self.store()
            resp = self.boot_raw(body, content_type)
            self.assertEqual(415, resp.status_code, resp.text)
            self.assertEqual(before, self.store())
        # Nova reads a text/plain body as JSON: so does the hook, and the
        # server is leased, not booted past the ledger.
        resp = self.boot_raw(body, 'text/plain')
        self.assertEqual(202, resp.status_code, resp.text)
        self.assertEqual('RESERVED', resp.json()['server']['reservation'][
            'status'])
        self.assertEqual(1, len(db_leases.get_all(STORE)))

    def test_null_hints(self):
        for hint in ('lease_params', 'reservation', 'reserved'):
            body = {'server': self._build_server(
                name='vm', image_uuid=base.IMAGE,
                flavor_id=base.ONE_PER_NODE, networks='none'),
                'os:scheduler_hints': {hint: None}}
            self.assertRefused(400, hint, lambda: self.boot_raw(
                json.dumps(body)))


class LeaseAPITest(HostileTestCase):
    """The lease API."""

    def setUp(self) -> None:
        super().setUp()
        resp = self.rsv('POST', '/leases', base.flavor_lease())
        self.assertEqual(201, resp.status_code, resp.text)
        self.lease = resp.json()['lease']
        self.path = '/leases/%s' % self.lease['id']
        self.rid = self.lease['reservations'][0]['id']

    def post(self, body):
        return lambda: self.rsv('POST', '/leases', body)

    def put(self, body):
        return lambda: self.rsv('PUT', self.path, body)

    def test_dates_at_the_edge_of_the_calendar(self):
        for edge in EDGES:
            for field in ('start_date', 'end_date'):
                self.assertRefused(400, field, self.post(dict(
                    base.flavor_lease(), **{field: edge})))
                self.assertRefused(400, field, self.put({field: edge}))
            self.assertRefused(400, 'before_end_date', self.put({
                'before_end_date': edge}))

    def test_deep_nesting(self):
        self.assertRefused(400, 'body', lambda: self.api_raw(
            'POST', '/leases', nested(50000)))
        self.assertRefused(413, 'body', lambda: self.api_raw(
            'POST', '/leases', nested(100000)))
        self.assertRefused(400, 'body', lambda: self.api_raw(
            'PUT', self.path, '{"name": %s}' % nested(40)))
        ands = '["and", ' * 1200 + '["=", "$a", 1]' + ']' * 1200
        lease = base.flavor_lease()
        lease['reservations'] = [{'resource_type': 'physical:host',
                                  'min': 1, 'max': 1,
                                  'hypervisor_properties': ands}]
        self.assertRefused(400, 'reservations[0].hypervisor_properties',
                           self.post(lease))

    def test_a_list_or_object_where_one_value_goes(self):
        lease = base.flavor_lease()
        lease['reservations'] = [{'resource_type': ['physical:host'],
                                  'min': 1}]
        self.assertRefused(400, 'reservations[0].resource_type',
                           self.post(lease))
        lease['reservations'] = [{
            'resource_type': 'physical:host', 'min': 1, 'max': 1,
            'hypervisor_properties': '[["x"], "$vcpus", "4"]'}]
        self.assertRefused(400, 'reservations[0].hypervisor_properties',
                           self.post(lease))
        self.assertRefused(400, 'reservations[0].id', self.put({
            'reservations': [{'id': ['x']}]}))
        self.assertRefused(400, 'name', self.put({'name': {'a': 'b'}}))

    def test_names_in_any_language(self):
        resp = self.rsv('POST', '/leases', base.flavor_lease(name=EMOJI))
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual(EMOJI, resp.json()['lease']['name'])
        resp = self.rsv('PUT', self.path, {'name': EMOJI + '2'})
        self.assertEqual(EMOJI + '2', resp.json()['lease']['name'])
        for path in ('/leases/' + EMOJI, '/leases/%F0%9F%98%80',
                     '/leases/' + 'x' * 5000, '/os-hosts/' + EMOJI,
                     '/os-hosts/99999999999999999999'):
            for method in ('GET', 'DELETE'):
                resp = self.rsv(method, path)
                self.assertEqual(404 if 'leases' in path else 403,
                                 resp.status_code, (path, resp.text))
        admin = self.lease_api(roles=('reader', 'member', 'admin'))
        self.assertEqual(404, admin('GET', '/os-hosts/' + EMOJI).status_code)
        self.assertEqual(404, admin(
            'POST', self.path + '/events/99999999999999999999/retry'
        ).status_code)

    def test_wrong_types_in_a_change(self):
        for value in (5, [], {}, None, True):
            self.assertRefused(400, 'start_date', self.put(
                {'start_date': value}))

    def test_bodies_that_are_not_json(self):
        text = json.dumps(base.flavor_lease(name='other'))
        for content_type in ('text/plain', 'application/xml',
                             'application/x-www-form-urlencoded',
                             'multipart/form-data; boundary=x', ''):
            self.assertRefused(415, 'Content-Type', lambda: self.api_raw(
                'POST', '/leases', text, content_type))
            self.assertRefused(415, 'Content-Type', lambda: self.api_raw(
                'PUT', self.path, '{"name": "renamed"}', content_type))
        self.assertRefused(400, 'body', lambda: self.api_raw(
            'POST', '/leases', b'\xff\xfe{'))
        self.assertRefused(413, 'body', lambda: self.api_raw(
            'POST', '/leases', ' ' * 200000))

    def test_accepted_although_wrong(self):
        self.assertRefused(400, 'start_date', self.post(dict(
            base.flavor_lease(), start_date=base.when(60)[:16] + '\x00')))
        self.assertRefused(400, 'reservations', self.put(
            {'reservations': {}}))
        self.assertRefused(400, 'reservations[0].resource_type', self.put(
            {'reservations': [{'id': self.rid,
                               'resource_type': 'physical:host',
                               'min': 1}]}))
        self.assertRefused(400, 'reservations[0].min', self.put(
            {'reservations': [{'id': self.rid, 'min': 1}]}))
        self.assertRefused(400, 'reservations[1].id', self.put(
            {'reservations': [{'id': self.rid, 'amount': 2},
                              {'id': self.rid, 'amount': 3}]}))

    def test_hosts(self):
        admin = self.lease_api(roles=('reader', 'member', 'admin'))
        for body, field in (({'name': ['x']}, 'name'), ({}, 'name'),
                            ({'name': 'n', 'gpu': [1]}, 'gpu'),
                            ({'name': 'n', 'x' * 65: 1}, 'x' * 64),
                            ({'name': 'n', 'vcpus': 1}, 'vcpus')):
            self.assertRefused(400, field, lambda: admin(
                'POST', '/os-hosts', body))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() |
    st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) |
    st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
TEXT = st.text(max_size=40) | st.sampled_from(
    ['now', '2026-12-01 10:00', '9999-12-31T23:59:59-01:00', '\x00',
     EMOJI])


class FuzzTest(HostileTestCase):
    """Random lease_params through the hook of real Nova."""

    @hypothesis.settings(max_examples=60, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.dictionaries(
        st.sampled_from(['name', 'start', 'end', 'on_end', 'before_end',
                         'x']), TEXT | JSON, max_size=5) | JSON,
                      st.booleans())
    def test_lease_params(self, value, as_text):
        before = self.store()
        resp = self.boot_hint(json.dumps(value) if as_text else value)
        self.assertLess(resp.status_code, 500, resp.text)
        if resp.status_code >= 400:
            self.assertEqual(before, self.store())
