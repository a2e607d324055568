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

"""The main job: a reservation scenario on real Nova, in one process.

Nova's own in-process cloud (API, conductor, scheduler, three fake compute
nodes, Placement, SQLite, in-process messaging; ``devcloud.embedded``)
with the hook, the filter and the engine configured as an operator
configures them.  The engine runs on the real clock; the lease timeline
is printed as it happens, then one closing line, OK or FAILED (exit
status 1).  Nova's log is kept in memory and written to a file only if
the scenario fails.

Run: ``python -m devcloud.demo`` (``tools/demo``).
"""

import collections
import datetime
import json
import logging
import os
import sys
import tempfile
import threading
import time
import traceback
from typing import Callable, TYPE_CHECKING

if TYPE_CHECKING:
    from devcloud import embedded

NODES = ('host1', 'host2', 'host3')
# The lease starts this long after the boot and lasts as long.
LEASE_SECONDS = 15


class ScenarioFailed(Exception):
    """The scenario did not go as it should; the message says how."""


class RecentLog(logging.Handler):
    """The latest records of the process's log, kept in memory."""

    def __init__(self, size: int = 5000) -> None:
        super().__init__(logging.INFO)
        self.records: collections.deque = collections.deque(maxlen=size)
        self.setFormatter(logging.Formatter(
            '%(asctime)s %(levelname)s [%(name)s] %(message)s'))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def write(self) -> str:
        """Write the records to a file; return its path."""
        fd, path = tempfile.mkstemp(prefix='nova-reservation-demo-',
                                    suffix='.log')
        with os.fdopen(fd, 'w') as f:
            for record in list(self.records):
                f.write(self.format(record) + '\n')
        return path


