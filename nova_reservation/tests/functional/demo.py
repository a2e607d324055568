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
nodes, Placement, SQLite, in-process messaging) with the hook, the filter
and the engine configured as an operator configures them.  The engine runs
on the real clock; the lease timeline is printed as it happens.

Run: ``python -m nova_reservation.tests.functional.demo``
"""

import datetime
import json
import sys
import threading
import time
import unittest

from nova_reservation.db import api as db_api
from nova_reservation.engine import service
from nova_reservation.tests.functional import base

T0 = time.time()


def say(message: str) -> None:
    sys.__stdout__.write('[%6.1fs] %s\n' % (time.time() - T0, message))
    sys.__stdout__.flush()


def iso(t: datetime.datetime) -> str:
    return t.replace(microsecond=0).isoformat() + 'Z'


class Scenario(base.ReservationTestCase):
    NODES = ('host1', 'host2', 'host3')

    def test_scenario(self):
        self.flags(engine_poll_interval=0.2, action_poll_interval=0.2,
                   group='reservation')
        say('embedded Nova up: nodes %s (10 vCPU, 8 GB each); flavor '
            'm1.medium = 2 vCPU, 4 GB: one per node' % ', '.join(self.NODES))
        engine = service.Engine(self.nova_client(), on_event=self._event)
        runner = threading.Thread(target=engine.run_forever, daemon=True)
        runner.start()

        now = db_api.utcnow()
        start = now + datetime.timedelta(seconds=15)
        end = start + datetime.timedelta(seconds=15)
        lease = json.dumps({'name': 'l1', 'start': iso(start),
                            'end': iso(end), 'on_end': 'delete'})
        say("nova boot --flavor m1.medium --image cirros --nic none --hint "
            "lease_params='%s' --max-count 3 vm1" % lease)
        resp = self.boot(lease, count=3, name='vm1')
        self.assertEqual(202, resp.status, resp.content)
        res = resp.body['server']['reservation']
        say('-> 202: lease %s, reservation %s, status %s'
            % (res['lease_id'], res['reservation_id'], res['status']))

        other = json.dumps({'name': 'l2', 'start': iso(start),
                            'end': iso(end)})
        resp = self.boot(other, name='vm2')
        say('a second lease for the same interval -> %d: %s'
            % (resp.status, resp.body['conflictingRequest']['message']))
        self.assertEqual(409, resp.status)

        resp = self._create_server(name='ordinary', image_uuid=base.IMAGE,
                                   flavor_id=base.ONE_PER_NODE,
                                   networks='none', expected_state='ERROR')
        say('an ordinary boot that would take promised capacity -> %s (%s)'
            % (resp['status'], resp['fault']['message']))

        uuids = [b.instance_uuid for b in db_api.bindings_of(res['lease_id'])]
        self._watch(uuids, res['lease_id'], deadline=end.timestamp() + 30)
        engine.stop()
        runner.join()
        lease_row = db_api.get_lease(res['lease_id'])
        say('lease %s is %s' % (lease_row.name, lease_row.status))
        self.assertEqual('TERMINATED', lease_row.status)

    def _event(self, event, lease, outcome, details=None):
        say('engine: lease %s event %s -> %s' % (lease.name,
                                                 event.event_type, outcome))

    def _watch(self, uuids, lease_id, deadline):
        last = {}
        while time.time() < deadline and last.get('all') != 'gone':
            states = []
            for uuid in uuids:
                resp = self.admin_api.api_get('/servers/%s' % uuid,
                                              check_response_status=False)
                if resp.status == 404:
                    state = 'deleted'
                else:
                    s = resp.body['server']
                    state = s['status']
                    if s['status'] == 'ACTIVE':
                        state += ' on %s' % s['OS-EXT-SRV-ATTR:host']
                states.append(state)
                if last.get(uuid) != state:
                    say('server %s: %s' % (uuid[:8], state))
                    last[uuid] = state
            if all(s == 'deleted' for s in states):
                last['all'] = 'gone'
            time.sleep(0.2)


def main() -> int:
    result = unittest.TextTestRunner(stream=sys.__stderr__, verbosity=0).run(
        unittest.defaultTestLoader.loadTestsFromName(
            'test_scenario', Scenario))
    return 0 if result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
