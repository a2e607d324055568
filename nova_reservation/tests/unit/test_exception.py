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
"""What goes wrong, and how each entry point answers it: the lease API in
Blazar's shape, the boot hook in Nova's, with the same status for each
kind of error.
"""

import datetime
import json

import testtools

from nova_reservation.api import fault_wrap
from nova_reservation import exception
from nova_reservation.hooks import faults
from nova_reservation import http_status

# The engine's own errors: never an answer to a request.
ENGINE_ONLY = (exception.NovaError, exception.ActionFailed)


def every_error(base=exception.ReservationError) -> list:
    found = []
    for kind in base.__subclasses__():
        found.append(kind)
        found.extend(every_error(kind))
    return found


def made(kind):
    """An instance of `kind` as the code raises it."""
    if issubclass(kind, exception.InvalidParam):
        return kind('reservations[0].amount', 'must be at least 1')
    if kind is exception.OverQuota:
        return kind(Excess())
    return kind('something went wrong')


class Excess:
    def message(self) -> str:
        return 'vcpus: 12 asked, the limit is 8'

    def details(self) -> dict:
        return {'limit': 'vcpus', 'most': 8}


class TranslationTest(testtools.TestCase):

    def test_every_error_of_a_request_is_a_4xx_or_503_in_both_answers(self):
        errors = [k for k in every_error() if not issubclass(k, ENGINE_ONLY)]
        self.assertGreater(len(errors), 20)
        for kind in errors:
            e = made(kind)
            api = fault_wrap.fault(e).response()
            hook = faults.fault_of(e)
            self.assertIn(api.status_int, (400, 403, 404, 409, 503), kind)
            self.assertEqual(api.status_int, hook.status_int, kind)
            body = json.loads(api.body)
            self.assertEqual((api.status_int, e.kind, str(e)), (
                body['error_code'], body['error_name'],
                body['error_message']), kind)
            (name, fault), = json.loads(hook.body).items()
            self.assertEqual((hook.status_int, str(e)),
                             (fault['code'], fault['message']), kind)
            self.assertEqual(faults.FAULT_NAMES[hook.status_int], name)

    def test_the_engine_s_errors_are_no_answer(self):
        for kind in ENGINE_ONLY:
            self.assertEqual(500, http_status.of(kind('x')))

    def test_what_an_answer_carries_besides_the_message(self):
        earliest = datetime.datetime(2026, 12, 24, 10, 0)
        e = exception.NoCapacity('no room on the ledger', earliest,
                                 occurrence=2)
        body = json.loads(fault_wrap.fault(e).response().body)
        self.assertEqual((409, 'NotEnoughCapacity', '2026-12-24T10:00:00Z',
                          2), (body['error_code'], body['error_name'],
                               body['earliest_start'], body['occurrence']))
        fault = json.loads(faults.fault_of(e).body)['conflictingRequest']
        self.assertEqual('2026-12-24T10:00:00Z', fault['earliest_start'])

        e = exception.OverQuota(Excess())
        body = json.loads(fault_wrap.fault(e).response().body)
        self.assertEqual(
            (403, 'QuotaExceeded', 'vcpus', 8, Excess().message()),
            (body['error_code'], body['error_name'], body['limit'],
             body['most'], body['error_message']))

        e = exception.EnforcementRefused('MaxLeaseDurationFilter: too long',
                                         filter='MaxLeaseDurationFilter')
        body = json.loads(fault_wrap.fault(e).response().body)
        self.assertEqual((403, 'EnforcementRefused', 'MaxLeaseDurationFilter'),
                         (body['error_code'], body['error_name'],
                          body['filter']))
        self.assertEqual(
            (503, 'EnforcementUnavailable'),
            (http_status.of(exception.EnforcementUnanswered('x')),
             exception.EnforcementUnanswered.kind))

    def test_a_field_s_error_names_it(self):
        e = exception.InvalidParam('reservations[0].amount', 'is 0')
        self.assertEqual('reservations[0].amount: is 0', str(e))
        self.assertEqual('reservations[0].amount', e.field)
        self.assertIsInstance(e, ValueError)   # as the parsers raise it
        e = exception.AddressUnusable('floating_network_id', 'not external')
        self.assertEqual(('floating_network_id',
                          'floating_network_id: not external', 400),
                         (e.field, str(e), http_status.of(e)))

    def test_an_error_without_a_message_says_what_it_is(self):
        self.assertEqual(
            'the ledger is too busy to place the lease now; try again',
            str(exception.LedgerBusy()))
        self.assertIn('changed', str(exception.LeaseChanged()))
        self.assertIn('shared', str(exception.NotShared()))
        self.assertEqual('given', str(exception.Conflict('given')))
        self.assertEqual('InvalidState', exception.Conflict(
            'x', 'InvalidState').kind)
