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
as an operator sets them up (``devcloud.embedded``), and the checks that
Nova's own test case makes of a test (poisoned functions, warnings as
errors, captured logs).
"""

import datetime
import json
import os
import time

import fixtures
from nova import context
from nova import objects
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import integrated_helpers
from oslo_log.fixture import logging_error as log_fixture
from oslo_messaging.notify import _impl_test as sent
from oslo_versionedobjects import fixture as ovo_fixture
from oslotest import base as oslotest_base
from oslotest import mock_fixture

from devcloud import embedded
from devcloud import invariants
from devcloud import waits
from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.engine import nova_client
from nova_reservation import notifications
from nova_reservation import policies

STORE = db_api.Context()

IMAGE = embedded.IMAGE
ONE_PER_NODE = embedded.ONE_PER_NODE


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


class ReservationTestCase(waits.LookingOften, oslotest_base.BaseTestCase,
                          integrated_helpers.PlacementInstanceHelperMixin):
    NODES = ('host1', 'host2')
    # {service host: its nodes} of nova-computes that serve several.
    SERVICES: dict = {}
    # {node or service host: cell} of those not in cell1.
    CELLS: dict = {}
    CAST_AS_CALL = True
    # Check `assert_invariants` after each test.
    CHECK_INVARIANTS = True

    def setUp(self) -> None:
        # Nova's log fixture below captures the logs, not oslotest's.
        with fixtures.EnvironmentVariable('OS_LOG_CAPTURE', '0'):
            super().setUp()
        # What nova.test.TestCase checks of every test.
        self.useFixture(log_fixture.get_logging_handle_error_fixture())
        self.stdlog = self.useFixture(nova_fixtures.StandardLogging())
        self.useFixture(nova_fixtures.WarningsFixture())
        self.useFixture(ovo_fixture.StableObjectJsonFixture())
        self.useFixture(nova_fixtures.PoisonFunctions())
        self.useFixture(nova_fixtures.ForbidNewLegacyNotificationFixture())
        self.useFixture(nova_fixtures.PrivsepNoHelperFixture())
        self.useFixture(mock_fixture.MockAutospecFixture())
        self.useFixture(nova_fixtures.GenericPoisonFixture())
        self.useFixture(nova_fixtures.SysFsPoisonFixture())
        self.useFixture(nova_fixtures.ImportModulePoisonFixture(
            {'guestfs', 'libvirt'}))
        self.sleeps = self.useFixture(waits.ShorterSleeps())

        self.cloud = self.useFixture(embedded.EmbeddedCloud(
            self.id(), self.NODES, cast_as_call=self.CAST_AS_CALL,
            cells=self.CELLS, services=self.SERVICES))
        self.api_fixture = self.cloud.api_fixture
        self.api = self.cloud.api
        self.admin_api = self.cloud.admin_api
        self.placement = self.cloud.placement
        self.glance = self.cloud.glance
        self.notifier = self.cloud.notifier
        self.scheduler = self.cloud.scheduler
        self.computes = self.cloud.computes
        # The lease API's enforcer reads the policy file of this test.
        policies.reset()
        self.addCleanup(policies.reset)
        self.other_api = self.api_client('other-user', 'other-project')
        # The projects the tests name, in Keystone.
        self.cloud.keystone.projects.update(('other-project', SHARED,
                                             THIRD))
        self.clock = FakeClock(epoch.to_epoch(db_api.utcnow()))
        self.engine = self.cloud.engine(clock=self.clock)
        if self.CHECK_INVARIANTS:
            self.addCleanup(self.assert_invariants)

    def flags(self, **options) -> None:
        """Override configuration options for the test."""
        self.cloud.flags(**options)

    def api_client(self, user: str, project: str, roles=('reader', 'member')):
        return self.cloud.api_client(user, project, roles)

    def lease_api(self, user='fake', project=nova_fixtures.PROJECT_ID,
                  roles=('reader', 'member')) -> embedded.LeaseAPI:
        """A client of the lease API mounted in nova-api."""
        return self.cloud.lease_api(user, project, roles)

    def override_policy(self, rules: dict) -> None:
        """Write `rules` to Nova's policy file, as an operator does."""
        path = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'policy.yaml')
        with open(path, 'w') as f:
            json.dump(rules, f)  # JSON is YAML
        self.flags(policy_file=path, group='oslo_policy')
        policies.reset()

    def nova_client(self) -> nova_client.NovaClient:
        """The engine's client (an admin)."""
        return self.cloud.nova_client()

    # ------------------------------------------------------------ helpers

    def boot(self, lease_params, api=None, flavor=ONE_PER_NODE, count=None,
             name='vm', extra_hints=None, check=True):
        """POST /servers with lease_params; returns the response."""
        hints = dict(extra_hints or {})
        if lease_params is not None:
            hints['lease_params'] = lease_params
        return self.cloud.boot(name, flavor, hints, count, api)

    def boot_reserved(self, **extra) -> str:
        """Boot a server with a lease in an hour; return it once RESERVED."""
        resp = self.boot(params(when(60), when(120), **extra))
        self.assertEqual(202, resp.status, resp.content)
        server = resp.body['server']
        self.assertEqual('RESERVED', server['reservation']['status'])
        self.run_engine()
        return server['id']

    def lease_of_server(self, uuid: str):
        """The lease row of a server booted with lease_params."""
        return db_leases.get(
            STORE, self.api.get_server(uuid)['reservation']['lease_id'])

    def start_lease(self, lease) -> None:
        """Run the engine just after the lease's (row's) start."""
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)

    def assert_holds_nothing(self, uuid: str, images: int) -> None:
        """A reserved server: no allocation, no instance on a node, no image
        made (`images`: how many Glance had).
        """
        self.assertEqual({}, self.placement.get(
            '/allocations/%s' % uuid).body['allocations'])
        for node, compute in self.computes.items():
            self.assertNotIn(uuid, compute.driver.list_instance_uuids(),
                             node)
        self.assertEqual(images, len(self.glance.images))
        server = self.admin_api.get_server(uuid)
        self.assertEqual(('RESERVED', 'shelved_offloaded', None),
                         (server['status'], server['OS-EXT-STS:vm_state'],
                          server['OS-EXT-SRV-ATTR:host']))

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
                             epoch.to_epoch(db_api.utcnow()))
        for _ in range(passes):
            self.engine.run_once()
            # Events still due, or handed back to look again soon at an
            # action Nova has not finished.
            soon = self.engine.now() + datetime.timedelta(seconds=1)
            due = db_events.due(STORE, soon)
            if not due:
                return
            time.sleep(0.05)
            # Ahead by a second a pass, never behind the real clock (which
            # the store's writes read): a slow pass may take longer.
            self.clock.now = max(self.clock.now + 1.0,
                                 epoch.to_epoch(db_api.utcnow()))
        self.fail('events still due after %d passes: %s'
                  % (passes, [(e.event_type, e.last_error) for e in due]))

    def capture_notifications(self) -> None:
        """Every notification, the engine's too, is kept in memory by
        oslo.messaging's test driver (see `notified`).
        """
        self.flags(driver=['test'], group='oslo_messaging_notifications')
        sent.reset()
        self.addCleanup(sent.reset)
        self.engine.notifier = notifications.Notifier()

    @staticmethod
    def notified(prefix: str = '') -> list:
        """[(event type, payload)] of the notifications sent since
        `capture_notifications` whose event type starts with `prefix`.
        """
        return [(n[1]['event_type'], n[1]['payload'])
                for n in sent.NOTIFICATIONS
                if n[1]['event_type'].startswith(prefix)]

    def set_compute(self, node: str, status: str) -> None:
        """Enable or disable the nova-compute service of `node`."""
        service = next(s for s in self.admin_api.get_services(
            binary='nova-compute', host=node))
        self.admin_api.put_service(service['id'], {'status': status})

    def assert_invariants(self) -> None:
        """What must hold after any scenario (`devcloud.invariants`)."""
        servers = self.admin_api.get_servers(
            detail=True, search_opts={'all_tenants': 1})
        self.assertEqual([], invariants.violations(
            db_api.get_engine(), servers,
            lambda path: self.placement.get(path, version='1.14').body,
            db_api.utcnow(),
            floating_ips=self.cloud.neutron.list_floatingips()[
                'floatingips']))

    @staticmethod
    def reserved_spec(rid: str, project: str, instance=None):
        """The request spec of a boot of `project` into reservation `rid`
        (of `instance`, if given), as a move replays it past the hook.
        """
        values = dict(project_id=project, scheduler_hints={
            'reservation': [rid]}, flavor=objects.Flavor(
                vcpus=1, memory_mb=512, root_gb=1, ephemeral_gb=0, swap=0))
        if instance:
            values['instance_uuid'] = instance
        return objects.RequestSpec(**values)

    def host_states(self, spec) -> list:
        """The scheduler's host states of every node, for `spec`."""
        nodes = [self._get_provider_uuid_by_host(n) for n in self.NODES]
        return list(self.scheduler.manager.host_manager
                    .get_host_states_by_uuids(context.get_admin_context(),
                                              nodes, spec))

    def placement_usage(self, node: str) -> dict:
        rp = self._get_provider_uuid_by_host(node)
        return self._get_provider_usages(rp)

    def leases(self) -> list:
        return db_leases.get_all(STORE)


