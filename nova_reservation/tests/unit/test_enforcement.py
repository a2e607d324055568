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

"""Usage enforcement: the filters' rules, the bodies built from a lease,
and the reading of an external service's answers (over loopback, against
the stand-in: accepted, refused, garbage, failed, slow, unreachable).
"""

import datetime
import json

import fixtures
from keystoneauth1 import loading as ks_loading
from oslo_config import fixture as config_fixture
import testtools

from devcloud import enforcement as standin
from nova_reservation import capacity
from nova_reservation.db import models
from nova_reservation import enforcement
from nova_reservation.enforcement import body
from nova_reservation.enforcement import external
from nova_reservation.enforcement import filters
from nova_reservation import exception
from nova_reservation import http_status
from nova_reservation.lease.request import ReservationRequest
from nova_reservation.lease import resource_types

T0 = datetime.datetime(2026, 12, 1, 10, 0)
DAY = datetime.timedelta(days=1)
MINE, EXEMPT = 'project-mine', 'project-exempt'


def context(project=MINE) -> dict:
    return body.context('user-1', project, 'http://keystone/v3', 'R1')


def lease_of(days: float) -> dict:
    return {'start_date': T0, 'end_date': T0 + days * DAY,
            'reservations': []}


class Configured(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(
            enforcement.CONF))

    def flags(self, **options) -> None:
        self.conf.config(group='enforcement', **options)


class MaxLeaseDurationTest(Configured):

    def test_limit_exemptions_and_update(self):
        rule = filters.MaxLeaseDurationFilter()
        # -1 (Blazar's default): no limit.
        rule.check_create(context(), lease_of(1000))
        self.flags(max_lease_duration=86400,
                   max_lease_duration_exempt_project_ids=[EXEMPT])
        rule.check_create(context(), lease_of(1))   # exactly the limit
        e = self.assertRaises(exception.EnforcementRefused,
                              rule.check_create, context(), lease_of(1.5))
        self.assertEqual((403, 'EnforcementRefused',
                          {'filter': 'MaxLeaseDurationFilter'}),
                         (http_status.of(e), e.kind, e.details()))
        self.assertIn('129600 seconds', str(e))
        self.assertIn('86400', str(e))
        self.assertTrue(str(e).startswith('MaxLeaseDurationFilter: '))
        rule.check_create(context(EXEMPT), lease_of(30))
        # An update is judged by the lease it leaves, not the current one.
        rule.check_update(context(), lease_of(5), lease_of(1))
        self.assertRaises(exception.EnforcementRefused, rule.check_update,
                          context(), lease_of(1), lease_of(2))
        rule.check_update(context(EXEMPT), lease_of(1), lease_of(2))
        rule.on_end(context(), lease_of(100))   # the end is not judged

    def test_enabled_by_name(self):
        self.assertEqual([], enforcement.enabled())
        self.flags(enabled_filters=['MaxLeaseDurationFilter',
                                    'ExternalServiceFilter'])
        self.assertEqual(['MaxLeaseDurationFilter', 'ExternalServiceFilter'],
                         [type(f).__name__ for f in enforcement.enabled()])
        self.flags(enabled_filters=['MaxLeaseDurationFilter', 'NoSuch'])
        e = self.assertRaises(exception.EnforcementMisconfigured,
                              enforcement.enabled)
        self.assertEqual((503, 'EnforcementUnavailable'),
                         (http_status.of(e), e.kind))
        self.assertNotIn('NoSuch', str(e))   # a user is told no more


