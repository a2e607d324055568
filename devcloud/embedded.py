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

"""The embedded cloud: real Nova in one process (API, conductor, scheduler,
Placement, fake compute nodes, SQLite, in-process messaging), with
nova-reservation configured as an operator configures it: the hook and the
lease API in nova-api's paste pipeline, ``ReservationFilter`` among the
scheduler's filters, its tables in the API database, and the engine's
client of the compute API.

``EmbeddedCloud`` is the one way to build it: the functional tests, the
demo and anything else that wants it use this fixture.  It stands on
Nova's functional harness (``nova.tests.fixtures``), set up by
``NovaHarness`` as ``nova.test.TestCase.setUp`` sets it up, so that it
works outside a test case too.
"""

# Eventlet or native threads (OS_NOVA_DISABLE_EVENTLET_PATCHING=1) are
# chosen on this import, before anything else is imported.
import devcloud.patching  # noqa: F401

import collections
import copy
import os
import sys
from typing import Iterable, Optional

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from nova.api.openstack import wsgi_app
from nova.compute import api as compute_api
from nova.compute import rpcapi as compute_rpcapi
import nova.conf
from nova import context
import nova.crypto
from nova import objects
from nova.objects import base as objects_base
from nova import quota
from nova.scheduler.client import report
from nova.scheduler import utils as scheduler_utils
from nova import service as nova_service
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as nova_api_client
from nova.tests.functional import fixtures as func_fixtures
from oslo_concurrency import lockutils
from oslo_config import fixture as config_fixture
from oslo_utils.fixture import uuidsentinel as uuids
import requests

from devcloud import keystone
from devcloud import messaging
from devcloud import neutron
from devcloud import reuse
from devcloud import schemas
from devcloud import thread_pools
from nova_reservation.clients import placement_usage
from nova_reservation import compat
from nova_reservation import deploy
from nova_reservation.engine import nova_client
from nova_reservation.engine import service
from nova_reservation.filters import enrolled_nodes
from nova_reservation.filters import passes as passes_mod
from nova_reservation.filters import reservation_filter
from nova_reservation.lease import write as lease_write
from nova_reservation.ledger import memory as ledger_mod

CONF = nova.conf.CONF
# The image that Nova's harness serves (its Glance stand-in).
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
# m1.medium (2 vCPU, 4 GB): one fits a node (MediumFakeDriver: 8 GB, less
# the 512 MB Nova keeps for the host).
ONE_PER_NODE = '3'
MICROVERSION = '2.91'   # unshelve onto a given host, as the engine does
# The cloud's Neutron stand-in, whose network the tests name.
NeutronFixture = neutron.NeutronFixture


def _all_types(service_types) -> dict:
    """{service type: its official type and aliases}, as
    ``ServiceTypes.all_types_by_service_type`` gives it.
    """
    return {name: list(aliases) for name, aliases in
            service_types._service_types_data[
                'all_types_by_service_type'].items()}


def nova_api_paste() -> str:
    """The api-paste.ini that the nova wheel ships."""
    return os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')