def flavor_lease(amount=1, start=60, end=120, name='cap'):
    return {'name': name, 'start_date': when(start)[:16],
            'end_date': when(end)[:16], 'events': [],
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': ONE_PER_NODE,
                              'amount': amount, 'affinity': 'None'}]}


TINY = '1'


def soon(seconds: float) -> str:
    t = db_api.utcnow() + datetime.timedelta(seconds=seconds)
    return t.isoformat() + 'Z'


class ReservationsTestCase(ReservationTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.rsv = self.lease_api()
        self.admin_rsv = self.lease_api('admin',
                                        roles=('reader', 'member', 'admin'))

    def lease(self, reservation, start=3.0, minutes=60):
        """A lease of `reservation` that starts in `start` seconds (or
        ``now``) and lasts `minutes`.
        """
        body = {'name': 'l', 'start_date': (start if start == 'now'
                                            else soon(start)),
                'end_date': soon(minutes * 60), 'events': [],
                'reservations': [reservation]}
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(201, resp.status_code, resp.text)
        return resp.json()['lease']

    def wait_for_start(self, lease) -> None:
        start = datetime.datetime.strptime(lease['start_date'],
                                           '%Y-%m-%dT%H:%M:%S.%f')
        delay = (start - db_api.utcnow()).total_seconds()
        if delay > 0:
            time.sleep(delay + 0.1)
        self.run_engine()
        self.assertEqual('ACTIVE', self.rsv(
            'GET', '/leases/%s' % lease['id']).json()['lease']['status'])

    def boot_into(self, rid, api=None, flavor=ONE_PER_NODE,
                  name='vm'):
        return self.boot(None, api=api, flavor=flavor, name=name,
                         extra_hints={'reservation': rid} if rid else None)

    def node_of(self, uuid) -> str:
        server = self._wait_for_state_change(
            self.admin_api.get_server(uuid), 'ACTIVE')
        return server['OS-EXT-SRV-ATTR:hypervisor_hostname']


class BootTestCase(ReservationsTestCase):
    CHECK_INVARIANTS = True

    def running_lease(self, amount: int, flavor=ONE_PER_NODE) -> str:
        lease = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': flavor, 'amount': amount,
                            'affinity': 'None'}, start=1.0)
        self.wait_for_start(lease)
        return lease['reservations'][0]['id']

    def boot_body(self, rid=None, count=None, **extra):
        server = self._build_server(name='vm', image_uuid=IMAGE,
                                    flavor_id=ONE_PER_NODE,
                                    networks='none')
        if count:
            server['min_count'] = server['max_count'] = count
        server.update(extra)
        body = {'server': server}
        if rid:
            body['os:scheduler_hints'] = {'reservation': rid}
        return body

    def post(self, body, api=None):
        return (api or self.api).api_post('/servers', body,
                                          check_response_status=False)

    def bound(self, rid) -> dict:
        return {a.instance_uuid: a.node for a in db_ledger.slots(STORE, rid)
                if a.instance_uuid}


