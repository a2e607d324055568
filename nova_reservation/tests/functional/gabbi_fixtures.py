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

"""Fixtures of the lease API's HTTP contract (``gabbits/*.yaml``).

Each YAML file runs against an embedded cloud of its own (`EmbeddedCloud`):
real Nova in this process with the boot hook, the lease API and the
scheduler filter configured as an operator configures them, and the engine,
which runs every due event before each request, as a deployed engine keeps
up (`EngineKeepsUp`).  What a file needs to know of its cloud (projects,
dates relative to now, leases prepared in a given state) is in the
environment, where the file reads it with ``$ENVIRON``.
"""

import datetime
import os
import time
from typing import Callable, Optional

import fixtures
from gabbi import fixture
from nova.tests import fixtures as nova_fixtures
from oslo_utils import uuidutils

from devcloud import embedded
from devcloud import enforcement as standin
from nova_reservation.tests.functional import base

# Dates a file can use, in minutes from the start of its cloud: far enough
# ahead that a file's requests all run before the first of them.
MINUTES_AHEAD = (60, 90, 120, 130, 150, 180, 200, 240, 260, 300, 400, 460)
USER_DATE = '%Y-%m-%d %H:%M'
ISO_DATE = '%Y-%m-%dT%H:%M:%S'


class Cloud:
    """The embedded cloud as these fixtures use it, and the one place that
    knows how it is built: by the functional tests' base class, whose setUp
    starts it and whose cleanups stop it.
    """

    IMAGE = base.IMAGE
    # m1.medium: one fits a node.
    ONE_PER_NODE = base.ONE_PER_NODE

    class _Builder(base.ReservationTestCase):

        def runTest(self) -> None:
            """Never run: the YAML files are the tests."""

    def __init__(self, nodes: tuple) -> None:
        self.nodes = nodes
        self._case = self._Builder()
        self._case.NODES = nodes

    def start(self) -> None:
        try:
            self._case.setUp()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Run every cleanup, then raise the first that failed."""
        failed = []
        # The same list unittest's and testtools' addCleanup fill.
        while self._case._cleanups:
            function, args, kwargs = self._case._cleanups.pop()
            try:
                function(*args, **kwargs)
            except Exception as e:
                failed.append(e)
        if failed:
            raise failed[0]

    def nova_api(self) -> Callable:
        """nova-api, as a WSGI application."""
        return self._case.api_fixture.app()

    def lease_api(self) -> embedded.LeaseAPI:
        """A member of PROJECT_ID (user "fake") on the lease API."""
        return self._case.lease_api()

    def run_engine(self, at: Optional[float] = None) -> None:
        """Run the events due at `at` (now by default), until none is."""
        self._case.run_engine(at=at)

    def boot_leased(self, start: str, end: str) -> dict:
        """A server (one m1.medium) that "fake" boots with lease_params."""
        resp = self._case.boot(base.params(start, end))
        if resp.status != 202:
            raise RuntimeError('boot refused: %s' % resp.content)
        return resp.body['server']

    def set_computes(self, status: str) -> None:
        """Enable or disable every compute service."""
        for node in self.nodes:
            self._case.set_compute(node, status)

    def add_projects(self, *project_ids: str) -> None:
        """Projects that the cloud's Keystone knows from now on."""
        self._case.cloud.keystone.projects.update(project_ids)

    def set_options(self, group: str, **values) -> None:
        """Set options until the cloud stops."""
        self._case.flags(group=group, **values)


# The cloud of the file that runs now: one at a time in a process, since a
# file's fixtures are started when the file starts and stopped when it ends.
_CLOUD: Optional[Cloud] = None


def _nova_api(environ: dict, start_response: Callable):
    """WSGI: nova-api of the running file's cloud."""
    return _running().nova_api()(environ, start_response)


def nova_api() -> Callable:
    """The intercept that the YAML files' requests go to.

    It is asked for when the files are loaded, before any cloud exists;
    their requests go to the cloud of the file that runs.
    """
    return _nova_api


