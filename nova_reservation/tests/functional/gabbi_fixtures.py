"""Fixtures of the lease API's HTTP contract (``gabbits/*.yaml``).

Each YAML file runs against an embedded cloud of its own (`EmbeddedCloud`):
real Nova in this process with the boot hook, the lease API and the
scheduler filter configured as an operator configures them, and the engine,
which runs every due event before each request, as a deployed engine keeps
up (`EngineKeepsUp`).  What a file needs to know of its cloud (projects,
dates relative to now, leases prepared in a given state) is in the
environment, where the file reads it with ``$ENVIRON``.
"""

import os
import time
from typing import Callable, Optional

import fixtures
from gabbi import fixture
from nova.tests import fixtures as nova_fixtures
from oslo_utils import uuidutils

from nova_reservation.tests.functional import base

# Dates a file can use, in minutes from the start of its cloud: long enough
# ahead that a file's requests all run before the first of them.
MINUTES_AHEAD = (60, 90, 120, 130, 150, 180, 200, 240, 260, 300)

# The cloud of the file that runs now: one at a time in a process, since a
# file's fixtures are started when the file starts and stopped when it ends.
_CLOUD: Optional[base.ReservationTestCase] = None


def _nova_api(environ: dict, start_response: Callable):
    """WSGI: nova-api of the running file's cloud."""
    if _CLOUD is None:
        raise RuntimeError('no embedded cloud is running')
    return _CLOUD.api_fixture.app()(environ, start_response)


def nova_api() -> Callable:
    """The intercept that the YAML files' requests go to.

    Their requests are made when the files run, after their cloud started;
    the intercept is asked for at loading, before any cloud exists.
    """
    return _nova_api


class _EmbeddedCloud(base.ReservationTestCase):
    """The functional tests' embedded cloud, made outside a test run: its
    setUp starts the cloud and its cleanups stop it.
    """

    def runTest(self) -> None:
        """Never run: the YAML files are the tests."""


def _start_cloud(nodes: tuple) -> base.ReservationTestCase:
    cloud = _EmbeddedCloud()
    cloud.NODES = nodes
    try:
        cloud.setUp()
    except BaseException:
        cloud.doCleanups()
        raise
    return cloud


def _stop_cloud(cloud: base.ReservationTestCase) -> None:
    if not cloud.doCleanups():
        raise RuntimeError('the embedded cloud did not stop cleanly')


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


def dates() -> dict:
    """IN_<n>_MIN: <n> minutes from now, to the minute, as a user writes it
    ("2026-12-01 10:00"), and IN_<n>_MIN_ISO in ISO 8601
    ("2026-12-01T10:00:00"; the API shows it with ".000000" added).
    AGO_10_MIN is in the past, IN_31_DAYS beyond the longest lease from
    now, IN_400_DAYS beyond how far ahead a lease may start.
    """
    values = {}
    for minutes in MINUTES_AHEAD:
        when = base.when(minutes)[:16]
        values['IN_%d_MIN' % minutes] = when
        values['IN_%d_MIN_ISO' % minutes] = when.replace(' ', 'T') + ':00'
    values['AGO_10_MIN'] = base.when(-10)[:16]
    values['IN_31_DAYS'] = base.when(31 * 24 * 60)[:16]
    values['IN_400_DAYS'] = base.when(400 * 24 * 60)[:16]
    return values


class EmbeddedCloud(fixture.GabbiFixture):
    """Real Nova in this process with two compute nodes, host1 and host2,
    each the size of one m1.medium (flavor 3); the file's requests go to
    its nova-api.

    Sets PROJECT_ID (the project of the user "fake"; its servers and
    leases), OTHER_PROJECT_ID and ADMIN_PROJECT_ID, and the dates of
    `dates`.
    """

    NODES = ('host1', 'host2')

    def start_fixture(self) -> None:
        global _CLOUD
        if _CLOUD is not None:
            raise RuntimeError('an embedded cloud is running already')
        _CLOUD = _start_cloud(self.NODES)
        self._restore_environ = _set_environ(dict(
            dates(),
            PROJECT_ID=nova_fixtures.PROJECT_ID,
            OTHER_PROJECT_ID=uuidutils.generate_uuid(dashed=False),
            ADMIN_PROJECT_ID=uuidutils.generate_uuid(dashed=False),
            IMAGE_ID=base.IMAGE))

    def stop_fixture(self) -> None:
        global _CLOUD
        cloud, _CLOUD = _CLOUD, None
        self._restore_environ()
        if cloud is not None:
            _stop_cloud(cloud)


class EmbeddedCloudThreeNodes(EmbeddedCloud):
    """As `EmbeddedCloud`, with a third node, host3."""

    NODES = ('host1', 'host2', 'host3')


class EngineKeepsUp(fixtures.Fixture):
    """Before each request, the engine runs every event that is due (as a
    deployed engine keeps up): a lease deleted by one request is gone for
    the next, a retried event has run.
    """

    def _setUp(self) -> None:
        if _CLOUD is not None:
            _CLOUD.run_engine()


def _running() -> base.ReservationTestCase:
    if _CLOUD is None:
        raise RuntimeError('list EmbeddedCloud before this fixture')
    return _CLOUD


def _in_seconds(seconds: float) -> str:
    return base.when(seconds / 60.0)


class EndedLease(fixture.GabbiFixture):
    """A lease of one m1.medium that lasted three seconds and has ended:
    TERMINATED.  Sets ENDED_LEASE_ID.
    """

    def start_fixture(self) -> None:
        cloud = _running()
        end = time.time() + 3
        resp = cloud.lease_api()('POST', '/leases', {
            'name': 'ended', 'start_date': 'now',
            'end_date': _in_seconds(3),
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': base.ONE_PER_NODE,
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
        cloud.flags(start_retries=0, group='reservation')
        resp = cloud.boot(base.params(_in_seconds(30), base.when(60)))
        if resp.status != 202:
            raise RuntimeError('boot refused: %s' % resp.content)
        server = resp.body['server']
        cloud.run_engine()   # the server is shelved until the start
        for node in cloud.NODES:
            cloud.set_compute(node, 'disabled')
        cloud.run_engine(at=time.time() + 31)
        for node in cloud.NODES:
            cloud.set_compute(node, 'enabled')
        lease_id = server['reservation']['lease_id']
        resp = cloud.lease_api()('GET', '/leases/%s' % lease_id)
        if resp.body['lease']['status'] != 'ERROR':
            raise RuntimeError('lease start did not fail: %s' % resp.text)
        self._restore_environ = _set_environ({
            'FAILED_LEASE_ID': lease_id, 'FAILED_SERVER_ID': server['id']})

    def stop_fixture(self) -> None:
        self._restore_environ()
