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

import sqlalchemy as sa
import testtools

from devcloud import baremetal
from devcloud import lanes
from devcloud.localcloud import cloud
from nova_reservation.tests.integration import checks
from nova_reservation.tests.integration import lookups

CLOUD = cloud.LocalCloud(os.environ.get('LOCALCLOUD_DIR'))
# The lane of the cloud whose nodes and flavors this process's tests use
# (`devcloud.lanes`; LOCALCLOUD_LANE, 0 by default).
LANE = int(os.environ.get('LOCALCLOUD_LANE', '0'))
LEASES = 'http://%s:%d/reservation/v1/leases' % (cloud.HOST,
                                                 cloud.PORTS['nova'])


def utc(seconds: float) -> str:
    """An ISO 8601 UTC time `seconds` from now."""
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(seconds=seconds)).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def minutes(n: int) -> str:
    """Blazar's CLI date format, `n` minutes from now."""
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(minutes=n)).strftime('%Y-%m-%d %H:%M')


def when(date: str) -> datetime.datetime:
    """A date of the lease API (ISO 8601, UTC, Z or not), to the second."""
    return datetime.datetime.fromisoformat(date.rstrip('Z')).replace(
        microsecond=0, tzinfo=datetime.timezone.utc)


def seconds_from_now(date: str) -> float:
    return (when(date) - datetime.datetime.now(
        datetime.timezone.utc)).total_seconds()


def parse_json(out: str):
    """The JSON document a CLI printed (after any plugin load warning)."""
    return json.loads(out[min(i for i in (out.find('{'), out.find('['))
                              if i >= 0):])


def lease_params(name: str, start: str, end: str, **extra) -> str:
    return json.dumps(dict(name=name, start=start, end=end, **extra))


