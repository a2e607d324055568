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

"""A lease's events run strictly in order on any number of engines, an
event that waits on a stuck server times out, and a lease's status only
moves the allowed ways: on MariaDB, with Nova's server calls answered by a
stand-in whose servers take as long as a test wants.
"""

import datetime
import json
import re
import threading
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
import testtools

from devcloud import invariants
from devcloud import machine
from devcloud import standins
from nova_reservation.capacity import epoch
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import changes as db_changes
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.engine import nova_client
from nova_reservation.engine import service
from nova_reservation.lease import outcomes
from nova_reservation import status

STORE = db_api.Context()


class Servers:
    """Nova's server calls: a server unshelved stays busy for `busy` looks
    (None: for ever), then is active.
    """

    def __init__(self, busy=2, fail_first: bool = False) -> None:
        self.busy = busy
        # The first unshelve fails: the server stays offloaded.
        self.fail_first = fail_first
        self.servers: dict = {}
        self.calls: list = []
        self._lock = threading.Lock()
        self.server = standins.serve(self.app, 0)

    def add(self, uuid: str, vm_state: str = 'shelved_offloaded') -> None:
        self.servers[uuid] = {'id': uuid, 'name': uuid[:8], 'tags': [],
                              'OS-EXT-STS:vm_state': vm_state,
                              'OS-EXT-STS:task_state': None,
                              'OS-EXT-SRV-ATTR:hypervisor_hostname': 'n1',
                              'OS-EXT-SRV-ATTR:host': 'n1', 'looks': 0}

    def app(self, environ, start_response):
        method, path = environ['REQUEST_METHOD'], environ['PATH_INFO']
        size = int(environ.get('CONTENT_LENGTH') or 0)
        body = json.loads(environ['wsgi.input'].read(size) or b'null')
        match = re.match(r'^/v2.1/servers/([^/]+)(/.*)?$', path)
        with self._lock:
            if path.startswith('/v2.1/os-hypervisors'):
                return standins.json_reply(start_response, '200 OK', {
                    'hypervisors': [{'hypervisor_hostname': 'n1',
                                     'service': {'host': 'n1'}}]})
            server = self.servers.get(match.group(1)) if match else None
            if server is None:
                return standins.json_reply(start_response, '404 Not Found', {})
            self.calls.append((method, (match.group(2) or '') + (
                ' ' + next(iter(body)) if isinstance(body, dict) else '')))
            if method == 'GET':
                self._look(server)
                return standins.json_reply(start_response, '200 OK', {
                    'server': server})
            if method == 'DELETE':
                del self.servers[server['id']]
                return standins.json_reply(start_response, '204 No Content',
                                           {})
            if method == 'PUT':   # a tag
                server['tags'].append(path.rsplit('/', 1)[1])
                return standins.json_reply(start_response, '201 Created', {})
            if 'unshelve' in body and self.fail_first:
                self.fail_first = False
                server['fault'] = {'message': 'no valid host'}
            elif 'unshelve' in body:
                server['OS-EXT-STS:task_state'] = 'spawning'
                server['looks'] = 0
            return standins.json_reply(start_response, '202 Accepted', {})

    def _look(self, server) -> None:
        if server['OS-EXT-STS:task_state'] is None:
            return
        server['looks'] += 1
        if self.busy is not None and server['looks'] > self.busy:
            server['OS-EXT-STS:task_state'] = None
            server['OS-EXT-STS:vm_state'] = 'active'


class Clock:
    def __init__(self) -> None:
        self.now = epoch.to_epoch(db_api.utcnow())

    def __call__(self) -> float:
        return self.now


class OrderTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        machine.require(self, machine.mariadb_available(), 'MariaDB')
        self.useFixture(machine.MariaDBStore())
        self.clock = Clock()
        self.done: list = []   # events as they finish

    def nova(self, busy=2, fail_first=False, check=True) -> Servers:
        nova = Servers(busy, fail_first)
        self.addCleanup(nova.server.shutdown)
        if check:
            self.addCleanup(self.assert_invariants, nova)
        return nova

    def assert_invariants(self, nova: Servers) -> None:
        """What must hold after any scenario (`devcloud.invariants`), with
        the stand-in's servers (and no nodes).
        """
        self.assertEqual([], invariants.violations(
            db_api.get_engine(), list(nova.servers.values()),
            lambda path: {'resource_providers': []}, db_api.utcnow()))

    def engine(self, nova: Servers) -> service.Engine:
        client = nova_client.NovaClient(ks_adapter.Adapter(
            ks_session.Session(), endpoint_override='http://127.0.0.1:%d'
            '/v2.1' % nova.server.server_port))
        engine = service.Engine(client, clock=self.clock,
                                on_event=self.on_event)
        self.addCleanup(engine.close)
        return engine

    def on_event(self, event, lease, outcome, details) -> None:
        self.done.append(event.event_type)

    def server_lease(self, nova: Servers, start_in: float,
                     end_in: float) -> tuple:
        """A lease of one RESERVED server; (lease id, server uuid)."""
        now = db_api.utcnow()
        start = now + datetime.timedelta(seconds=start_in)
        end = now + datetime.timedelta(seconds=end_in)
        lease_id, rid, uuid_ = (str(uuid.uuid4()) for _ in range(3))
        db_leases.create(
            STORE, db_changes.generation(STORE),
            dict(id=lease_id, name='l', project_id='p', user_id='u',
                 start_at=start, end_at=end, status='PENDING',
                 on_end='delete', created_at=now),
            [(dict(id=rid, lease_id=lease_id, project_id='p',
                   resource_type='server', vcpus=1, memory_mb=512,
                   disk_gb=1, amount=1, status='pending'),
              [dict(node='n1', host='n1', start_at=start, end_at=end,
                    vcpus=1, memory_mb=512, disk_gb=1)])],
            [dict(event_type='start', due_at=start),
                dict(event_type='end', due_at=end)])
        db_bindings.bind_servers(STORE, lease_id, rid, [uuid_])
        db_bindings.set_binding(STORE, uuid_, state='RESERVED')
        nova.add(uuid_)
        return lease_id, uuid_

    def events(self, lease_id: str) -> dict:
        return {e.event_type: e for e in db_events.of_lease(STORE, lease_id)}

    def passes(self, engines, count: int) -> None:
        for _ in range(count):
            for engine in engines:
                engine.run_once()
            self.clock.now += 1.0

    def test_an_end_waits_for_a_start_that_waits_on_nova(self):
        # The engine was away: start and end are both due; the first
        # unshelve fails, and the start is retried a few seconds later.
        conf.CONF.set_override('retry_backoff', 3, group='reservation')
        self.addCleanup(conf.CONF.clear_override, 'retry_backoff',
                        group='reservation')
        nova = self.nova(busy=3, fail_first=True)
        lease_id, server = self.server_lease(nova, -20, -10)
        self.passes([self.engine(nova)], 16)
        events = self.events(lease_id)
        self.assertEqual((status.DONE, status.DONE),
                         (events['start'].status, events['end'].status))
        self.assertEqual(['start', 'end'], self.done)
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease_id).status)
        # Unshelved, then deleted; nothing after the delete.
        self.assertLess(nova.calls.index(('POST', '/action unshelve')),
                        nova.calls.index(('DELETE', '')))
        self.assertEqual(('DELETE', ''), nova.calls[-1])
        self.assertNotIn(server, nova.servers)

    def test_two_engines_keep_the_order(self):
        nova = self.nova(busy=4)
        lease_id, server = self.server_lease(nova, -20, -10)
        first, second = self.engine(nova), self.engine(nova)
        first.run_once()   # the start: waiting on Nova, handed back
        self.clock.now += 0.1
        second.run_once()  # the end is due, but must wait
        self.assertEqual(status.UNDONE, self.events(lease_id)['end'].status)
        self.assertNotIn(('DELETE', ''), nova.calls)
        self.passes([first, second], 12)
        events = self.events(lease_id)
        self.assertEqual((1, 1), (events['start'].runs, events['end'].runs))
        self.assertEqual(['start', 'end'], self.done)
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease_id).status)
        self.assertEqual(('DELETE', ''), nova.calls[-1])

    def test_an_event_on_a_stuck_server_times_out(self):
        conf.CONF.set_override('action_timeout', 30, group='reservation')
        self.addCleanup(conf.CONF.clear_override, 'action_timeout',
                        group='reservation')
        nova = self.nova(busy=None)
        lease_id, _ = self.server_lease(nova, -1, 3600)
        engine = self.engine(nova)
        self.passes([engine], 5)
        self.assertEqual('PENDING', db_leases.get(STORE, lease_id).status)
        self.clock.now += 31
        self.passes([engine], 2)
        lease = db_leases.get(STORE, lease_id)
        self.assertEqual('ERROR', lease.status)
        self.assertIn('timed out', lease.status_reason)
        self.assertEqual(status.ERROR, self.events(lease_id)['start'].status)

    def test_a_late_outcome_does_not_bring_a_lease_back(self):
        # The test claims the end itself while the start is claimed, which
        # the engine never does: the events' order is not checked after.
        nova = self.nova(check=False)
        for final in ('TERMINATED', 'DELETING'):
            lease_id, _ = self.server_lease(nova, -20, -10)
            start = self.events(lease_id)['start']
            self.assertTrue(db_events.claim(STORE, start, 'slow',
                                            db_api.utcnow(), 300))
            rows = outcomes.record(STORE, [outcomes.Outcome(
                start.id, 'slow', status.UNDONE, due_at=db_api.utcnow())])
            self.assertEqual({start.id}, rows)
            self.assertTrue(db_events.claim(STORE, start, 'slow',
                                            db_api.utcnow(), 300))
            if final == 'DELETING':
                db_leases.begin_delete(STORE, lease_id)
            else:
                end = self.events(lease_id)['end']
                self.assertTrue(db_events.claim(
                    STORE, end, 'e', db_api.utcnow(),
                    300))
                outcomes.record(STORE, [outcomes.Outcome(
                    end.id, 'e', status.DONE, lease_id=lease_id,
                    lease_status=final)])
            self.assertEqual(final, db_leases.get(STORE, lease_id).status)
            # The slow engine comes back with the start's outcome.
            outcomes.record(STORE, [outcomes.Outcome(
                start.id, 'slow', status.DONE, lease_id=lease_id,
                lease_status='ACTIVE')])
            self.assertEqual(final, db_leases.get(STORE, lease_id).status)

    def test_a_retried_event_puts_the_lease_back_where_it_was(self):
        nova = self.nova(busy=0)
        lease_id, _ = self.server_lease(nova, -1, 3600)
        engine = self.engine(nova)
        self.passes([engine], 4)
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease_id).status)
        # An event of the running lease failed for good.
        event = self.events(lease_id)['end']
        self.assertTrue(db_events.claim(STORE, event, 'e', db_api.utcnow() +
                                        datetime.timedelta(hours=2), 1))
        outcomes.record(STORE, [outcomes.Outcome(
            event.id, 'e', status.ERROR, lease_id=lease_id,
            lease_status='ERROR', error='boom')])
        self.assertEqual('ERROR', db_leases.get(STORE, lease_id).status)
        self.assertTrue(db_leases.retry_event(STORE, lease_id, event.id))
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease_id).status)