class NovaHarness(fixtures.Fixture):
    """What ``nova.test.TestCase.setUp`` builds for a cloud in one process,
    as a fixture of its own: configuration, a lock path, in-process
    messaging, the API database and the cell databases (SQLite) with their
    mappings, the default flavors, and Nova's process-wide caches reset, so
    that one process can build clouds one after another.

    It offers what Nova's fixtures ask of a test case: ``id``, ``flags``,
    ``stub_out`` and ``start_service``.
    """

    CELL_NAME = 'cell1'

    def __init__(self, name: str, cells: Iterable[str] = ()) -> None:
        super().__init__()
        self.name = name
        # Cells besides cell0 and cell1.
        self.cells = tuple(cells)
        self._alive = False

    def id(self) -> str:
        """The name that Nova's fixtures give executors and notifications
        (a test case's id in a test).
        """
        return self.name

    def cleanUp(self, raise_first: bool = True):
        # From here on, a patch asked for by a thread of this cloud that is
        # still running (Nova's CastAsCallFixture patches at each RPC
        # prepare) is not made: it would outlive the cloud and reach the
        # next one built in this process (native threads are not killed as
        # eventlet's green threads are).
        self._alive = False
        return super().cleanUp(raise_first=raise_first)

    def _setUp(self) -> None:
        self._alive = True
        # In the order of nova.test.TestCase.setUp; what only checks tests
        # (poisoned functions, warnings as errors, captured logs) is left
        # to the tests.
        self.useFixture(thread_pools.QuickStop())
        thread_pools.keep_nova_executors()
        for fixture in compat.test_case_id_fixtures(self.name):
            self.useFixture(fixture)
        files = self.useFixture(fixtures.TempDir()).path
        for path, value in compat.harness_patches(self.name, files).items():
            self.stub_out(path, value)
        self.stub_out('sqlalchemy.create_engine',
                      reuse.STATEMENTS.create_engine)
        # Each SDK client of each service looks up every service type's
        # aliases, and each lookup deep-copies the whole catalogue of
        # service types: fresh lists, without the copying machinery.
        self.stub_out('os_service_types.service_types.ServiceTypes.'
                      'all_types_by_service_type', property(_all_types))
        self._services = collections.Counter()
        self.useFixture(nova_fixtures.OpenStackSDKFixture())
        for fixture in compat.harness_fixtures(self.name):
            self.useFixture(fixture)
        lock_path = self.useFixture(fixtures.TempDir()).path
        self.useFixture(config_fixture.Config(lockutils.CONF)).config(
            lock_path=lock_path, group='oslo_concurrency')
        self.useFixture(nova_fixtures.ConfFixture(CONF))
        self.useFixture(nova_fixtures.RPCFixture('nova.test'))
        # Only set once the RPC fixture made the notifier (oslo registers
        # the option then).
        CONF.set_default('driver', ['test'],
                         group='oslo_messaging_notifications')
        for fixture in compat.rpc_fixtures():
            self.useFixture(fixture)
        self.useFixture(messaging.Wakeups())
        # nova-api's application and the policy enforcer: made once per
        # process (`reuse`).
        self.stub_out('nova.api.wsgi.Loader.load_app', reuse.load_app)
        self.stub_out('nova.policy.init', reuse.policy_init)
        objects_base.NovaObject.indirection_api = None
        registry = objects_base.NovaObjectRegistry._registry
        self.addCleanup(setattr, registry, '_obj_classes',
                        copy.copy(registry._obj_classes))
        objects.Service.clear_min_version_cache()
        compute_api.CELLS = []
        compat.reset_nova_globals()
        self.cell_mappings: dict = {}
        self.host_mappings: dict = {}
        self.useFixture(nova_fixtures.Database(database='api'))
        self._setup_cells()
        self.useFixture(nova_fixtures.DefaultFlavorsFixture())
        compute_rpcapi.reset_globals()
        # Requests go to the in-process services, never through a proxy.
        self.useFixture(fixtures.EnvironmentVariable('http_proxy'))
        self.flags(build_failure_weight_multiplier=0.0,
                   group='filter_scheduler')
        quota.UID_QFD_POPULATED_CACHE_BY_PROJECT = set()
        quota.UID_QFD_POPULATED_CACHE_ALL = False
        wsgi_app.init_global_data.reset()
        wsgi_app.init_application.reset()
        report.PLACEMENTCLIENT = None
        # Node identities in memory, not in files of the machine.
        self.useFixture(nova_fixtures.ComputeNodeIdFixture())
        scheduler_utils.reset_globals()
        self.useFixture(nova_fixtures.GreenThreadPoolShutdownWait())
        nova.crypto._KEYMGR = None

    def _setup_cells(self) -> None:
        """cell0, cell1 and the other `cells`, each a database of its own,
        and their mappings; cell1 is the default one.
        """
        databases = nova_fixtures.CellDatabases()
        ctxt = context.get_context()
        cells = ((('cell0', objects.CellMapping.CELL0_UUID),
                  (self.CELL_NAME, getattr(uuids, self.CELL_NAME))) +
                 tuple((c, getattr(uuids, c)) for c in self.cells))
        for name, cell_uuid in cells:
            cell = objects.CellMapping(
                context=ctxt, uuid=cell_uuid, name=name,
                transport_url='fake://nowhere/',
                database_connection=cell_uuid)
            cell.create()
            self.cell_mappings[name] = cell
            databases.add_cell_database(cell_uuid,
                                        default=name == self.CELL_NAME)
        self.useFixture(databases)

    def flags(self, **options) -> None:
        """Override configuration options (``group=`` names the group)
        until the harness is cleaned up.
        """
        group = options.pop('group', None)
        for name, value in options.items():
            CONF.set_override(name, value, group)

    def stub_out(self, old: str, new) -> None:
        """Replace the object at the dotted path `old` by `new` (while the
        cloud is up).
        """
        if self._alive:
            self.useFixture(fixtures.MonkeyPatch(old, new))

    def start_service(self, name: str, host: Optional[str] = None,
                      cell_name: str = CELL_NAME,
                      **kwargs) -> nova_service.Service:
        """Start a Nova service (conductor, scheduler, compute, ...) in
        this process; a compute node is mapped to its cell (`cell_name`),
        as ``nova-manage cell_v2 discover_hosts`` maps it.
        """
        if name == 'scheduler' and self._services[name]:
            raise RuntimeError('a scheduler runs already')
        if host is not None:
            self.useFixture(nova_fixtures.ConfPatcher(host=host))
        cell = None
        if name == 'compute':
            kwargs = dict(compat.compute_service_options(), **kwargs)
            cell = self.cell_mappings[cell_name]
        svc = self.useFixture(nova_fixtures.ServiceFixture(
            name, host, cell=cell, **kwargs))
        if cell is not None and (host or name) not in self.host_mappings:
            ctxt = context.get_context()
            mapping = objects.HostMapping(context=ctxt, host=host or name,
                                          cell_mapping=cell)
            mapping.create()
            self.host_mappings[mapping.host] = mapping
            with context.target_cell(ctxt, cell) as cctxt:
                node = objects.ComputeNode.get_by_service_id(
                    context=cctxt, service_id=svc.service.service_ref.id)
                node.mapped = 1
                node.save()
        self._services[name] += 1
        real_stop = svc.service.stop

        def stop(*args, **kwargs):
            # A stopped service may be started again.
            self._services[name] -= 1
            return real_stop(*args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(svc.service, 'stop', stop))
        return svc.service


