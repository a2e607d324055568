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

"""Idempotent creation: a create retried with its client token gives the
lease (and, for a boot, the servers) the first made, through the lease API
and through the boot hint.
"""

import json
import threading

import fixtures

from nova_reservation.lease import write
from nova_reservation.tests.functional import base


class LeaseAPITokenTest(base.ReservationsTestCase):

    def body(self, token='retry-1', amount=1, name='tok'):
        body = base.flavor_lease(amount, name=name)
        if token is not None:
            body['client_token'] = token
        return body

    def lease_ids(self, api=None) -> list:
        return sorted(x['id'] for x in (api or self.rsv)(
            'GET', '/leases').json()['leases'])

    def test_a_retried_create_gives_the_same_lease(self):
        body = self.body()
        first = self.rsv('POST', '/leases', body)
        self.assertEqual(201, first.status_code, first.text)
        again = self.rsv('POST', '/leases', body)
        self.assertEqual(201, again.status_code, again.text)
        self.assertEqual(first.json()['lease']['id'],
                         again.json()['lease']['id'])
        self.assertEqual([first.json()['lease']['id']], self.lease_ids())
        # Without a token, a create is a create.
        plain = self.rsv('POST', '/leases', self.body(token=None))
        self.assertEqual(201, plain.status_code, plain.text)
        self.assertEqual(2, len(self.lease_ids()))

    def test_the_token_with_another_request_is_a_409(self):
        first = self.rsv('POST', '/leases', self.body())
        other = self.rsv('POST', '/leases', self.body(amount=2))
        self.assertEqual(409, other.status_code, other.text)
        self.assertTrue(other.json()['error_message'].startswith(
            'client_token:'), other.text)
        self.assertIn(first.json()['lease']['id'],
                      other.json()['error_message'])
        self.assertEqual(1, len(self.lease_ids()))

    def test_a_token_is_the_project_s_own(self):
        other = self.lease_api('other', 'other-project')
        mine = self.rsv('POST', '/leases', self.body())
        theirs = other('POST', '/leases', self.body())
        self.assertEqual(201, theirs.status_code, theirs.text)
        self.assertNotEqual(mine.json()['lease']['id'],
                            theirs.json()['lease']['id'])

    def test_bad_tokens_are_400s_that_name_it(self):
        for token in ('', 'x' * 65, 7, None, ['a'], {'a': 1}, 'a\x00b',
                      'tab\there'):
            body = self.body()
            body['client_token'] = token
            resp = self.rsv('POST', '/leases', body)
            self.assertEqual(400, resp.status_code, (token, resp.text))
            self.assertTrue(resp.json()['error_message'].startswith(
                'client_token'), resp.text)
        self.assertEqual([], self.lease_ids())

    def test_a_create_whose_slots_another_read_back_counts_them_once(self):
        # Concurrent creates share the process's copy of the ledger: one
        # (here, the same) refreshes it between this one's write and its
        # check for boots made meanwhile, and reads the new slots back.
        check = write.Writer.settled

        def refreshed_first(writer, written, undo):
            writer.ledger.refresh()
            return check(writer, written, undo)
        self.useFixture(fixtures.MonkeyPatch(
            'nova_reservation.lease.write.Writer.settled', refreshed_first))
        # Both nodes' last room.
        resp = self.rsv('POST', '/leases', self.body(amount=2))
        self.assertEqual(201, resp.status_code, resp.text)
        self.assertEqual([resp.json()['lease']['id']], self.lease_ids())

    def test_creates_at_once_with_one_token_make_one_lease(self):
        body = self.body()
        answers = []

        def create() -> None:
            answers.append(self.rsv('POST', '/leases', body))
        threads = [threading.Thread(target=create) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        made = {a.json()['lease']['id'] for a in answers
                if a.status_code == 201}
        self.assertEqual(1, len(made), [a.text for a in answers])
        # A create that met the first under way is told to try again.
        for a in answers:
            self.assertIn(a.status_code, (201, 409), a.text)
            if a.status_code == 409:
                self.assertIn('try again', a.json()['error_message'])
        self.assertEqual(sorted(made), self.lease_ids())


class BootTokenTest(base.ReservationTestCase):

    def lease_params(self, **extra) -> str:
        return base.params(self.start, self.end, client_token='boot-1',
                           **extra)

    def setUp(self) -> None:
        super().setUp()
        self.start, self.end = base.when(60), base.when(120)

    def test_a_retried_boot_gives_the_same_servers(self):
        first = self.boot(self.lease_params())
        self.assertEqual(202, first.status, first.content)
        again = self.boot(self.lease_params())
        self.assertEqual(202, again.status, again.content)
        self.assertEqual(first.body['server']['id'],
                         again.body['server']['id'])
        self.assertEqual(first.body['server']['reservation']['lease_id'],
                         again.body['server']['reservation']['lease_id'])
        self.assertEqual(1, len(self.admin_api.get_servers(
            search_opts={'all_tenants': 1})))
        self.assertEqual(1, len(self.leases()))

    def test_a_retried_boot_is_answered_though_its_group_is_gone(self):
        group = self.api.post_server_groups(
            {'name': 'g', 'policy': 'anti-affinity'})
        hints = {'group': group['id']}
        first = self.boot(self.lease_params(), extra_hints=hints)
        self.assertEqual(202, first.status, first.content)
        self.admin_api.api_delete('/os-server-groups/%s' % group['id'])
        again = self.boot(self.lease_params(), extra_hints=hints)
        self.assertEqual(202, again.status, again.content)
        self.assertEqual(first.body['server']['id'],
                         again.body['server']['id'])
        self.assertEqual(1, len(self.leases()))

    def test_the_token_with_another_boot_is_a_409(self):
        self.assertEqual(202, self.boot(self.lease_params()).status)
        other = self.boot(self.lease_params(on_end='shelve'))
        self.assertEqual(409, other.status, other.content)
        self.assertIn('client_token', json.dumps(other.body))
        self.assertEqual(1, len(self.leases()))

    def test_a_bad_token_is_a_400_that_names_it(self):
        resp = self.boot(base.params(self.start, self.end,
                                     client_token='x' * 65))
        self.assertEqual(400, resp.status, resp.content)
        self.assertIn('lease_params.client_token',
                      resp.body['badRequest']['message'])
        self.assertEqual([], self.leases())