def _running() -> Cloud:
    if _CLOUD is None:
        raise RuntimeError('no embedded cloud is running: list '
                           'EmbeddedCloud first in the fixtures of the file')
    return _CLOUD


def _set_environ(values: dict) -> Callable:
    """Set environment variables; returns what puts them back."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)

    def restore() -> None:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return restore


def _utc_in(**delta) -> datetime.datetime:
    return (datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) + datetime.timedelta(**delta))


def dates() -> dict:
    """IN_<n>_MIN: <n> minutes from now, to the minute, as a user writes it
    ("2026-12-01 10:00"), and IN_<n>_MIN_ISO in ISO 8601
    ("2026-12-01T10:00:00"; the API shows it with ".000000" added).
    AGO_10_MIN is in the past, IN_31_DAYS beyond the longest lease from
    now, IN_400_DAYS beyond how far ahead a lease may start.
    """
    values = {}
    for minutes in MINUTES_AHEAD:
        when = _utc_in(minutes=minutes).replace(second=0, microsecond=0)
        values['IN_%d_MIN' % minutes] = when.strftime(USER_DATE)
        values['IN_%d_MIN_ISO' % minutes] = when.strftime(ISO_DATE)
    values['AGO_10_MIN'] = _utc_in(minutes=-10).strftime(USER_DATE)
    values['IN_31_DAYS'] = _utc_in(days=31).strftime(USER_DATE)
    values['IN_400_DAYS'] = _utc_in(days=400).strftime(USER_DATE)
    return values


class EmbeddedCloud(fixture.GabbiFixture):
    """Real Nova in this process with two compute nodes, host1 and host2,
    each the size of one m1.medium (flavor 3); the file's requests go to
    its nova-api.

    Sets PROJECT_ID (the project of the user "fake"), OTHER_PROJECT_ID,
    ADMIN_PROJECT_ID, IMAGE_ID (an image in Glance), PUBLIC_NETWORK_ID (an
    external network, 172.24.4.0/24, pool .10 to .99) and the dates of
    `dates`.
    """

    NODES = ('host1', 'host2')

    def start_fixture(self) -> None:
        global _CLOUD
        if _CLOUD is not None:
            raise RuntimeError('an embedded cloud is running already')
        cloud = Cloud(self.NODES)
        cloud.start()
        _CLOUD = cloud
        others = dict(OTHER_PROJECT_ID=uuidutils.generate_uuid(dashed=False),
                      ADMIN_PROJECT_ID=uuidutils.generate_uuid(dashed=False))
        cloud.add_projects(*others.values())
        self._restore_environ = _set_environ(dict(
            dates(), **others,
            PROJECT_ID=nova_fixtures.PROJECT_ID,
            IMAGE_ID=Cloud.IMAGE,
            PUBLIC_NETWORK_ID=embedded.NeutronFixture.public_network['id']))

    def stop_fixture(self) -> None:
        global _CLOUD
        cloud, _CLOUD = _CLOUD, None
        self._restore_environ()
        cloud.stop()


class EmbeddedCloudThreeNodes(EmbeddedCloud):
    """As `EmbeddedCloud`, with a third node, host3."""

    NODES = ('host1', 'host2', 'host3')


class StartsAtMostAYearAhead(fixture.GabbiFixture):
    """An operator's limit: `[reservation] max_advance` of 365 days."""

    def start_fixture(self) -> None:
        _running().set_options('reservation', max_advance=365 * 86400)

    def stop_fixture(self) -> None:
        """The option goes with the cloud."""


class ApprovalAboveTwoVCPUs(fixture.GabbiFixture):
    """An operator's threshold: a lease of more than two vCPUs (one
    m1.medium) waits for an admin's approval (`[reservation]
    approval_vcpus`).
    """

    def start_fixture(self) -> None:
        _running().set_options('reservation', approval_vcpus=2)

    def stop_fixture(self) -> None:
        """The option goes with the cloud."""


