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

"""The reason a lease is given for a failed server, which its owner sees:
a server of a project the reservation is shared with is not named."""

import types
import unittest
from unittest import mock

from nova_reservation.engine import actions
from nova_reservation.engine import reasons
from nova_reservation import exception

LEASE = types.SimpleNamespace(project_id='owner', name='l1')
SERVER = {'id': 'server-1', 'fault': {'message': 'No valid host was found'}}


class FailedServerTest(unittest.TestCase):

    def test_the_owner_s_server_is_named_with_its_fault(self):
        for project in (None, 'owner'):
            binding = types.SimpleNamespace(project_id=project)
            self.assertEqual(
                'server server-1 of lease l1 is in ERROR: No valid host was '
                'found', reasons.failed(LEASE, binding, SERVER))

    def test_another_project_s_server_is_not_named(self):
        reason = reasons.failed(LEASE, types.SimpleNamespace(
            project_id='shared'), SERVER)
        self.assertEqual('a server of project shared in lease l1 is in '
                         'ERROR', reason)
        self.assertNotIn('server-1', reason)

    def test_no_slot_left_names_only_the_owner_s_server(self):
        store = types.SimpleNamespace(
            slot_for=lambda *args: None)
        for project, named in (('owner', 'server server-1'),
                               ('shared', 'a server of project shared')):
            binding = types.SimpleNamespace(project_id=project,
                                            reservation_id='r1')
            with mock.patch.object(actions, 'db_ledger', store), \
                    self.assertRaises(exception.ActionFailed) as refused:
                actions._hold_slot(None, LEASE, binding, SERVER, None)
            self.assertEqual('lease l1 has no free slot left for %s'
                             % named, str(refused.exception))
