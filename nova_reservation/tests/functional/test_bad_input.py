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

"""Every bad boot with a lease is a 400 naming the field, and writes
nothing: no lease, no server."""

import json

import ddt

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class In:
    """A time this many minutes from now, worked out when the test runs
    (test names must not change with the clock).
    """

    def __init__(self, minutes: float) -> None:
        self.minutes = minutes

    def __repr__(self) -> str:
        return 'in_%s_min' % self.minutes


def lease(**fields) -> str:
    values = dict(name='l1', start=In(60), end=In(120))
    values.update(fields)
    return json.dumps({k: base.when(v.minutes) if isinstance(v, In) else v
                       for k, v in values.items() if v is not None})


@ddt.ddt
class BadInputTest(base.ReservationTestCase):

    def _refused(self, resp, status, field):
        self.assertEqual(status, resp.status, resp.content)
        message = list(resp.body.values())[0]['message']
        self.assertTrue(message.startswith(field + ':'), message)
        self.assertEqual([], db_leases.get_all(STORE))
        self.assertEqual([], self.api.get_servers())
        return message

    @ddt.data(
        ('{"name": "l1", ', 'lease_params'),
        ('["l1"]', 'lease_params'),
        (dict(name=None), 'lease_params.name'),
        (dict(end=None), 'lease_params.end'),
        (dict(colour='blue'), 'lease_params.colour'),
        (dict(start='tomorrow'), 'lease_params.start'),
        (dict(start='2026-13-45 25:61'), 'lease_params.start'),
        (dict(end=In(30)), 'lease_params.end'),
        (dict(start=In(60), end=In(60)), 'lease_params.end'),
        (dict(start=In(-10)), 'lease_params.start'),
        (dict(end=In(60 * 24 * 400)), 'lease_params.end'),
        (dict(name=5), 'lease_params.name'),
        (dict(name='x' * 1000), 'lease_params.name'),
        (dict(name='   '), 'lease_params.name'),
        (dict(start=1764583200), 'lease_params.start'),
        (dict(on_end='explode'), 'lease_params.on_end'),
        (dict(before_end='ten'), 'lease_params.before_end'),
        (dict(before_end=10 ** 6), 'lease_params.before_end'),
        ('{"name": "%s"}' % ('l' * 5000), 'lease_params'),
    )
    @ddt.unpack
    def test_bad_lease_params(self, lease_params, field):
        if isinstance(lease_params, dict):
            lease_params = lease(**lease_params)
        self._refused(self.boot(lease_params), 400, field)

    def test_a_start_too_far_ahead_where_the_operator_limits_it(self):
        far = lease(start='9999-01-01 00:00', end='9999-01-02 00:00')
        # No limit by default, as in Blazar; a lease that does not fit
        # then is a 409, at the end of the calendar too.
        resp = self.boot(far, count=3)
        self.assertEqual(409, resp.status, resp.content)
        self.assertIn('no start up to', resp.body['conflictingRequest'][
            'message'])
        self.flags(max_advance=365 * 86400, group='reservation')
        self._refused(self.boot(far), 400, 'lease_params.start')

    def test_reserved_hint_must_be_true(self):
        resp = self.boot(lease(), extra_hints={'reserved': 'maybe'})
        self._refused(resp, 400, 'reserved')

    def test_reserved_hint_needs_lease_params(self):
        resp = self.boot(None, extra_hints={'reserved': 'True'})
        self._refused(resp, 400, 'lease_params')

    def test_reserved_true_with_lease_params_is_the_seed_form(self):
        resp = self.boot(lease(), extra_hints={'reserved': 'True'})
        self.assertEqual(202, resp.status, resp.content)
        self.assertEqual(1, len(db_leases.get_all(STORE)))

    def test_hint_given_twice(self):
        resp = self.boot([lease(), lease()])
        self._refused(resp, 400, 'lease_params')

    def test_lease_params_with_reservation_hint(self):
        resp = self.boot(lease(), extra_hints={'reservation': 'abc'})
        self._refused(resp, 400, 'reservation')

    def test_too_many_servers(self):
        resp = self.boot(lease(), count=1000)
        self._refused(resp, 400, 'min_count')

    def test_unknown_flavor(self):
        resp = self.boot(lease(), flavor='no-such-flavor')
        self._refused(resp, 400, 'flavorRef')


class NovaRefusesTest(base.ReservationTestCase):

    def test_refused_boot_leaves_no_lease(self):
        server = self._build_server(
            name='vm', image_uuid='00000000-0000-0000-0000-000000000000',
            flavor_id=base.ONE_PER_NODE, networks='none')
        body = {'server': server,
                'os:scheduler_hints': {'lease_params': base.params(
                    base.when(60), base.when(120))}}
        resp = self.api.api_post('/servers', body,
                                 check_response_status=False)
        self.assertEqual(400, resp.status, resp.content)
        self.assertIn('image', resp.body['badRequest']['message'])
        self.assertEqual([], db_leases.get_all(STORE))
        # The capacity it held is free again.
        ok = self.boot(base.params(base.when(60), base.when(120)), count=2)
        self.assertEqual(202, ok.status, ok.content)