class BodiesTest(testtools.TestCase):

    def test_new_lease(self):
        flavor = ReservationRequest(
            resource_type=resource_types.FLAVOR, count=2, flavor_id='f1',
            need=capacity.Resources(1, 512, 1), affinity=False, id='r1')
        hosts = ReservationRequest(
            resource_type=resource_types.HOST, count=3, min_count=1,
            resource_properties='["==", "$az", "a"]', id='r2')
        lease = body.new_lease(
            {'name': 'l1', 'start_at': T0, 'end_at': T0 + DAY,
             'before_end_minutes': 60, 'on_end': 'delete'},
            'user-1', MINE, [flavor, hosts])
        self.assertEqual(
            ('l1', 'user-1', MINE, T0, T0 + DAY, T0 + DAY -
             datetime.timedelta(hours=1)),
            (lease['name'], lease['user_id'], lease['project_id'],
             lease['start_date'], lease['end_date'],
             lease['before_end_date']))
        first, second = lease['reservations']
        self.assertEqual(
            {'id': 'r1', 'resource_type': 'flavor:instance', 'amount': 2,
             'flavor_id': 'f1', 'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1,
             'affinity': False, 'resource_properties': '',
             'allocations': [], 'shared_with': [], 'matching': 'targeted'},
            first)
        self.assertEqual((1, 3, '["==", "$az", "a"]', []),
                         (second['min'], second['max'],
                          second['resource_properties'],
                          second['allocations']))
        # Sent as Blazar sends dates.
        sent = json.loads(json.dumps(lease, default=external._iso))
        self.assertEqual('2026-12-01T10:00:00', sent['start_date'])

    def test_stored_and_changed(self):
        lease = models.Lease(
            id='l', name='old', user_id='u', project_id=MINE, start_at=T0,
            end_at=T0 + DAY, status='PENDING', on_end='delete')
        res = models.Reservation(
            id='r1', lease_id='l', project_id=MINE,
            resource_type=resource_types.FLAVOR, flavor_id='f1', vcpus=1,
            memory_mb=512, disk_gb=1, amount=2, status='pending')
        slots = {'r1': [models.Slot(node='n1', host='h1'),
                        models.Slot(node='n2', host='h2'),
                        models.Slot(node='n1', host='h1')]}
        current = body.stored_lease(lease, [res], slots.get)
        self.assertEqual(
            [{'id': 'n1', 'hypervisor_hostname': 'n1', 'service_name': 'h1',
              'slots': 2},
             {'id': 'n2', 'hypervisor_hostname': 'n2', 'service_name': 'h2',
              'slots': 1}], current['reservations'][0]['allocations'])
        self.assertNotIn('created_at', current['reservations'][0])
        grown = ReservationRequest(resource_type=resource_types.FLAVOR,
                                   count=1, id='r1')
        new = body.changed_lease(
            lease, {'end_at': T0 + 2 * DAY, 'name': 'new'}, [res],
            [(grown, {'amount': 3, 'shared_with': '["p2"]'})], slots.get)
        self.assertEqual(
            ('new', T0 + 2 * DAY, 3, ['p2']),
            (new['name'], new['end_date'], new['reservations'][0]['amount'],
             new['reservations'][0]['shared_with']))
        # The rows are left as they were.
        self.assertEqual(('old', 2, T0 + DAY),
                         (lease.name, res.amount, lease.end_at))
        self.assertEqual(('old', 2), (current['name'],
                                      current['reservations'][0]['amount']))


class AnswersTest(testtools.TestCase):

    def test_reading(self):
        self.assertIsNone(external.reason(204, b''))
        self.assertEqual('too long', external.reason(
            403, b'{"message": " too long "}'))
        for bare in (b'', b'<html/>', b'[1]', b'{"msg": "x"}',
                     b'{"message": 7}', b'{"message": ""}', b'\xff\xfe',
                     b'{"message": null}'):
            self.assertEqual(external.NO_REASON, external.reason(403, bare),
                             bare)
        self.assertEqual(external.MAX_REASON, len(external.reason(
            403, json.dumps({'message': 'x' * 100000}).encode())))
        # Blazar acts on 204 and 403 only (a 200 is not an acceptance).
        for code in (200, 201, 302, 400, 401, 404, 500, 503):
            self.assertRaises(exception.EnforcementUnanswered,
                              external.reason, code, b'{"message": "ok"}')

    def test_endpoints(self):
        # Joined as Blazar joins them (a base without its slash loses its
        # last part).
        self.assertEqual('http://p/v1/check-create', external.endpoint(
            'http://p/v1/', 'check-create', None))
        self.assertEqual('http://p/check-create', external.endpoint(
            'http://p/v1', 'check-create', None))
        self.assertEqual('http://q/x', external.endpoint(
            'http://p/v1/', 'check-create', 'http://q/x'))
        self.assertIsNone(external.endpoint(None, 'on-end', None))
        for bad in ('ftp://p/', 'p/v1', 'http:///v1', 'file:///etc'):
            self.assertRaises(exception.EnforcementMisconfigured,
                              external.check_url, 'opt', bad)
        external.check_url('opt', 'https://p:8443/v1/')