def quiet_nova() -> RecentLog:
    """Keep Nova's log and Python's warnings off the terminal: every
    logger writes to memory only, warnings included.  Nova runs on native
    threads (the eventlet mode is deprecated and says so).
    """
    os.environ['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = '1'
    recent = RecentLog()
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(recent)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    return recent


def iso(t: datetime.datetime) -> str:
    return t.replace(microsecond=0).isoformat() + 'Z'


class Scenario:
    """A lease of three servers at once on a three-node cloud, refusals
    while it holds the capacity, its start and its end, on the real clock.
    """

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.hosts: set = set()

    def run(self, cloud: 'embedded.EmbeddedCloud') -> str:
        """Run the scenario on `cloud` (an ``EmbeddedCloud``); return what
        happened, in one line.
        """
        # (Imported once Nova is told to use native threads: see main.)
        from nova_reservation.db import api as db_api
        from nova_reservation.db import bindings as db_bindings
        from nova_reservation.db import leases as db_leases
        store = db_api.Context()

        cloud.flags(engine_poll_interval=0.2, action_poll_interval=0.2,
                    group='reservation')
        self.say('embedded Nova up: nodes %s (10 vCPU, 8 GB each); flavor '
                 'm1.medium = 2 vCPU, 4 GB: one per node'
                 % ', '.join(NODES))
        engine = cloud.engine(on_event=self._event)
        runner = threading.Thread(target=engine.run_forever, daemon=True)
        runner.start()
        try:
            start = db_api.utcnow() + datetime.timedelta(
                seconds=LEASE_SECONDS)
            end = start + datetime.timedelta(seconds=LEASE_SECONDS)
            lease = self._boot_lease(cloud, start, end)
            self._refusals(cloud, start, end)
            servers = [b.instance_uuid
                       for b in db_bindings.of_lease(store,
                                                     lease['lease_id'])]
            self._watch(cloud, servers, start.timestamp(),
                        deadline=end.timestamp() + 30)
        finally:
            engine.stop()
            runner.join()
        status = db_leases.get(store, lease['lease_id']).status
        self.say('lease l1 is %s' % status)
        if status != 'TERMINATED':
            raise ScenarioFailed('lease l1 is %s after its end, not '
                                 'TERMINATED' % status)
        return ('lease l1 held 3 servers RESERVED, refused a second lease '
                'and an ordinary boot, started them on %s and deleted them '
                'at its end' % ', '.join(sorted(self.hosts)))

    def _boot_lease(self, cloud, start, end) -> dict:
        """Boot three servers with a lease; return their reservation."""
        lease = json.dumps({'name': 'l1', 'start': iso(start),
                            'end': iso(end), 'on_end': 'delete'})
        self.say("nova boot --flavor m1.medium --image cirros --nic none "
                 "--hint lease_params='%s' --max-count 3 vm1" % lease)
        resp = cloud.boot('vm1', hints={'lease_params': lease}, count=3)
        if resp.status != 202:
            raise ScenarioFailed('the boot with lease_params got %d: %s'
                                 % (resp.status, resp.content))
        res = resp.body['server']['reservation']
        self.say('-> 202: lease %s, reservation %s, status %s'
                 % (res['lease_id'], res['reservation_id'], res['status']))
        if res['status'] != 'RESERVED':
            raise ScenarioFailed('the server is %s, not RESERVED'
                                 % res['status'])
        return res

    def _refusals(self, cloud, start, end) -> None:
        """Neither a second lease nor an ordinary boot takes the capacity
        that the lease holds.
        """
        other = json.dumps({'name': 'l2', 'start': iso(start),
                            'end': iso(end)})
        resp = cloud.boot('vm2', hints={'lease_params': other})
        if resp.status != 409:
            raise ScenarioFailed('a second lease for the same interval got '
                                 '%d, not 409: %s'
                                 % (resp.status, resp.content))
        self.say('a second lease for the same interval -> 409: %s'
                 % resp.body['conflictingRequest']['message'])

        resp = cloud.boot('ordinary')
        if resp.status != 202:
            raise ScenarioFailed('the ordinary boot got %d: %s'
                                 % (resp.status, resp.content))
        server = self._settled(cloud, resp.body['server']['id'])
        if server['status'] != 'ERROR':
            raise ScenarioFailed('an ordinary boot took promised capacity: '
                                 'it is %s on %s' % (
                                     server['status'],
                                     server['OS-EXT-SRV-ATTR:host']))
        self.say('an ordinary boot that would take promised capacity -> '
                 'ERROR (%s)' % server['fault']['message'])

    @staticmethod
    def _settled(cloud, uuid: str, timeout: float = 30) -> dict:
        """The server once ACTIVE, or ERROR with its fault."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            server = cloud.admin_api.get_server(uuid)
            if server['status'] == 'ACTIVE' or (
                    server['status'] == 'ERROR' and 'fault' in server):
                return server
            time.sleep(0.2)
        raise ScenarioFailed('server %s is still %s after %d s'
                             % (uuid, server['status'], timeout))

    def _event(self, event, lease, outcome, details=None) -> None:
        self.say('engine: lease %s event %s -> %s'
                 % (lease.name, event.event_type, outcome))

    def _watch(self, cloud, uuids: list, start: float,
               deadline: float) -> None:
        """Print each server's state as it changes, until all are gone;
        each must be ACTIVE after the lease's `start`, and never before it
        (a reserved server is built at the start).
        """
        last: dict = {}
        active: set = set()
        while time.time() < deadline:
            for uuid in uuids:
                resp = cloud.admin_api.api_get('/servers/%s' % uuid,
                                               check_response_status=False)
                if resp.status == 404:
                    state = 'deleted'
                else:
                    server = resp.body['server']
                    state = server['status']
                    if state == 'ACTIVE':
                        host = server['OS-EXT-SRV-ATTR:host']
                        state += ' on %s' % host
                        if time.time() < start - 1:
                            raise ScenarioFailed('server %s runs before its '
                                                 'lease starts' % uuid[:8])
                        self.hosts.add(host)
                        active.add(uuid)
                if last.get(uuid) != state:
                    self.say('server %s: %s' % (uuid[:8], state))
                    last[uuid] = state
            if all(last.get(u) == 'deleted' for u in uuids):
                break
            time.sleep(0.2)
        else:
            raise ScenarioFailed('servers still there after the end: %s'
                                 % ', '.join('%s %s' % (u[:8], last.get(u))
                                             for u in uuids
                                             if last.get(u) != 'deleted'))
        if active != set(uuids):
            raise ScenarioFailed('not every server was ACTIVE once the '
                                 'lease started: %s' % ', '.join(
                                     u[:8] for u in uuids
                                     if u not in active))


def main() -> int:
    t0 = time.time()

    def say(message: str) -> None:
        print('[%6.1fs] %s' % (time.time() - t0, message), flush=True)

    recent = quiet_nova()
    # Imported once Nova is told to use native threads: Nova decides on
    # its first import.
    from devcloud import embedded

    try:
        with embedded.EmbeddedCloud('demo', NODES) as cloud:
            outcome = Scenario(say).run(cloud)
    except ScenarioFailed as e:
        print('FAILED: %s (Nova\'s log: %s)' % (e, recent.write()),
              flush=True)
        return 1
    except Exception:
        traceback.print_exc()
        print('FAILED: the scenario stopped with an error (Nova\'s log: %s)'
              % recent.write(), flush=True)
        return 1
    print('OK: %s, in %.0f s' % (outcome, time.time() - t0), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
