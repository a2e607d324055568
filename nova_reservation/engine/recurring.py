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

"""The engine's recurring work besides events, as oslo.service periodic
tasks.
"""

from typing import Callable
from typing import TYPE_CHECKING

from oslo_log import log as logging
from oslo_service import periodic_task

from nova_reservation import conf
from nova_reservation.engine import approvals

LOG = logging.getLogger(__name__)
CONF = conf.CONF

if TYPE_CHECKING:   # the service module imports this one
    from nova_reservation.engine.service import Engine


class Recurring(periodic_task.PeriodicTasks):
    """The engine's recurring work besides events, as periodic tasks at the
    intervals of ``[reservation]`` (read again on SIGHUP).
    """

    # Task name: the interval option.
    INTERVALS = {'check_hosts': 'host_check_interval',
                 'reconcile': 'reconcile_interval',
                 'preempt': 'preempt_check_interval',
                 'watch_idle': 'idle_check_interval',
                 'place_waiting': 'wait_interval',
                 'expire_approvals': 'approval_check_interval'}

    def __init__(self, engine: 'Engine') -> None:
        super().__init__(CONF)
        self.engine = engine
        self.approvals = approvals.Approvals(engine.clock, engine.outbox)
        self.configure()

    def configure(self) -> None:
        self._periodic_spacing = {
            name: getattr(CONF.reservation, option)
            for name, option in self.INTERVALS.items()}

    def _run(self, task: Callable, what: str) -> None:
        try:
            task()
        except Exception as e:
            # Nova or Placement away: events still run.
            LOG.warning('Could not %s: %s', what, e)

    @periodic_task.periodic_task(run_immediately=True)
    def check_hosts(self, context) -> None:
        self._run(self.engine.check_hosts, 'check the compute nodes')

    @periodic_task.periodic_task
    def reconcile(self, context) -> None:
        self._run(self.engine.reconcile_in_turn,
                  'compare the store with Nova')

    @periodic_task.periodic_task(run_immediately=True)
    def preempt(self, context) -> None:
        self._run(self.engine.preempt, 'look at the preemptible servers')

    @periodic_task.periodic_task
    def watch_idle(self, context) -> None:
        self._run(self.engine.watch_idle, 'measure the leases\' use')

    @periodic_task.periodic_task(run_immediately=True)
    def place_waiting(self, context) -> None:
        self._run(self.engine.place_waiting, 'try the waiting leases')

    @periodic_task.periodic_task(run_immediately=True)
    def expire_approvals(self, context) -> None:
        self._run(self.approvals.run, 'expire the leases waiting for '
                                      'approval')