OWNER = nova_fixtures.PROJECT_ID
SHARED = 'shared-project'
THIRD = 'third-project'


class SharingTestCase(BootTestCase):
    NODES = ('host1', 'host2', 'host3')

    def setUp(self) -> None:
        super().setUp()
        self.shared_api = self.api_client('shared-user', SHARED)
        self.shared_rsv = self.lease_api('shared-user', SHARED)
        self.third_api = self.api_client('third-user', THIRD)
        self.third_rsv = self.lease_api('third-user', THIRD)

    def shared_lease(self, amount=2, shared_with=(SHARED,), start='now',
                     minutes=60, **extra) -> dict:
        lease = self.lease(dict({
            'resource_type': 'flavor:instance', 'flavor_id': ONE_PER_NODE,
            'amount': amount, 'affinity': 'None',
            'shared_with': list(shared_with)}, **extra), start=start,
            minutes=minutes)
        return lease

    def running_shared(self, **extra) -> tuple:
        lease = self.shared_lease(**extra)
        self.wait_for_start(lease)
        return lease, lease['reservations'][0]['id']

    def share(self, lease, rid, projects, api=None):
        return (api or self.rsv)('PUT', '/leases/%s' % lease['id'], {
            'reservations': [{'id': rid, 'shared_with': list(projects)}]})

    def bound_projects(self, rid) -> dict:
        """{server: its project, as its binding has it} of `rid`."""
        slots = {s.instance_uuid for s in db_ledger.slots(STORE, rid)}
        return {b.instance_uuid: b.project_id for b in
                db_bindings.of_servers(STORE, slots) if b.instance_uuid}
