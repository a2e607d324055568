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

"""Nova's 500 for a request that met its database failing over (its
fault names the oslo.db error) is a 503 that says to try again; any other
500 of Nova's is left as it is.
"""

import testtools
import webob

from nova_reservation.hooks import faults
from nova_reservation.hooks import middleware


def _nova_fault(error_class: str) -> webob.Response:
    # Nova's FaultWrapper: an unexpected error is a computeFault that
    # names its class.
    return faults.fault(500, 'Unexpected API Error. Please contact the '
                        'administrator\n<class \'%s\'>' % error_class)


class DatabaseFaultTest(testtools.TestCase):

    def test_connection_cut_and_deadlock(self):
        for name in ('DBConnectionError', 'DBDeadlock'):
            self.assertTrue(middleware.database_fault(
                _nova_fault('oslo_db.exception.' + name)), name)
        self.assertIn('try again', middleware.DATABASE_FAULT_MESSAGE)

    def test_other_errors_are_not(self):
        for resp in (_nova_fault('oslo_db.exception.DBDuplicateEntry'),
                     _nova_fault('KeyError'),
                     webob.Response(status=500, body=b'not json')):
            self.assertFalse(middleware.database_fault(resp))