class EngineKeepsUp(fixtures.Fixture):
    """Before each request, the engine runs every event that is due (as a
    deployed engine keeps up): a lease deleted by one request is gone for
    the next, a retried event has run.
    """

    def _setUp(self) -> None:
        if _CLOUD is not None:
            _CLOUD.run_engine()


def _in_seconds(seconds: float) -> str:
    return _utc_in(seconds=seconds).strftime(ISO_DATE)


class EndedLease(fixture.GabbiFixture):
    """A lease of one m1.medium that lasted five seconds and has ended:
    TERMINATED.  Sets ENDED_LEASE_ID.
    """

    def start_fixture(self) -> None:
        cloud = _running()
        # Its end, to the second, at least four seconds after the request:
        # a slow machine may take two to answer it.
        end = time.time() + 5
        resp = cloud.lease_api()('POST', '/leases', {
            'name': 'ended', 'start_date': 'now',
            'end_date': _in_seconds(5),
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': Cloud.ONE_PER_NODE,
                              'amount': 1}]})
        if resp.status_code != 201:
            raise RuntimeError('lease not created: %s' % resp.text)
        lease = resp.body['lease']
        # Its end on the real clock, so that its capacity is free as well.
        time.sleep(max(0.0, end + 1 - time.time()))
        cloud.run_engine()
        resp = cloud.lease_api()('GET', '/leases/%s' % lease['id'])
        if resp.body['lease']['status'] != 'TERMINATED':
            raise RuntimeError('lease not ended: %s' % resp.text)
        self._restore_environ = _set_environ({'ENDED_LEASE_ID': lease['id']})

    def stop_fixture(self) -> None:
        self._restore_environ()


class LeaseWithFailedStart(fixture.GabbiFixture):
    """A server booted with lease_params (user "fake" of PROJECT_ID) whose
    lease failed to start, every compute service being disabled then: the
    lease and its start event are in ERROR.  The services are enabled
    again, so that a retry succeeds.  Sets FAILED_LEASE_ID and
    FAILED_SERVER_ID.
    """

    def start_fixture(self) -> None:
        cloud = _running()
        # No retry by the engine itself: the first failure is final.
        cloud.set_options('reservation', event_retries=0)
        server = cloud.boot_leased(_in_seconds(30), _in_seconds(3600))
        cloud.run_engine()   # the server is shelved until the start
        cloud.set_computes('disabled')
        cloud.run_engine(at=time.time() + 31)
        cloud.set_computes('enabled')
        lease_id = server['reservation']['lease_id']
        resp = cloud.lease_api()('GET', '/leases/%s' % lease_id)
        if resp.body['lease']['status'] != 'ERROR':
            raise RuntimeError('lease start did not fail: %s' % resp.text)
        self._restore_environ = _set_environ({
            'FAILED_LEASE_ID': lease_id, 'FAILED_SERVER_ID': server['id']})

    def stop_fixture(self) -> None:
        self._restore_environ()


class Enforced(fixture.GabbiFixture):
    """Usage enforcement as an operator sets it up after Blazar's guide:
    MaxLeaseDurationFilter (two hours; OTHER_PROJECT_ID exempt) and
    ExternalServiceFilter against a stand-in service on loopback that
    refuses a lease named "refused-..." (with its reason), answers
    garbage to "garbage-..." and is too slow for "slow-...".
    """

    ANSWERS = {'refused': standin.refuse('lease names are checked'),
               'garbage': standin.GARBAGE,
               'slow': standin.slow(1.5)}

    def start_fixture(self) -> None:
        self.service = standin.EnforcementService()
        self.service.setUp()
        self.service.decide = lambda path, body: self.ANSWERS.get(
            str(body['lease'].get('name')).split('-')[0], standin.ACCEPT)
        _running().set_options(
            'enforcement',
            enabled_filters=['MaxLeaseDurationFilter',
                             'ExternalServiceFilter'],
            max_lease_duration=7200,
            max_lease_duration_exempt_project_ids=[
                os.environ['OTHER_PROJECT_ID']],
            external_service_base_endpoint=self.service.url,
            external_service_timeout=0.5)

    def stop_fixture(self) -> None:
        self.service.cleanUp()
