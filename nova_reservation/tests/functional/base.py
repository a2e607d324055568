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

"""Real Nova in one process, with the hook, the filter and the engine set up
as an operator sets them up (nova's own functional harness)."""

import datetime
import json
import os
import sys
import time

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as api_client
from nova.tests.functional import fixtures as func_fixtures
from nova.tests.functional import integrated_helpers
import requests

from nova_reservation.api import policies
from nova_reservation import capacity
from nova_reservation.db import api as db_api
from nova_reservation.db import migration
from nova_reservation import deploy
from nova_reservation.engine import nova_client
from nova_reservation.engine import service
from nova_reservation import ledger

IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
# m1.medium (2 vCPU, 4 GB): one fits a MediumFakeDriver node (8 GB less the
# 512 MB Nova keeps for the host).
ONE_PER_NODE = '3'


def nova_api_paste() -> str:
    """The api-paste.ini that the nova wheel ships."""
    return os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')


def when(minutes: float) -> str:
    """A UTC date this many minutes from now, as a user writes it."""
    t = db_api.utcnow() + datetime.timedelta(minutes=minutes)
    return t.strftime('%Y-%m-%d %H:%M:%S')


def params(start, end, **extra) -> str:
    """The lease_params hint of a lease named l1."""
    return json.dumps(dict(name='l1', start=start, end=end, **extra))


