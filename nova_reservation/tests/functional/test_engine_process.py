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

"""The console scripts as installed, on the Nova and oslo.service of this
environment (each supported release runs this suite): the tables made by
``nova-reservation-manage db sync``, a lease started and ended on time by
``nova-reservation-engine`` as an oslo.service service, which stops on
SIGTERM.
"""

import datetime
import os
import subprocess
import sys
import time

import testtools

from devcloud import machine
from nova_reservation import compat
from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation import status

STORE = db_api.Context()


def script(name: str) -> str:
    """The path of a console script of this environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


class EngineProcessTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.store = self.useFixture(machine.SQLiteStore())
        self.conf = self.useFixture(machine.ConfFile("""
[api_database]
connection = %s
[oslo_messaging_notifications]
driver = noop
[reservation]
auth_type = none
endpoint_override = http://127.0.0.1:9/v2.1
engine_poll_interval = 0.2
""" % self.store.url)).path

    def test_manage_makes_the_tables_and_the_engine_runs_a_lease(self):
        sync = subprocess.run(
            [script('nova-reservation-manage'), '--config-file', self.conf,
             'db', 'sync'], capture_output=True, text=True, timeout=120)
        self.assertEqual(0, sync.returncode, sync.stderr)
        self.assertIn('nova-reservation tables at revision', sync.stdout)
        now = db_api.utcnow()
        lease_id = machine.capacity_lease(
            STORE, 'l', 'node1', now + datetime.timedelta(seconds=2),
            now + datetime.timedelta(seconds=4))

        engine = self.useFixture(machine.EngineProcess(
            conf_file=self.conf, command=[script('nova-reservation-engine')]))
        engine.engine_id()
        # Native threads from 2026.1 on, eventlet before.
        self.assertIn("oslo.service's %s backend"
                      % ('threading' if compat.console_script_threads()
                         else 'eventlet'), engine.output())
        deadline = time.time() + 60
        while time.time() < deadline:
            lease = db_leases.get(STORE, lease_id)
            if lease.status == status.TERMINATED:
                break
            time.sleep(0.2)
        self.assertEqual(status.TERMINATED, lease.status, engine.output())
        events = db_events.of_lease(STORE, lease_id)
        self.assertEqual([('start', status.DONE), ('end', status.DONE)],
                         [(e.event_type, e.status) for e in events])
        self.assertEqual(0, engine.stop(), engine.output())
        self.assertIn('stopped', engine.output())
