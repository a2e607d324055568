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

"""``nova-reservation-engine``: runs lease events; reads nova.conf.

Run as many as wanted against one database: each event runs once.
SIGTERM (or SIGINT) stops it once the events in flight are done; SIGHUP
reads the configuration again (log levels, intervals).
"""

import signal
import sys
import threading

import nova.conf  # noqa: F401  (registers Nova's options, api_database)
from nova import objects
from oslo_log import log as logging
from oslo_service import service as oslo_service

from nova_reservation import cmd
from nova_reservation import compat
from nova_reservation import conf
from nova_reservation.engine import nova_client
from nova_reservation.engine import service
from nova_reservation import notifications

CONF = conf.CONF
LOG = logging.getLogger(__name__)


class EngineService(oslo_service.Service):
    """The engine as an oslo.service service: the events in a thread of
    its own, the recurring work as periodic tasks.  A stop (SIGTERM)
    lets the events in flight finish; a reset (SIGHUP, after the
    configuration was read again) takes the new intervals.
    """

    def __init__(self, engine: service.Engine) -> None:
        super().__init__()
        self.engine = engine
        self.started = threading.Event()

    def start(self) -> None:
        super().start()
        self.tg.add_thread(self.engine.run_forever)
        # Woken every second at most, so that a stop is not kept waiting
        # for the next periodic task.
        self.tg.add_dynamic_timer_args(self._periodic, initial_delay=0,
                                       periodic_interval_max=1)
        self.started.set()

    def _periodic(self) -> float:
        """Run the periodic tasks that are due; seconds until the next."""
        return self.engine.run_periodic_tasks(None)

    def stop(self, graceful: bool = True) -> None:
        self.engine.stop()
        super().stop(graceful=graceful)
        self.engine.close()

    def reset(self) -> None:
        self.engine.configure()
        super().reset()


def main() -> None:
    compat.parse_args(sys.argv, 'nova-reservation-engine', init_rpc=False)
    # The reconciler clears what a killed nova-api left in Nova's cells.
    objects.register_all()
    logging.setup(CONF, 'nova-reservation-engine')
    LOG.info('nova-reservation-engine on Nova %s (%s), oslo.service\'s %s '
             'backend', compat.NOVA, compat.release(), cmd.BACKEND)
    notifier = notifications.Notifier()
    engine = service.Engine(nova_client.NovaClient.from_conf(),
                            notifier=notifier)
    launcher = oslo_service.Launcher(CONF, restart_method='mutate')
    engine_service = EngineService(engine)
    launcher.launch_service(engine_service)
    # A signal only asks: the stop (which waits for the events in flight)
    # and the reload are done here, in the main thread.  Under eventlet a
    # handler runs in the hub, which must not wait.
    asked = {'stop': threading.Event(), 'reload': threading.Event()}
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: _ask(asked, 'stop'))
    signal.signal(signal.SIGHUP, lambda *_: _ask(asked, 'reload'))
    # The launcher starts the service in a thread of its own.
    while not engine_service.started.wait(1):
        pass
    while not asked['stop'].wait(1):
        if asked['reload'].is_set():
            asked['reload'].clear()
            LOG.info('SIGHUP: reading the configuration again')
            launcher.restart()
    launcher.stop()


def _ask(asked: dict, what: str) -> None:
    asked[what].set()