class FakeClock:
    """A clock that tests move; starts at the real time."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class LeaseAPI:
    """Requests to /reservation/v1 with the harness's stand-in for Keystone
    (the headers Nova's own test clients send).
    """

    def __init__(self, base: str, user: str, project: str, roles) -> None:
        self.base = base
        self.headers = {'X-Auth-User': user, 'X-Auth-Project-Id': project,
                        'X-Roles': ','.join(roles)}

    def __call__(self, method: str, path: str, body=None):
        resp = requests.request(method, self.base + path, json=body,
                                headers=self.headers)
        resp.body = resp.json() if resp.content else None
        return resp


class ReservationTestCase(test.TestCase,
                          integrated_helpers.PlacementInstanceHelperMixin):
    NODES = ('host1', 'host2')
    REQUIRES_LOCKING = True
    CAST_AS_CALL = True
    STUB_KEYSTONE = True
    # Check `assert_invariants` after each test.
    CHECK_INVARIANTS = False

    def setUp(self) -> None:
        super().setUp()
        self.flags(compute_driver='fake.MediumFakeDriver')
        self.flags(cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
                   disk_allocation_ratio=1.0)
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        paste = os.path.join(self.useFixture(
            nova_fixtures.fixtures.TempDir()).path, 'api-paste.ini')
        with open(nova_api_paste()) as f:
            text = deploy.add_to_api_paste(f.read())
        with open(paste, 'w') as f:
            f.write(text)
        self.flags(api_paste_config=paste, group='wsgi')
        self.flags(available_filters=['nova.scheduler.filters.all_filters',
                                      deploy.FILTER_CLASS],
                   group='filter_scheduler')
        self.flags(enabled_filters=deploy.scheduler_filters(
            ['ComputeFilter', 'ComputeCapabilitiesFilter',
             'ImagePropertiesFilter']), group='filter_scheduler')

        migration.db_sync()
        if self.CAST_AS_CALL:
            self.useFixture(nova_fixtures.CastAsCallFixture(self))
        self.placement = self.useFixture(func_fixtures.PlacementFixture()).api
        self.neutron = self.useFixture(nova_fixtures.NeutronFixture(self))
        self.glance = self.useFixture(nova_fixtures.GlanceFixture(self))
        self.policy = self.useFixture(nova_fixtures.RealPolicyFixture())
        # The lease API's enforcer reads the policy file of this test.
        policies.reset()
        self.addCleanup(policies.reset)
        self.notifier = self.useFixture(
            nova_fixtures.NotificationFixture(self))
        self.start_service('conductor')
        self.scheduler = self.start_service('scheduler')
        for node in self.NODES:
            self._start_compute(node)
        self.api_fixture = self.useFixture(nova_fixtures.OSAPIFixture(
            api_version='v2.1'))
        self.api = self.api_fixture.api
        self.api.microversion = '2.91'
        self.admin_api = self.api_fixture.admin_api
        self.admin_api.microversion = '2.91'
        self.other_api = self.api_client('other-user', 'other-project')
        self.clock = FakeClock(ledger.to_epoch(db_api.utcnow()))
        self.engine = service.Engine(self.nova_client(), clock=self.clock)
        if self.CHECK_INVARIANTS:
            self.addCleanup(self.assert_invariants)

    def api_client(self, user: str, project: str, roles=('reader', 'member')):
        client = api_client.TestOpenStackClient(
            user, self.api_fixture.base_url, project_id=project,
            roles=list(roles))
        client.microversion = '2.91'
        return client

    def lease_api(self, user='fake', project=nova_fixtures.PROJECT_ID,
                  roles=('reader', 'member')) -> 'LeaseAPI':
        """A client of the lease API mounted in nova-api."""
        return LeaseAPI(self.api_fixture.base_url.rsplit('/', 1)[0] +
                        '/reservation/v1', user, project, roles)

    def override_policy(self, rules: dict) -> None:
        """Write `rules` to Nova's policy file, as an operator does."""
        path = os.path.join(self.useFixture(
            nova_fixtures.fixtures.TempDir()).path, 'policy.yaml')
        with open(path, 'w') as f:
            json.dump(rules, f)  # JSON is YAML
        self.flags(policy_file=path, group='oslo_policy')
        policies.reset()

    def nova_client(self) -> nova_client.NovaClient:
        """The engine's client, as admin, with the harness's stand-in for
        Keystone (the same headers its admin client sends).
        """
        return nova_client.NovaClient(ks_adapter.Adapter(
            ks_session.Session(auth=None),
            endpoint_override=self.api_fixture.base_url,
            additional_headers={
                'X-Auth-User': 'admin',
                'X-Auth-Project-Id': nova_fixtures.PROJECT_ID,
                'X-Roles': 'reader,member,admin'}))

    # ------------------------------------------------------------ helpers

    def boot(self, lease_params, api=None, flavor=ONE_PER_NODE, count=None,
             name='vm', extra_hints=None, check=True):
        """POST /servers with lease_params; returns the response."""
        server = self._build_server(name=name, image_uuid=IMAGE,
                                    flavor_id=flavor, networks='none')
        if count:
            server['min_count'] = server['max_count'] = count
        hints = dict(extra_hints or {})
        if lease_params is not None:
            hints['lease_params'] = lease_params
        body = {'server': server, 'os:scheduler_hints': hints}
        return (api or self.api).api_post('/servers', body,
                                          check_response_status=False)

    def boot_reserved(self, **extra) -> str:
        """Boot a server with a lease in an hour; return it once RESERVED."""
        resp = self.boot(params(when(60), when(120), **extra))
        self.assertEqual(202, resp.status, resp.content)
        server = resp.body['server']
        self.assertEqual('RESERVED', server['reservation']['status'])
        self.run_engine()
        return server['id']

    def wait_gone(self, uuid: str, timeout: float = 10) -> None:
        """Wait until the server is deleted (it may be already)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.admin_api.api_get('/servers/%s' % uuid,
                                      check_response_status=False
                                      ).status == 404:
                return
            time.sleep(0.05)
        self.fail('server %s is still there' % uuid)

    def run_engine(self, at: float = None, passes: int = 100) -> None:
        """Run the engine at time `at` until no event is due."""
        # The fake clock never runs behind the real one: what the API wrote
        # "now" is due.
        self.clock.now = max(at or 0, self.clock.now,
                             ledger.to_epoch(db_api.utcnow()))
        for _ in range(passes):
            self.engine.run_once()
            # Events still due, or handed back to look again soon at an
            # action Nova has not finished.
            soon = self.engine.now() + datetime.timedelta(seconds=1)
            due = db_api.due_events(soon)
            if not due:
                return
            time.sleep(0.05)
            self.clock.now += 1.0
        self.fail('events still due after %d passes: %s'
                  % (passes, [(e.event_type, e.last_error) for e in due]))

    def set_compute(self, node: str, status: str) -> None:
        """Enable or disable the nova-compute service of `node`."""
        service = next(s for s in self.admin_api.get_services(
            binary='nova-compute', host=node))
        self.admin_api.put_service(service['id'], {'status': status})

    def assert_invariants(self) -> None:
        """What must hold after any scenario: no lease left in a
        transitional state, no event run twice, no slot held for a boot or
        a server that does not exist, no server of a lease that is gone,
        and no node promised more than it has.
        """
        leases = db_api.list_leases()
        self.assertEqual([], [x.id for x in leases
                              if x.status == 'CREATING'])
        servers = {s['id']: s for s in self.admin_api.get_servers(
            detail=True, search_opts={'all_tenants': 1})}
        for lease in leases:
            details = db_api.lease_details(lease.id)
            self.assertEqual([], [e.event_type for e in details.events
                                  if e.runs > 1], lease.id)
            for res in details.reservations:
                for slot in db_api.allocations_of(res.id):
                    if slot.instance_uuid:
                        self.assertIn(slot.instance_uuid, servers,
                                      'slot %d' % slot.id)
        for server in servers.values():
            lease_id = (server.get('metadata') or {}).get(
                'reservation:lease_id')
            if lease_id:
                lease = db_api.get_lease(lease_id)
                self.assertNotIn(lease.status, ('DELETED', 'CREATING'),
                                 server['id'])
        copy = ledger.Ledger()
        copy.refresh()
        for node, timeline in copy.timelines.items():
            rp = self._get_provider_uuid_by_host(node)
            inventories = self.placement.get(
                '/resource_providers/%s/inventories' % rp).body[
                'inventories']
            limit = capacity.Resources(*(
                (inventories[rc]['total'] - inventories[rc]['reserved']) *
                inventories[rc]['allocation_ratio']
                for rc in ('VCPU', 'MEMORY_MB', 'DISK_GB')))
            peak = timeline.peak(ledger.to_epoch(db_api.utcnow()),
                                 float('inf'))
            self.assertTrue(peak.fits_in(limit), (node, peak, limit))

    def placement_usage(self, node: str) -> dict:
        rp = self._get_provider_uuid_by_host(node)
        return self._get_provider_usages(rp)

    def leases(self) -> list:
        return db_api.list_leases()
