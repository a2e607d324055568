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

"""The lease API's rules: project scope, one rule per os-hosts operation,
and rule names written once."""

import os
import threading
import time

import fixtures
from nova import context
from oslo_config import cfg
from oslo_policy import policy
import testtools

from nova_reservation import api
from nova_reservation import policies

HANDLERS = os.path.join(os.path.dirname(api.__file__), 'handlers')
HOSTS_RULES = (policies.HOSTS_LIST, policies.HOSTS_GET, policies.HOSTS_CREATE,
               policies.HOSTS_UPDATE, policies.HOSTS_DELETE,
               policies.HOSTS_LIST_ALLOCATIONS, policies.HOSTS_GET_ALLOCATION)


class PoliciesTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        # The defaults alone (an empty policy file), whatever nova.conf the
        # machine has.
        policy_file = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'policy.yaml')
        with open(policy_file, 'w') as f:
            f.write('{}')
        self.config = cfg.ConfigOpts()
        self.config([], default_config_files=[], default_config_dirs=[])
        self.policy_file = policy_file
        enforcer = policy.Enforcer(self.config, policy_file=policy_file)
        enforcer.register_defaults(policies.RULES)
        self.useFixture(fixtures.MockPatchObject(policies, '_ENFORCER',
                                                 enforcer))

    def test_every_rule_is_project_scoped(self):
        self.assertEqual({}, {r.name: r.scope_types for r in policies.RULES
                              if r.scope_types != ['project']})

    def test_a_system_scoped_admin_is_refused(self):
        # is_admin given: Nova's own policy is not what is tested here.
        project = context.RequestContext('admin', 'p1', roles=['admin'],
                                         is_admin=False)
        system = context.RequestContext('admin', None, roles=['admin'],
                                        system_scope='all', is_admin=False)
        for rule in policies.RULES:
            self.assertTrue(policies.authorize(
                project, rule.name, {'project_id': 'p1'}), rule.name)
            self.assertFalse(policies.authorize(
                system, rule.name, {'project_id': 'p1'}), rule.name)

    def test_checks_at_once_wait_for_the_first_enforcer_s_rules(self):
        # Native threads: a request must not see the enforcer that another
        # is still making, before its rules are registered.
        config, policy_file = self.config, self.policy_file

        class SlowEnforcer(policy.Enforcer):
            def __init__(self, conf, **kwargs) -> None:
                super().__init__(config, policy_file=policy_file)

            def register_defaults(self, defaults) -> None:
                time.sleep(0.3)
                super().register_defaults(defaults)

        self.useFixture(fixtures.MockPatchObject(policy, 'Enforcer',
                                                 SlowEnforcer))
        policies.reset()
        ctx = context.RequestContext('admin', 'p1', roles=['admin'],
                                     is_admin=False)
        first = threading.Thread(target=policies.enforcer)
        first.start()
        self.addCleanup(first.join)
        time.sleep(0.1)
        self.assertTrue(policies.authorize(ctx, policies.LEASES_GET,
                                           {'project_id': 'p1'}))
        first.join()
        self.assertIs(policies.enforcer(), policies.enforcer())

    def test_each_os_hosts_operation_has_its_rule(self):
        by_name = {r.name: r for r in policies.RULES}
        operations = [(op['method'], op['path'])
                      for name in HOSTS_RULES
                      for op in by_name[name].operations]
        self.assertEqual(7, len(set(operations)))
        for name in HOSTS_RULES:
            # An override of the rule they replace still applies.
            self.assertEqual(policies.HOSTS_DEPRECATED.name,
                             by_name[name].deprecated_rule.name)
            self.assertEqual(policies.ADMIN, by_name[name].check_str)
        self.assertNotIn(policies.HOSTS_DEPRECATED.name, by_name)

    def test_handlers_name_rules_only_through_the_constants(self):
        for module in os.listdir(HANDLERS):
            if not module.endswith('.py'):
                continue
            with open(os.path.join(HANDLERS, module)) as f:
                text = f.read()
            for rule in policies.RULES:
                self.assertNotIn(repr(rule.name), text, module)
                self.assertNotIn('"%s"' % rule.name, text, module)