class CloudTestCase(checks.InvariantChecks, testtools.TestCase):
    # Its tests stop, kill or measure what every lane shares (nova-api,
    # Cinder, the engines): they run while no other test runs.
    ALONE = False
    # What its tests change that lanes do not split (the quotas and tags
    # of alice's project, the external network's addresses, ...): tests
    # that share one of these names run in one lane, one after another.
    SHARES: tuple = ()
    # Its tests look at what every lane left: they run once the lanes are
    # done.
    LAST = False

    def setUp(self) -> None:
        super().setUp()
        if 'nova-api' not in CLOUD.running():
            self.fail('the local cloud does not run: tools/localcloud up')
        self.suffix = self.id().rsplit('.', 1)[-1][-20:] + '-' + str(
            int(time.time()))
        # Connections are checked before use: a database node may have
        # gone (the topology suite kills them).
        self._store = sa.create_engine(CLOUD.db_url('nova_api'),
                                       pool_pre_ping=True)
        self.addCleanup(self._store.dispose)
        self._admin = None
        # What an earlier test left is that test's failure, not this one's
        # (nor a reason to wait for it here).
        self.earlier = set(self.violations())
        # Registered first, so run last: after the test's own clean-up.
        if not self.LAST:   # (which checks them itself)
            self.addCleanup(self.assert_invariants)
        # {name: OS_* variables} of users a test made (`new_user`).
        self.users: dict = {}

    def alone_on_cloud(self) -> bool:
        """Whether no test runs beside this one."""
        return self.ALONE or self.LAST or CLOUD.lanes < 2

    @staticmethod
    def node(name: str) -> str:
        """This lane's node (or compute service) of the name `name` has
        on a cloud of one lane: compute1, bm1, ironic-compute, ...
        """
        return lanes.node(name, LANE, CLOUD.lanes)

    @staticmethod
    def flavor(name: str) -> str:
        """This lane's copy of the cloud's flavor `name`."""
        return lanes.flavor(name, LANE, CLOUD.lanes)

    @staticmethod
    def lane_nodes(computes_only: bool = False) -> set:
        """This lane's computes and (with --baremetal) bare-metal nodes."""
        names = ['compute%d' % i
                 for i in range(1, CLOUD.state['computes'] + 1)]
        names += [] if computes_only else list(baremetal.NODES)
        return {lanes.node(n, LANE, CLOUD.lanes) for n in names}

    @staticmethod
    def on_lane(also=None) -> str:
        """Node requirements (resource_properties of an instance
        reservation, hypervisor_properties of a host reservation) that
        hold on this lane's nodes only, and `also` (text or a list).
        """
        return lanes.requirements(LANE, CLOUD.lanes, also)

    @staticmethod
    def lane_specs() -> dict:
        """The extra specs a flavor a test makes adds, to be booted on
        this lane's nodes only.
        """
        return lanes.extra_specs(LANE, CLOUD.lanes)

    def run_cli(self, user: str, *args: str, check: bool = True
                ) -> subprocess.CompletedProcess:
        # Only the user's own OS_* variables: none this process was given.
        env = dict({k: v for k, v in os.environ.items()
                    if not k.startswith('OS_')}, PYTHONWARNINGS='ignore',
                   **(self.users.get(user) or CLOUD.variables(user)))
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

    def new_user(self, name: str, project: str, *tags: str) -> None:
        """A member of a new project with `tags`, both removed after the
        test; `name` is then a user of `run_cli`.
        """
        ks = cloud.url('keystone')
        admin = self.admin_session()
        made = admin.post(ks + '/projects', json={'project': dict(
            name=project, domain_id='default', tags=list(tags))}).json()[
            'project']
        self.addCleanup(self.delete, 'identity', '/projects/' + made['id'],
                        204)
        password = name + '-secret'
        user = admin.post(ks + '/users', json={'user': dict(
            name=name, password=password, domain_id='default',
            default_project_id=made['id'])}).json()['user']
        self.addCleanup(self.delete, 'identity', '/users/' + user['id'], 204)
        member = admin.get(ks + '/roles', params={'name': 'member'}).json()[
            'roles'][0]['id']
        admin.put('%s/projects/%s/users/%s/roles/%s' % (
            ks, made['id'], user['id'], member))
        self.users[name] = dict(CLOUD.variables('alice'), OS_USERNAME=name,
                                OS_PASSWORD=password,
                                OS_PROJECT_NAME=project)
        # A network of its own, as the cloud's projects have.
        api = cloud.url('network') + '/v2.0'
        net = admin.post(api + '/networks', json={'network': dict(
            name=project + '-net', project_id=made['id'])}).json()['network']
        self.addCleanup(self.delete_network, net['id'])
        admin.post(api + '/subnets', json={'subnet': dict(
            name=project + '-subnet', project_id=made['id'],
            network_id=net['id'], ip_version=4, cidr='10.9.0.0/24')})

    def delete_network(self, network_id: str, timeout: float = 90) -> None:
        """Delete a network once the servers' ports on it are gone (a
        server's deletion ends after its CLI's answer).
        """
        self.wait_for('network %s deleted' % network_id, lambda: self.delete(
            'network', '/v2.0/networks/' + network_id) in (204, 404),
            timeout=timeout, interval=2)

    def network(self, user: str) -> str:
        """The id of the network of `user`'s project (<project>-net)."""
        return lookups.find(self.admin_session(), 'networks', (
            self.users.get(user) or CLOUD.variables(user))[
                'OS_PROJECT_NAME'] + '-net')

    def flavor_ref(self, name: str) -> str:
        """The id of the cloud's flavor `name`."""
        return lookups.find(self.admin_session(), 'flavors', name)

    def image_ref(self) -> str:
        """The id of the cloud's image (cirros)."""
        return lookups.find(self.admin_session(), 'images', 'cirros')

    def nic(self, user: str) -> list:
        """The CLIs' arguments for a port on `user`'s project network."""
        return ['--nic', 'net-id=' + self.network(user)]

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

    def admin_session(self):
        """A Keystone session of the cloud's admin, made once per test."""
        if self._admin is None:
            self._admin = CLOUD.session('admin')
        return self._admin

    def delete(self, service_type: str, path: str,
               expected: Optional[int] = None) -> int:
        """DELETE `path` of a service of the cloud as admin; its status,
        which must be `expected` if given.  (Not through a CLI: a CLI
        costs a second of processor to start.)
        """
        status = self.admin_session().delete(path, endpoint_filter=dict(
            service_type=service_type, interface='public'),
            raise_exc=False).status_code
        if expected is not None:
            self.assertEqual(expected, status, path)
        return status

    def rest(self, url: str) -> Optional[dict]:
        """GET `url` of the cloud's APIs as admin; None if 404.  What the
        waits read: a CLI costs about a second of processor to start.
        """
        # A GET is tried again on a connection the server had closed.
        resp = self.admin_session().get(
            url, raise_exc=False, connect_retries=2,
            headers={'OpenStack-API-Version': 'compute 2.91'})
        if resp.status_code == 404:
            return None
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def wait_for_server(self, what: str, server_id: str,
                        ready: Callable[[Optional[dict]], bool],
                        user: str = 'admin', timeout: float = 180,
                        interval: float = 3.0) -> Optional[dict]:
        """Wait until `ready` holds of the server's API view (None once
        it is gone); then that view, or another user's through the CLI.
        """
        shown = self._wait_for_view(what, '%s/servers/%s' % (
            cloud.url('nova'), server_id), 'server', ready, timeout, interval)
        return shown if user == 'admin' else self.server(server_id, user)

    def wait_for_lease(self, what: str, lease_id: str,
                       ready: Callable[[Optional[dict]], bool],
                       timeout: float = 180, interval: float = 3.0
                       ) -> Optional[dict]:
        """Wait until `ready` holds of the lease's API view (None once
        it is gone); that view.
        """
        return self._wait_for_view(what, '%s/%s' % (LEASES, lease_id),
                                   'lease', ready, timeout, interval)

    def _wait_for_view(self, what: str, url: str, key: str, ready: Callable,
                       timeout: float, interval: float) -> Optional[dict]:
        seen: list = [None]

        def check():
            seen[0] = (self.rest(url) or {}).get(key)
            return ready(seen[0])
        self.wait_for(what, check, timeout=timeout, interval=interval)
        return seen[0]

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
        with self._store.connect() as conn:
            return [dict(row) for row in conn.exec_driver_sql(
                query, args).mappings()]

    def reserved_boot(self, name: str, *args: str):
        """A reserved boot of alice's with `nova boot` (which, unlike
        `openstack server create`, sends ids unchecked); the CLI's run.
        """
        return self.run_cli(
            'alice', 'nova', 'boot', '--flavor', self.flavor('m1.tiny'),
            *args, '--hint',
            'lease_params=' + lease_params(
                name, utc(3600), utc(7200)), name, check=False)

    def assert_refused(self, done, status: str, *words: str) -> None:
        """The CLI failed with HTTP `status`, naming each of `words`."""
        out = done.stdout + done.stderr
        self.assertNotEqual(0, done.returncode, out)
        self.assertIn('(HTTP %s)' % status, out)
        for word in words:
            self.assertIn(word, out)

    def assert_lease_refused(self, done, *words: str) -> None:
        """python-blazarclient's command failed, naming each of `words`
        (it prints the API's message, not its status).
        """
        out = done.stdout + done.stderr
        self.assertNotEqual(0, done.returncode, out)
        self.assertIn('ERROR: ', out)
        for word in words:
            self.assertIn(word, out)

    def assert_nothing_written(self, name: str) -> None:
        """No live lease and no server named `name`."""
        # A lease is never erased: one refused is DELETED (its slots free,
        # which the invariants check).
        self.assertEqual([], self.store(
            "SELECT id FROM rsv_leases WHERE name = %s AND status != "
            "'DELETED'", name))
        self.assertEqual([], self.named(name + '$'))

    def named(self, name: str) -> list:
        """The servers of every project whose names match `^name`, as
        admin sees them through the compute API.
        """
        return self.rest('%s/servers/detail?all_tenants=1&name=^%s' % (
            cloud.url('nova'), name))['servers']

    def volume(self, volume_id: str) -> Optional[dict]:
        """A volume as Cinder shows it to admin; None once it is gone."""
        admin = CLOUD.session('admin')
        resp = admin.get('%s/volumes/%s' % (admin.get_endpoint(
            service_type='volumev3', interface='public'), volume_id),
            raise_exc=False)
        return None if resp.status_code == 404 else resp.json()['volume']

    def delete_server(self, server_id: str) -> None:
        self.delete('compute', '/servers/' + server_id)

    def delete_lease(self, lease_id: str) -> None:
        self.delete('reservation', '/leases/' + lease_id)