class LeaseAPI:
    """Requests to /reservation/v1 with the harness's stand-in for Keystone
    (the headers Nova's own test clients send).
    """

    def __init__(self, base: str, user: str, project: str,
                 roles: Iterable[str]) -> None:
        self.base = base
        self.headers = {'X-Auth-User': user, 'X-Auth-Project-Id': project,
                        'X-Roles': ','.join(roles)}

    def __call__(self, method: str, path: str,
                 body=None) -> requests.Response:
        resp = requests.request(method, self.base + path, json=body,
                                headers=self.headers)
        resp.body = resp.json() if resp.content else None
        return resp


class EmbeddedCloud(fixtures.Fixture):
    """Nova in this process with nova-reservation configured, on compute
    nodes named `nodes` (10 vCPU, 8 GB and 1028 GB each, allocation ratios
    1.0), each served by a nova-compute of its own, and those of
    `services` ({service host: its nodes}), several served by one
    nova-compute as Ironic's are; in cell1 or the cell `cells` names
    ({node or service host: cell name});
    `cast_as_call`: Nova's casts wait for their outcome, so that a boot
    returns once its server is built.

    After setUp: ``api`` and ``admin_api`` (Nova's test clients of the
    compute API, a member and an admin of one project), ``placement``,
    ``glance``, ``neutron`` and ``notifier`` (Nova's stand-ins),
    ``keystone`` (this cloud's, `devcloud.keystone`), ``scheduler``,
    ``computes`` (by service host) and ``api_fixture``.
    """

    def __init__(self, name: str = 'embedded',
                 nodes: Iterable[str] = ('host1', 'host2'),
                 cast_as_call: bool = True,
                 cells: Optional[dict] = None,
                 services: Optional[dict] = None) -> None:
        super().__init__()
        self.name = name
        self.nodes = tuple(nodes)
        self.services = {host: tuple(served)
                         for host, served in (services or {}).items()}
        self.cast_as_call = cast_as_call
        self.cells = dict(cells or {})

    def _setUp(self) -> None:
        reuse.collect_less()
        # As the operator setup has it: nova-api and the engine with
        # Keystone credentials ([reservation]), which know the project of
        # Nova's test clients.
        self.keystone = self.useFixture(keystone.Keystone(
            [nova_fixtures.PROJECT_ID]))
        self.harness = self.useFixture(NovaHarness(
            self.name, sorted(set(self.cells.values()))))
        # The scheduler's copies (of the ledger, of Placement's usage) are
        # the process's: each cloud has its own, as a new scheduler process
        # has, lest a view of the cloud before, read less than
        # `ledger_max_age` ago, serve this one.  Their threads stop with
        # the cloud, before the next cloud's databases are set.
        usage = placement_usage.Usage(report.report_client_singleton)
        copies = {'LEDGER': ledger_mod.Ledger(), 'USAGE': usage,
                  'PASSES': passes_mod.Passes(usage),
                  'ENROLLED': enrolled_nodes.EnrolledNodes()}
        for name, made in copies.items():
            self.harness.stub_out(reservation_filter.__name__ + '.' + name,
                                  made)
        self.addCleanup(copies['LEDGER'].close)
        self.addCleanup(copies['ENROLLED'].close)
        self.addCleanup(usage.close)
        # nova-api's planner (its ledger copy, its view of the nodes) too:
        # a node of this cloud has the UUID of the one before (Nova's fake
        # driver's) and reaches the same generations in Placement, which a
        # view kept from before would take for what it read then.
        planners: dict = {}
        self.harness.stub_out(lease_write.__name__ + '._SHARED', planners)
        self.addCleanup(lambda: 'planner' in planners and
                        planners['planner'].ledger.close())
        self.flags(compute_driver='fake.MediumFakeDriver')
        self.flags(cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
                   disk_allocation_ratio=1.0)
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        # nova-api, the scheduler and the tables as the operator setup in
        # the operator setup (and nova-reservation-manage deploy) makes them.
        paste = os.path.join(self.useFixture(fixtures.TempDir()).path,
                             'api-paste.ini')
        with open(nova_api_paste()) as f:
            text = deploy.add_to_api_paste(f.read())
        with open(paste, 'w') as f:
            f.write(text)
        self.flags(api_paste_config=paste, group='wsgi')
        self.flags(available_filters=['nova.scheduler.filters.all_filters',
                                      deploy.FILTER_CLASS],
                   group='filter_scheduler')
        # Nova's default filters.
        self.flags(enabled_filters=deploy.scheduler_filters(
            ['ComputeFilter', 'ComputeCapabilitiesFilter',
             'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
             'ServerGroupAffinityFilter']), group='filter_scheduler')
        reuse.STATEMENTS.make_tables()

        if self.cast_as_call:
            self.useFixture(nova_fixtures.CastAsCallFixture(self.harness))
        self.harness.stub_out('placement.util.jsonschema',
                              schemas.PLACEMENT_SCHEMAS)
        self.harness.stub_out('nova.api.validation.validators.jsonschema',
                              schemas.NOVA_SCHEMAS)
        self.placement = self.useFixture(
            func_fixtures.PlacementFixture()).api
        self.neutron = self.useFixture(
            NeutronFixture(self.harness))
        self.glance = self.useFixture(
            nova_fixtures.GlanceFixture(self.harness))
        self.useFixture(nova_fixtures.RealPolicyFixture())
        self.notifier = self.useFixture(
            nova_fixtures.NotificationFixture(self.harness))
        self.harness.start_service('conductor')
        self.scheduler = self.harness.start_service('scheduler')
        self.computes: dict = {}
        for node in self.nodes:
            self.start_compute(node)
        for host, served in self.services.items():
            self.start_compute(host, served)
        self.api_fixture = self.useFixture(nova_fixtures.OSAPIFixture(
            api_version='v2.1'))
        self.api = self.api_fixture.api
        self.api.microversion = MICROVERSION
        self.admin_api = self.api_fixture.admin_api
        self.admin_api.microversion = MICROVERSION

    def flags(self, **options) -> None:
        """Override Nova's (and nova-reservation's) configuration options
        while the cloud runs (``group=`` names the group).
        """
        self.harness.flags(**options)

    def start_compute(self, host: str,
                      nodes: Optional[Iterable[str]] = None
                      ) -> nova_service.Service:
        """Start the nova-compute service `host` of another node (named as
        the service) or of `nodes`.
        """
        cell_name = self.cells.get(host, NovaHarness.CELL_NAME)
        if nodes is None:
            service = self.harness.start_service('compute', host=host,
                                                 cell_name=cell_name)
        else:
            served = list(nodes)

            def init_host(driver, host):
                # The fake driver's nodes, as Nova's tests set them, from
                # its start on (its own: one named as the service).
                driver._host = host
                driver._set_nodes(served)
            with fixtures.MonkeyPatch('nova.virt.fake.FakeDriver.init_host',
                                      init_host):
                service = self.harness.start_service('compute', host=host,
                                                     cell_name=cell_name)
            # Each node mapped to the cell, as `nova-manage cell_v2
            # discover_hosts` maps them.
            ctxt = context.get_admin_context()
            with context.target_cell(
                    ctxt, self.harness.cell_mappings[cell_name]) as cctxt:
                for node in objects.ComputeNodeList.get_all_by_host(
                        cctxt, host):
                    node.mapped = 1
                    node.save()
        self.computes[host] = service
        return service

    def api_client(self, user: str, project: str,
                   roles: Iterable[str] = ('reader', 'member')
                   ) -> nova_api_client.TestOpenStackClient:
        """A client of the compute API as `user` of `project`."""
        client = nova_api_client.TestOpenStackClient(
            user, self.api_fixture.base_url, project_id=project,
            roles=list(roles))
        client.microversion = MICROVERSION
        return client

    def lease_api(self, user: str = 'fake',
                  project: str = nova_fixtures.PROJECT_ID,
                  roles: Iterable[str] = ('reader', 'member')) -> LeaseAPI:
        """A client of the lease API mounted in nova-api."""
        return LeaseAPI(self.api_fixture.base_url.rsplit('/', 1)[0] +
                        '/reservation/v1', user, project, roles)

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

    def engine(self, **kwargs) -> service.Engine:
        """An engine on this cloud (``service.Engine``'s keyword
        arguments: clock, on_event, ...).
        """
        return service.Engine(self.nova_client(), **kwargs)

    def boot(self, name: str, flavor: str = ONE_PER_NODE,
             hints: Optional[dict] = None, count: Optional[int] = None,
             api: Optional[nova_api_client.TestOpenStackClient] = None
             ) -> nova_api_client.APIResponse:
        """POST /servers (no network) with scheduler `hints`, `count`
        servers at once; returns the response, whatever its status.
        """
        server = {'name': name, 'imageRef': IMAGE,
                  'flavorRef': 'http://fake.server/%s' % flavor,
                  'networks': 'none'}
        if count:
            server['min_count'] = server['max_count'] = count
        body = {'server': server, 'os:scheduler_hints': dict(hints or {})}
        return (api or self.api).api_post('/servers', body,
                                          check_response_status=False)
