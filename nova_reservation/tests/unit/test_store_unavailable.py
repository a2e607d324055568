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

"""Which database errors mean "try again": those of a connection that
failed or was cut (a database failover), and deadlocks; not the others.
"""

from oslo_db import exception as db_exception
import pymysql
import sqlalchemy as sa
import testtools

from nova_reservation.db import api as db_api


def _mysql(code: int, message: str,
           kind=pymysql.err.OperationalError) -> sa.exc.DBAPIError:
    return sa.exc.DBAPIError.instance('SELECT 1', {}, kind(code, message),
                                      pymysql.err.Error)


class UnavailableTest(testtools.TestCase):

    def test_connection_cut_while_opened(self):
        # What oslo.db leaves as a plain DBError: the server went away
        # during the handshake (HAProxy, a Galera node killed).
        cut = _mysql(2013, 'Lost connection to MySQL server during query')
        self.assertTrue(db_api.unavailable(db_exception.DBError(cut)))
        self.assertTrue(db_api.unavailable(cut))

    def test_wrapped_again(self):
        # Nova's flavor.create wraps what oslo.db raised in a DBError.
        self.assertTrue(db_api.unavailable(db_exception.DBError(
            db_exception.DBConnectionError(_mysql(
                2003, "Can't connect to MySQL server")))))
        self.assertFalse(db_api.unavailable(db_exception.DBError(
            db_exception.DBError(ValueError('no')))))

    def test_galera_commit_without_its_cluster(self):
        # Seen when a change's held slots were dropped as the writer node
        # was killed: the commit failed, nothing of it was written.
        self.assertTrue(db_api.unavailable(db_exception.DBError(_mysql(
            1180, 'Error while appending streaming replication fragment'
            '(provider status: Not connected to Primary Component)'))))

    def test_galera_node_not_ready(self):
        self.assertTrue(db_api.unavailable(db_exception.DBError(_mysql(
            1047, 'WSREP has not yet prepared node for application use'))))

    def test_invalidated_connection(self):
        error = _mysql(1105, 'unknown')
        error.connection_invalidated = True
        self.assertTrue(db_api.unavailable(db_exception.DBError(error)))

    def test_oslo_db_classes(self):
        self.assertTrue(db_api.unavailable(db_exception.DBConnectionError()))
        self.assertTrue(db_api.unavailable(db_exception.DBDeadlock()))

    def test_other_errors_are_not(self):
        for error in (
                db_exception.DBError(_mysql(
                    1064, 'You have an error in your SQL syntax',
                    pymysql.err.ProgrammingError)),
                db_exception.DBError(ValueError('no')),
                db_exception.DBDuplicateEntry(),
                _mysql(1406, 'Data too long', pymysql.err.DataError),
                ValueError('2013'), KeyError(2013)):
            self.assertFalse(db_api.unavailable(error), error)
