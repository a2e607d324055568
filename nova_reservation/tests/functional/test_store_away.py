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

"""The store fails under a request (its database server fails over, or a
write loses to others every time it runs): the lease API and the boot hook
answer a 503 that says to try again, never a 500, and nothing of the lease
is left; the same request succeeds once the store is back.
"""

from oslo_db import exception as db_exception

from devcloud import embedded
from nova_reservation.db import leases as db_leases
from nova_reservation.tests.functional import base

STORE = base.STORE
FAILURES = (db_exception.DBConnectionError('the server went away'),
            db_exception.DBDeadlock('a certification conflict'))


class StoreAwayTest(base.ReservationsTestCase):

    def store_fails(self, error: Exception) -> None:
        """The store's write of a new lease fails with `error`."""
        def failing(*args, **kwargs):
            raise error
        self.patch(db_leases, 'create_many', failing)

    def store_back(self) -> None:
        self.patch(db_leases, 'create_many', self.create_many)

    def setUp(self) -> None:
        super().setUp()
        self.create_many = db_leases.create_many

    def assert_try_again(self, status: int, text: str) -> None:
        self.assertEqual(503, status, text)
        self.assertIn('try again', text)
        self.assertEqual([], db_leases.get_all(STORE))
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))

    def test_the_lease_api(self):
        for error in FAILURES:
            self.store_fails(error)
            resp = self.rsv('POST', '/leases', base.flavor_lease(amount=1))
            self.assert_try_again(resp.status_code, resp.text)
            self.assertEqual('ServiceUnavailable',
                             resp.json()['error_name'])
        self.store_back()
        resp = self.rsv('POST', '/leases', base.flavor_lease(amount=1))
        self.assertEqual(201, resp.status_code, resp.text)

    def test_a_boot_with_lease_params(self):
        body = {'server': {'name': 'vm', 'imageRef': embedded.IMAGE,
                           'flavorRef': embedded.ONE_PER_NODE,
                           'networks': 'none'},
                'os:scheduler_hints': {'lease_params': base.params(
                    base.when(60), base.when(120))}}
        for error in FAILURES:
            self.store_fails(error)
            resp = self.api.api_post('/servers', body,
                                     check_response_status=False)
            self.assert_try_again(resp.status, resp.content.decode())
            self.assertIn('serviceUnavailable', resp.body)
        self.store_back()
        resp = self.api.api_post('/servers', body,
                                 check_response_status=False)
        self.assertEqual(202, resp.status, resp.content)