class BlazarCLI(CloudTestCase):
    """What a Blazar user does with the CLIs."""

    def lease(self, user: str, name: str, reservation: str,
              end: int = 30) -> dict:
        """A lease from now to `end` minutes from now (Blazar's dates are
        to the minute), once ACTIVE, with its first reservation.
        """
        lease = self.openstack(
            user, 'reservation', 'lease', 'create', '--end-date',
            minutes(end), '--reservation', reservation, name)
        self.addCleanup(self.delete_lease, lease['id'])
        lease = self.wait_for_lease('lease %s active' % name, lease['id'],
                                    lambda x: x and x['status'] == 'ACTIVE',
                                    timeout=60, interval=2)
        first = lease['reservations'][0]
        return dict(lease, reservation_id=first['id'], reservation=first)

    def boot(self, user: str, name: str, flavor: str, *hints: str,
             count: int = 1) -> list:
        args = ['server', 'create', '--flavor', flavor, '--image', 'cirros',
                *self.nic(user), name]
        for hint in hints:
            args += ['--hint', hint]
        if count > 1:
            args += ['--min', str(count), '--max', str(count)]
        self.run_cli(user, 'openstack', *args, '-f', 'json')
        servers = [s['id'] for s in self.named(name)]
        for server_id in servers:
            self.addCleanup(self.delete_server, server_id)
        return servers

    def refused(self, user: str, name: str, flavor: str, *hints: str
                ) -> str:
        """A boot that Nova's API refuses: the error it gives."""
        args = ['server', 'create', '--flavor', flavor, '--image', 'cirros',
                *self.nic(user), name]
        for hint in hints:
            args += ['--hint', hint]
        done = self.run_cli(user, 'openstack', *args, check=False)
        self.assertNotEqual(0, done.returncode, done.stdout)
        self.assertEqual([], self.named(name))
        for hint in hints:
            key, rid = hint.split('=', 1)
            if key == 'reservation' and '404' in done.stderr:
                self.assertIn('reservation: %s not found' % rid, done.stderr)
        return done.stderr

    def settled(self, server_id: str) -> dict:
        return self.wait_for_server(
            '%s built' % server_id, server_id,
            lambda s: s and s['status'] in ('ACTIVE', 'ERROR'),
            timeout=90, interval=2)

    def enroll(self) -> tuple:
        """(name, host view) of a node enrolled as a reservable host: one
        that holds no server and no promised capacity.
        """
        for name in map(self.node, ('compute3', 'compute2', 'compute1')):
            done = self.run_cli('admin', 'openstack', 'reservation', 'host',
                                'create', name, '-f', 'json', check=False)
            if not done.returncode:
                break
        self.assertEqual(0, done.returncode, done.stderr)
        host = parse_json(done.stdout)
        self.addCleanup(self.delete, 'reservation',
                        '/os-hosts/%s' % host['id'])
        return name, host
