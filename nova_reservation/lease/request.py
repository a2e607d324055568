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

"""What a lease asks for and how the store writes it: a reservation's
request, the refusals (the planner's, the service's), and the rows of
reservations and slots.  It neither reads nor writes the store: its
callers do.
"""

import dataclasses
import datetime
import json
from typing import Optional

from oslo_utils import uuidutils

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation.lease import kinds
from nova_reservation.lease import schedule
from nova_reservation.lease import shares
from nova_reservation import status

CONF = conf.CONF


@dataclasses.dataclass
class ReservationRequest:
    resource_type: str
    count: int                 # servers, amount, or most hosts
    need: Optional[capacity.Resources] = None   # a slot (shared pool)
    # The traits its slots' nodes must have (X) or not have (!X), as its
    # flavor asks Placement (`capacity.Need`).
    traits: tuple = ()
    # What each slot holds beyond `need` (`capacity.extras`).
    extras: tuple = capacity.NO_EXTRAS
    min_count: Optional[int] = None             # fewest hosts
    affinity: Optional[bool] = None
    flavor_id: Optional[str] = None
    flavor_name: Optional[str] = None           # in messages
    hypervisor_properties: str = ''
    resource_properties: str = ''
    before_end: Optional[str] = None
    server_group_id: Optional[str] = None
    private_flavor_id: Optional[str] = None
    # virtual:floatingip: the external network, the addresses asked for.
    network_id: Optional[str] = None
    addresses: tuple = ()
    # The only nodes it may take (those of the cell its servers wait in),
    # or None: any.
    nodes: Optional[frozenset] = None
    # The other projects that may boot into it, and its matching
    # (`nova_reservation.lease.shares`).
    shared_with: tuple = ()
    matching: Optional[str] = None
    # maintenance: the nodes it holds whole, and why.
    hosts: tuple = ()
    reason: Optional[str] = None
    id: str = dataclasses.field(default_factory=uuidutils.generate_uuid)

    def describe(self) -> str:
        """The request in the words of a refusal."""
        return kinds.of(self.resource_type).describe(self)


def request_of(res) -> ReservationRequest:
    """The request a reservation row was made from."""
    host = kinds.of(res.resource_type).whole_hosts
    return ReservationRequest(
        resource_type=res.resource_type,
        count=res.max_count if host else res.amount,
        min_count=res.min_count,
        need=None if host else capacity.Resources(
            res.vcpus, res.memory_mb, res.disk_gb),
        traits=traits_of(res),
        extras=extras_of(res),
        affinity=res.affinity, flavor_id=res.flavor_id,
        hypervisor_properties=res.hypervisor_properties or '',
        resource_properties=res.resource_properties or '',
        before_end=res.before_end,
        server_group_id=res.server_group_id,
        private_flavor_id=res.private_flavor_id,
        network_id=res.network_id,
        addresses=tuple(json.loads(res.required_floatingips or '[]')),
        shared_with=tuple(sorted(shares.projects(res.shared_with))),
        matching=res.matching, hosts=tuple(json.loads(res.hosts or '[]')),
        reason=res.reason, id=res.id)


def traits_of(res) -> tuple:
    """The traits a reservation row's slots were placed for."""
    return tuple(res.traits.split(',')) if res.traits else ()


def extras_of(res) -> tuple:
    """What each slot of a reservation row holds beyond its three sizes."""
    return db_ledger.extras_value(res.extras)


def reservation_row(lease, req: ReservationRequest) -> dict:
    get = schedule.getter(lease)
    need = req.need or capacity.ZERO
    return dict(
        id=req.id, lease_id=get('id'), project_id=get('project_id'),
        resource_type=req.resource_type, flavor_id=req.flavor_id,
        vcpus=need.vcpus, memory_mb=need.memory_mb,
        disk_gb=need.disk_gb, amount=req.count,
        traits=','.join(req.traits) or None,
        extras=db_ledger.extras_column(req.extras),
        status=status.RESERVATION_PENDING,
        min_count=req.min_count,
        max_count=(req.count if kinds.of(req.resource_type).whole_hosts
                   else None),
        affinity=req.affinity,
        hypervisor_properties=req.hypervisor_properties or None,
        resource_properties=req.resource_properties or None,
        before_end=req.before_end, server_group_id=req.server_group_id,
        private_flavor_id=req.private_flavor_id,
        network_id=req.network_id,
        required_floatingips=(json.dumps(list(req.addresses))
                              if req.network_id else None),
        shared_with=shares.column(req.shared_with),
        matching=shares.matching_column(req.matching),
        hosts=json.dumps(list(req.hosts)) if req.hosts else None,
        reason=req.reason, created_at=db_api.utcnow())


def slot_rows(lease, slots, start_at=None, end_at=None) -> list:
    """The columns of `slots` (`capacity.Placed`) over the lease's
    interval (or [start_at, end_at)).
    """
    if isinstance(lease, dict):
        start_at = start_at or lease['start_at']
        end_at = end_at or lease['end_at']
    return [slot_row(placed, start_at, end_at) for placed in slots]


def slot_row(placed: capacity.Placed, start_at: datetime.datetime,
             end_at: datetime.datetime) -> dict:
    """A slot's columns, as the store writes them."""
    node, res, extras = placed
    return dict(node=node, vcpus=res.vcpus, memory_mb=res.memory_mb,
                disk_gb=res.disk_gb,
                extras=db_ledger.extras_column(extras), start_at=start_at,
                end_at=end_at)


def slot_row_of(placed: capacity.Placed, start: float,
                end: float) -> dict:
    """`slot_row` over [start, end) in seconds since the epoch."""
    return slot_row(placed, epoch.from_epoch(start),
                    epoch.from_epoch(end))


def interval(lease: dict) -> tuple:
    """(start, end) of a lease's row values, in seconds."""
    return (epoch.to_epoch(lease['start_at']),
            epoch.to_epoch(lease['end_at']))


def retry_interval(lease) -> float:
    """Seconds between two tries of a waiting lease."""
    get = schedule.getter(lease)
    minutes = get('retry_interval')
    return minutes * 60 if minutes else CONF.reservation.wait_interval
