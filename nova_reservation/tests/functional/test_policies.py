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

"""The os-hosts policy in nova-api: a rule per operation, admins by
default, and an operator's overrides, of one operation's rule or of the
rule that covered them all before.
"""

from nova_reservation import policies
from nova_reservation.tests.functional import base

ADMIN_ROLES = ('reader', 'member', 'admin')


class HostsPolicyTest(base.ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.admin = self.lease_api('admin', roles=ADMIN_ROLES)
        self.member = self.lease_api('member')
        self.users = {
            'member': self.member,
            'reader': self.lease_api('reader', roles=('reader',)),
            'member of another project': self.lease_api(
                'other', 'other-project')}
        resp = self.admin('POST', '/os-hosts', {'name': 'host1'})
        self.assertEqual(201, resp.status_code, resp.text)
        self.host = resp.json()['host']['id']

    def operations(self) -> list:
        """Every os-hosts operation, in an order where each one, allowed,
        succeeds whatever the ones before it did: (rule, method, path,
        body, status when allowed).
        """
        host = '/os-hosts/%s' % self.host
        return [
            (policies.HOSTS_LIST, 'GET', '/os-hosts', None, 200),
            (policies.HOSTS_GET, 'GET', host, None, 200),
            (policies.HOSTS_UPDATE, 'PUT', host, {'gpu': 'yes'}, 200),
            (policies.HOSTS_LIST_ALLOCATIONS, 'GET', '/os-hosts/allocations',
             None, 200),
            (policies.HOSTS_GET_ALLOCATION, 'GET', host + '/allocation',
             None, 200),
            (policies.HOSTS_CREATE, 'POST', '/os-hosts', {'name': 'host2'},
             201),
            (policies.HOSTS_DELETE, 'DELETE', host, None, 204),
        ]

    def assert_allowed(self, user, allowed, who: str = '') -> None:
        """Run every operation as `user`: the rules in `allowed` let it
        through, the others answer 403.
        """
        for rule, method, path, body, status in self.operations():
            resp = user(method, path, body)
            if rule in allowed:
                self.assertEqual(status, resp.status_code,
                                 '%s %s: %s' % (who, rule, resp.text))
            else:
                self.assertEqual(403, resp.status_code,
                                 '%s %s: %s' % (who, rule, resp.text))
                self.assertEqual('PolicyNotAuthorized',
                                 resp.json()['error_name'])
                self.assertIn(rule, resp.json()['error_message'])

    def enrolled(self) -> dict:
        hosts = self.admin('GET', '/os-hosts').json()['hosts']
        return {h['hypervisor_hostname']: h for h in hosts}

    def test_admin_may_do_every_operation(self):
        # The hosts are the cloud's: an admin of any project manages them.
        admin = self.lease_api('other-admin', 'other-project', ADMIN_ROLES)
        self.assert_allowed(admin, {op[0] for op in self.operations()})
        self.assertEqual(['host2'], list(self.enrolled()))

    def test_others_are_refused_every_operation(self):
        before = self.enrolled()
        for who, user in self.users.items():
            self.assert_allowed(user, set(), who)
        self.assertEqual(before, self.enrolled())
        self.assertNotIn('gpu', before['host1'])

    def test_an_override_of_one_rule_changes_only_its_operation(self):
        for rule, *_ in self.operations():
            with self.subTest(rule=rule):
                self.override_policy({rule: 'role:member'})
                self.assert_allowed(self.member, {rule})
                self.assert_allowed(self.users['reader'], set())
        # The override can also take an operation from the admins alone.
        self.override_policy({policies.HOSTS_LIST: '!'})
        self.assertEqual(403, self.admin('GET', '/os-hosts').status_code)
        self.assertEqual(200, self.admin('GET', '/os-hosts/allocations')
                         .status_code)

    def test_an_override_of_the_old_rule_still_applies_to_every_one(self):
        self.override_policy({policies.HOSTS_DEPRECATED.name: 'role:member'})
        self.assert_allowed(self.member, {op[0] for op in self.operations()})
        self.assertEqual(['host2'], list(self.enrolled()))

    def test_an_operation_s_own_override_wins_over_the_old_rule(self):
        self.override_policy({policies.HOSTS_DEPRECATED.name: '!',
                              policies.HOSTS_GET: 'role:admin'})
        self.assert_allowed(self.admin, {policies.HOSTS_GET})