class ExternalServiceTest(Configured):

    def setUp(self) -> None:
        super().setUp()
        self.service = self.useFixture(standin.EnforcementService())
        self.flags(external_service_base_endpoint=self.service.url,
                   external_service_timeout=0.5)
        self.rule = filters.ExternalServiceFilter()

    def refusal(self, *args) -> exception.ReservationError:
        return self.assertRaises(exception.ReservationError,
                                 self.rule.check_create, context(),
                                 lease_of(1), *args)

    def test_answers(self):
        self.rule.check_create(context(), lease_of(1))
        path, token, sent = self.service.received[-1]
        self.assertEqual(('check-create', None), (path, token))
        self.assertEqual(context(), sent['context'])
        self.assertEqual('2026-12-02T10:00:00', sent['lease']['end_date'])

        self.service.answer(standin.refuse('over your budget'))
        e = self.refusal()
        self.assertEqual((403, 'EnforcementRefused',
                          'ExternalServiceFilter: over your budget'),
                         (http_status.of(e), e.kind, str(e)))
        self.service.answer(standin.REFUSED_BARE)
        self.assertEqual(403, http_status.of(self.refusal()))
        # An answer too large is read no further than its first 64 KiB.
        self.service.answer((403, b'{"message": "' + b'x' * 8000000 + b'"}',
                             0))
        self.assertEqual('ExternalServiceFilter: ' + external.NO_REASON,
                         str(self.refusal()))

        for answer, words in ((standin.GARBAGE, 'answered 200'),
                              (standin.FAILED, 'answered 500'),
                              (standin.slow(2), 'within 0.5 s')):
            self.service.answer(answer)
            e = self.refusal()
            self.assertEqual((503, 'EnforcementUnavailable'),
                             (http_status.of(e), e.kind))
            self.assertIn(words, str(e))
            self.assertIn('check-create', str(e))
            self.assertNotIn('internal details', str(e))
        # Told to let leases through then, it does.
        self.flags(external_service_on_failure='accept')
        self.rule.check_create(context(), lease_of(1))
        self.service.answer(standin.refuse('no'))
        # A refusal stands.
        self.assertEqual(403, http_status.of(self.refusal()))

    def test_service_users_token(self):
        # The [reservation] credentials' token where no static one is set.
        self.conf.config(group='reservation', auth_type='admin_token')
        ks_loading.load_auth_from_conf_options(enforcement.CONF,
                                               'reservation')
        self.conf.config(group='reservation', token='service-user-token',
                         endpoint='http://127.0.0.1:9/')
        self.rule.on_end(context(), lease_of(1))
        self.assertEqual('service-user-token',
                         standin.header(self.service.received, 'on-end'))
        self.flags(external_service_token='static')
        self.rule.on_end(context(), lease_of(1))
        self.assertEqual('static',
                         standin.header(self.service.received, 'on-end'))

    def test_endpoints_token_and_unreachable(self):
        self.flags(external_service_token='static-token',
                   external_service_base_endpoint=None,
                   external_service_check_update_endpoint=(
                       self.service.url + 'update-here'))
        # No create endpoint: a create is not asked about.
        self.rule.check_create(context(), lease_of(1))
        self.rule.check_update(context(), lease_of(1), lease_of(2))
        self.rule.on_end(context(), lease_of(1))
        self.assertEqual([('update-here', 'static-token')], [
            (p, t) for p, t, _ in self.service.received])
        sent = self.service.received[0][2]
        self.assertEqual(['context', 'current_lease', 'lease'], sorted(sent))
        self.assertEqual('2026-12-03T10:00:00', sent['lease']['end_date'])

        logged = self.useFixture(fixtures.FakeLogger())
        self.flags(external_service_check_update_endpoint=None)
        e = self.refusal()
        self.assertEqual((503, 'ExternalServiceFilter: it is misconfigured; '
                          'try again later'), (http_status.of(e), str(e)))
        self.assertIn('none of its endpoints', logged.output)
        self.flags(external_service_base_endpoint='ftp://secret.example/')
        e = self.refusal()
        self.assertNotIn('secret', str(e))
        self.assertIn("must be an http(s) URL with a host, not "
                      "'ftp://secret.example/'", logged.output)

        self.flags(external_service_base_endpoint='http://127.0.0.1:%d/' %
                   standin.closed_port())
        e = self.refusal()
        self.assertEqual(503, http_status.of(e))
        self.assertIn('could not be reached', str(e))
        self.flags(external_service_on_failure='accept')
        self.rule.check_create(context(), lease_of(1))
