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

"""Host relocation: future slots leave compute nodes that failed."""

from oslo_log import log as logging

from nova_reservation.capacity import epoch
from nova_reservation.engine import maintenance
from nova_reservation.lease import relocation as lease_relocation
from nova_reservation.lease import write as lease_write

LOG = logging.getLogger(__name__)


class Relocation:

    def __init__(self, nova, clock) -> None:
        self.nova = nova
        self.clock = clock

    def run(self, notifier=None) -> None:
        """Tell and move the servers off the nodes of the maintenance
        windows that approach (`maintenance`); move future slots off nodes
        whose compute service is down or disabled; mark the leases that
        can not move degraded, and say so (lease.update).
        """
        maintenance.approach(self.nova, epoch.from_epoch(
            self.clock()), notifier)
        failed = self.nova.failed_nodes()
        if not failed:
            return
        moved, degraded = lease_relocation.relocate(
            lease_write.shared(), failed,
            self.clock())
        if moved or degraded:
            LOG.warning('Compute nodes %s failed: %d future slots moved; '
                        'leases degraded: %s', ', '.join(sorted(failed)),
                        moved, ', '.join(degraded) or 'none')
        for lease_id in degraded:
            if notifier:
                notifier.lease('update', lease_id)
