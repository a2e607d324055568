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

"""Maintenance windows in Nova: at the start, the nova-compute services of
a window's nodes are disabled with its reason; at the end, enabled again.

The record of which services the window disabled is the disabled reason
itself, which ends with the window's mark: a start run again after a crash
finds them disabled already, and the end enables only those that still
carry the mark, never a service the operator disabled before the window
or since with a reason of their own.
"""

import json

from oslo_log import log as logging

from nova_reservation.engine import nova_client
from nova_reservation import marks
from nova_reservation import resource_types

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


def _services(nova, details) -> list:
    """[(compute service, reason)] of each node of the lease's windows."""
    found = []
    for res in details.reservations:
        if res.resource_type != resource_types.MAINTENANCE:
            continue
        for node in json.loads(res.hosts or '[]'):
            try:
                host = nova.host_of_node(node)
            except nova_client.NotFound:
                LOG.warning('Maintenance window %s: node %s is gone',
                            details.lease.id, node)
                continue
            found += [(s, res.reason) for s in nova.compute_services(host)]
    return found


def start(nova, details) -> None:
    """Disable the windows' services that are enabled, with the reason."""
    lease_id = details.lease.id
    for service, reason in _services(nova, details):
        if service['status'] == 'disabled':
            continue   # the operator's, or this window's already
        nova.set_service(service['id'], False,
                         disabled_reason(reason, lease_id))
        LOG.info('Maintenance window %s: compute service of %s disabled',
                 lease_id, service['host'])


def end(nova, details) -> None:
    """Enable again the services the window disabled."""
    lease_id = details.lease.id
    for service, _ in _services(nova, details):
        if ours(service, lease_id):
            nova.set_service(service['id'], True)
            LOG.info('Maintenance window %s: compute service of %s enabled',
                     lease_id, service['host'])
