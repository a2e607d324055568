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

"""Whole reservable hosts, in an aggregate of the lease's own
(``physical:host``).
"""

import collections
from typing import Callable, Optional

from nova_reservation import capacity
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import hosts as db_hosts
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.exception import InvalidParam
from nova_reservation.lease.kinds import base
from nova_reservation.lease.kinds import checks
from nova_reservation.lease import properties
from nova_reservation.lease import resource_types
from nova_reservation import marks

CONF = conf.CONF
STORE = db_api.Context()


class Host(base.Kind):

    name = resource_types.HOST
    sizes = ('max', 'min')
    shapes = ('hypervisor_properties', 'resource_properties')
    shareable = True
    whole_hosts = True
    requirement_names = None

    def request_fields(self, prefix: str, value: dict,
                       flavor_need: Callable, registered: Callable) -> dict:
        low = checks.whole(prefix + 'min', value.get('min'))
        high = checks.whole(prefix + 'max', value['max'])
        if low > high:
            raise InvalidParam(prefix + 'min', 'must not be above max')
        return dict(
            resource_type=self.name, count=high, min_count=low,
            hypervisor_properties=checks.parse_requirements(
                prefix + 'hypervisor_properties',
                value.get('hypervisor_properties')),
            resource_properties=checks.parse_requirements(
                prefix + 'resource_properties',
                value.get('resource_properties')),
            before_end=value.get('before_end') or None)

    def grown(self, prefix: str, res, entry: dict) -> tuple:
        old = res.max_count
        new = base.growing(prefix + 'max', old, entry.get('max', old))
        low = checks.whole(prefix + 'min',
                           entry.get('min', res.min_count or 1))
        if low > new:
            raise InvalidParam(prefix + 'min', 'must not be above max (%d)'
                               % new)
        return old, new, low, {'amount': new, 'max_count': new,
                               'min_count': low}

    def requested(self, req) -> dict:
        return dict(min=req.min_count, max=req.count,
                    hypervisor_properties=req.hypervisor_properties,
                    resource_properties=req.resource_properties,
                    before_end=req.before_end or 'default')

    def describe(self, req) -> str:
        return '%d to %d reservable hosts' % (req.min_count, req.count)

    def place(self, planner, req, eligible: tuple,
              timelines: dict, start: float, end: float) -> Optional[list]:
        hyp = properties.parse(req.hypervisor_properties)
        res = properties.parse(req.resource_properties)
        hosts = [n for n, row in eligible[1]
                 if hyp(properties.hypervisor(n, row)) and
                 res(properties.resource(n, row))]
        nodes = capacity.plan_hosts(hosts, timelines, start, end,
                                    req.min_count, req.count)
        by_node = {h.node: h for h in hosts}
        return nodes and [capacity.Placed(n, by_node[n].capacity,
                                          by_node[n].extra_capacity)
                          for n in nodes]

    def start(self, nova, lease, res, writes) -> None:
        """Its hosts leave the freepool for the lease's aggregate, made
        now if it has none yet.
        """
        self._move(nova, lease, res, writes, to_lease=True)

    def end(self, nova, lease, res, writes) -> None:
        """Its hosts go back to the freepool; the aggregate goes."""
        self._move(nova, lease, res, writes, to_lease=False)

    @staticmethod
    def _move(nova, lease, res, writes, to_lease: bool) -> None:
        freepool = nova.aggregate(CONF.reservation.freepool_name, {})
        enrolled = db_hosts.get_all(STORE)
        hosts = {h.hypervisor_hostname: h.service_name for h in enrolled}
        served = collections.Counter(h.service_name for h in enrolled)
        shared = {host for host, count in served.items() if count > 1}
        agg = res.aggregate_id
        if agg is None and to_lease:
            agg = nova.aggregate(res.id, {
                marks.LEASE_ID: lease.id,
                marks.PROJECT_ID: lease.project_id})
            writes.add(db_leases.set_reservation, res.id, aggregate_id=agg)
        nodes = {s.node for s in db_ledger.slots(STORE, res.id,
                                                 deleted=True)}
        for node in sorted(nodes):
            host = hosts.get(node)
            if host is None or agg is None:
                continue
            # Aggregates hold services: one with other enrolled nodes
            # stays in the freepool (the filter sets nodes aside by node).
            if not to_lease or host not in shared:
                nova.aggregate_host(freepool, host, add=not to_lease)
            nova.aggregate_host(agg, host, add=to_lease)
        if not to_lease and agg is not None:
            nova.delete_aggregate(agg)

    def fields(self, res, servers: list) -> dict:
        return dict(min=res.min_count, max=res.max_count,
                    hypervisor_properties=res.hypervisor_properties or '',
                    resource_properties=res.resource_properties or '',
                    before_end=res.before_end or 'default',
                    resource_id=res.aggregate_id)
