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

"""What the functional harness builds once per process: Nova's policy
enforcer, reused only where a new one would read the same rules.
"""

import json
import os

import fixtures
import nova.policy
from nova import test

from devcloud import reuse

RULE = 'os_compute_api:os-migrate-server:migrate_live'


class PolicyReuseTest(test.NoDBTestCase):

    def setUp(self):
        super().setUp()
        self.policies = reuse.Policies()
        nova.policy.reset()
        self.addCleanup(nova.policy.reset)

    def enforcer(self):
        """The enforcer a cloud gets now, as the harness makes it."""
        nova.policy.reset()
        self.policies.init()
        return nova.policy._ENFORCER

    def policy_file(self, rules: dict) -> str:
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'policy.yaml')
        with open(path, 'w') as f:
            json.dump(rules, f)
        self.flags(policy_file=path, group='oslo_policy')
        return path

    def rule(self, enforcer) -> str:
        enforcer.load_rules()
        return str(enforcer.rules[RULE])

    def test_a_copy_for_the_same_options(self):
        self.policy_file({RULE: '!'})
        first = self.enforcer()
        again = self.enforcer()
        self.assertIsNot(first, again)
        self.assertEqual('!', self.rule(again))

    def test_a_policy_file_gone_is_not_read_by_the_next(self):
        # Older oslo.policy fails on a known path whose file is gone; a new
        # enforcer would look for the file and go on with the defaults.
        path = self.policy_file({RULE: '!'})
        self.assertEqual('!', self.rule(self.enforcer()))
        os.remove(path)
        self.assertNotEqual('!', self.rule(self.enforcer()))

    def test_a_changed_policy_file_is_read_again(self):
        path = self.policy_file({RULE: '!'})
        self.assertEqual('!', self.rule(self.enforcer()))
        first = os.path.getmtime(path)
        with open(path, 'w') as f:
            json.dump({RULE: '@'}, f)
        os.utime(path, (1, os.path.getmtime(path) + 10))
        self.assertEqual('@', self.rule(self.enforcer()))
        # The copy that read it changed none of what the others remember.
        made = self.policies._made[0][2]
        self.assertEqual('!', str(made.rules[RULE]))
        self.assertEqual(first, made._file_cache[path]['mtime'])
