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

"""Integration tests: the local cloud (``tools/localcloud up``), driven as
its users drive it, through the real ``nova`` and ``openstack`` CLIs with
real Keystone tokens.
"""

import datetime
import json
import os
import re
import subprocess
import time
from typing import Callable, Optional

import pymysql
import sqlalchemy as sa
import testtools

from devcloud import invariants
from devcloud.localcloud import cloud

CLOUD = cloud.LocalCloud(os.environ.get('LOCALCLOUD_DIR'))


def utc(seconds: float) -> str:
    """An ISO 8601 UTC time `seconds` from now."""
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(seconds=seconds)).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def minutes(n: int) -> str:
    """Blazar's CLI date format, `n` minutes from now."""
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(minutes=n)).strftime('%Y-%m-%d %H:%M')


def parse_json(out: str):
    """The JSON document a CLI printed (after any plugin load warning)."""
    return json.loads(out[min(i for i in (out.find('{'), out.find('['))
                              if i >= 0):])


def lease_params(name: str, start: str, end: str, **extra) -> str:
    return json.dumps(dict(name=name, start=start, end=end, **extra))


class CloudTestCase(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        if 'nova-api' not in CLOUD.running():
            self.fail('the local cloud does not run: tools/localcloud up')
        self.suffix = self.id().rsplit('.', 1)[-1][-20:] + '-' + str(
            int(time.time()))
        # Registered first, so run last: after the test's own clean-up.
        self.addCleanup(self.assert_invariants)

    def assert_invariants(self, timeout: float = 180) -> None:
        """What must hold on the cloud after any scenario
        (`devcloud.invariants`), once the engines have done what is due.
        """
        engine = sa.create_engine('mysql+pymysql://%s:%s@%s/%s' % (
            cloud.DB_USER, cloud.DB_PASSWORD, cloud.HOST,
            cloud.DATABASES['nova_api']))
        self.addCleanup(engine.dispose)
        admin = CLOUD.session('admin')

        def placement(path: str) -> dict:
            return admin.get(cloud.url('placement') + path, headers={
                'OpenStack-API-Version': 'placement 1.14'}).json()
        deadline = time.time() + timeout
        while True:
            servers = admin.get(
                cloud.url('nova') + '/servers/detail?all_tenants=1',
                headers={'OpenStack-API-Version': 'compute 2.91'}).json()[
                'servers']
            found = invariants.violations(engine, servers, placement,
                                          engines=True)
            if not found:
                return
            if time.time() > deadline:
                self.fail('invariants that do not hold: %s' % found)
            time.sleep(5)

    def run_cli(self, user: str, *args: str, check: bool = True
                ) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONWARNINGS='ignore',
                   **CLOUD.variables(user))
        done = subprocess.run(args, env=env, capture_output=True, text=True,
                              timeout=120)
        if check:
            self.assertEqual(0, done.returncode, '%s as %s: %s%s' % (
                ' '.join(args), user, done.stdout, done.stderr))
        return done

    def openstack(self, user: str, *args: str):
        """`openstack ... -f json` as `user`, parsed."""
        return parse_json(self.run_cli(user, 'openstack', *args, '-f',
                                       'json').stdout)

    def nova(self, user: str, *args: str) -> dict:
        """`nova ...` as `user`: the Property/Value table as a dict."""
        out = self.run_cli(user, 'nova', *args).stdout
        rows = {}
        for line in out.splitlines():
            match = re.match(r'^\| (\S+)\s+\| (.*?)\s*\|$', line)
            if match:
                rows[match.group(1)] = match.group(2)
        return rows

    def server(self, server_id: str, user: str = 'admin') -> Optional[dict]:
        done = self.run_cli(user, 'openstack', 'server', 'show', server_id,
                            '-f', 'json', check=False)
        gone = 'no server' in (done.stderr + done.stdout).lower()
        if done.returncode and gone:
            return None
        self.assertEqual(0, done.returncode, done.stderr)
        return parse_json(done.stdout)

    def wait_for(self, what: str, check: Callable, timeout: float = 180,
                 interval: float = 3.0):
        deadline = time.time() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.time() > deadline:
                self.fail('timed out waiting for %s' % what)
            time.sleep(interval)

    def store(self, query: str, *args) -> list:
        """Rows of the reservation store, read to check what happened."""
        conn = pymysql.connect(host=cloud.HOST, user=cloud.DB_USER,
                               password=cloud.DB_PASSWORD,
                               database=cloud.DATABASES['nova_api'])
        try:
            with conn.cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute(query, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def delete_server(self, server_id: str) -> None:
        self.run_cli('admin', 'openstack', 'server', 'delete', server_id,
                     check=False)

    def delete_lease(self, lease_id: str) -> None:
        self.run_cli('admin', 'openstack', 'reservation', 'lease', 'delete',
                     lease_id, check=False)
