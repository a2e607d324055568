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

"""An admin's maintenance window: the named nodes held whole over the
lease, their compute services disabled while it runs
(`nova_reservation.lease.maintenance`).

The record of which services the window disabled is the disabled reason
itself, which ends with the window's mark: a start run again after a crash
finds them disabled already, and the end enables only those that still
carry the mark, never a service the operator disabled before the window
or since with a reason of their own.
"""

import json
from typing import Callable, Optional

from oslo_log import log as logging

from nova_reservation import capacity
from nova_reservation.lease.kinds import base
from nova_reservation.lease import resource_types
from nova_reservation import marks
from nova_reservation import policies

LOG = logging.getLogger(__name__)
# Nova keeps 255 characters of a disabled reason.
REASON_LENGTH = 255


def disabled_reason(reason: str, lease_id: str) -> str:
    """The disabled reason of the window's services: its own reason, cut
    to leave room for the mark.
    """
    tail = marks.maintenance_mark(lease_id)
    return reason[:REASON_LENGTH - len(tail)] + tail


def ours(service: dict, lease_id: str) -> bool:
    """Whether the window disabled `service` (and nobody since)."""
    reason = service.get('disabled_reason') or ''
    return service['status'] == 'disabled' and reason.endswith(
        marks.maintenance_mark(lease_id))


def _services(nova, lease, res) -> list:
    """The compute services whose every node is in the window `res`.  One
    that serves other nodes too (bare metal) stays enabled for them: the
    window holds its own nodes whole in the ledger, which keeps boots off
    them.
    """
    served = nova.nodes_by_host()
    window = set(json.loads(res.hosts or '[]'))
    for node in sorted(window - set().union(*served.values())):
        LOG.warning('Maintenance window %s: node %s is gone', lease.id,
                    node)
    found = []
    for host, nodes in sorted(served.items()):
        if nodes <= window:
            found += nova.compute_services(host)
    return found


class Maintenance(base.Kind):

    name = resource_types.MAINTENANCE
    sizes = ()
    counted = False
    policy = policies.LEASES_MAINTENANCE
    window = True
    phase = 2

    def requested(self, req) -> dict:
        return dict(amount=req.count, flavor_id=req.flavor_id,
                    affinity=req.affinity,
                    resource_properties=req.resource_properties)

    def refuses_boots(self, res) -> Optional[str]:
        return ('%s holds a maintenance window of lease %s and takes no '
                'server' % (res.id, res.lease_id))

    def request_fields(self, prefix: str, value: dict,
                       flavor_need: Callable, registered: Callable) -> dict:
        return dict(
            resource_type=self.name, count=len(value['hosts']),
            hosts=tuple(value['hosts']), reason=value['reason'])

    def describe(self, req) -> str:
        return 'maintenance of node(s) %s' % ', '.join(req.hosts)

    def place(self, planner, req, eligible: tuple,
              timelines: dict, start: float, end: float) -> Optional[list]:
        shared, reservable = eligible
        hosts = {h.node: h for h in shared}
        hosts.update({h.node: h for h, _ in reservable})
        return (capacity.plan_whole([hosts[n] for n in req.hosts],
                                    timelines, start, end)
                if set(req.hosts) <= set(hosts) else None)

    def start(self, nova, lease, res, writes) -> None:
        """Disable the window's services that are enabled, with its
        reason.
        """
        for service in _services(nova, lease, res):
            if service['status'] == 'disabled':
                continue   # the operator's, or this window's already
            nova.set_service(service['id'], False,
                             disabled_reason(res.reason, lease.id))
            LOG.info('Maintenance window %s: compute service of %s '
                     'disabled', lease.id, service['host'])

    def end(self, nova, lease, res, writes) -> None:
        """Enable again the services the window disabled."""
        for service in _services(nova, lease, res):
            if ours(service, lease.id):
                nova.set_service(service['id'], True)
                LOG.info('Maintenance window %s: compute service of %s '
                         'enabled', lease.id, service['host'])

    def fields(self, res, servers: list) -> dict:
        return dict(hosts=json.loads(res.hosts or '[]'), reason=res.reason,
                    unmoved_servers=json.loads(res.unmoved_servers or '[]'))
