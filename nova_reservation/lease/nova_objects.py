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

"""The Nova objects of a lease's capacity reservations: their private
flavors and server groups, made before the lease is written (their ids
are in its rows) and made again when a reservation is reshaped.
"""

from typing import Iterable, Optional

from nova import exception as nova_exception
from nova import objects

from nova_reservation import capacity
from nova_reservation.clients import flavors
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.lease import kinds
from nova_reservation.lease.request import ReservationRequest


def private_flavors(ctx, requests: Iterable[ReservationRequest]) -> list:
    """The private flavors of the capacity reservations among `requests`,
    made before they are written (their ids are in their rows).
    """
    return [_private_flavor(ctx, r) for r in requests
            if r.resource_type in kinds.WITH_FLAVOR]


def private_objects(ctx, requests: Iterable[ReservationRequest]) -> list:
    """The private flavors and server groups of instance reservations,
    made before the lease is written (their ids are in its rows).
    """
    requests = list(requests)
    return private_flavors(ctx, requests) + [
        _server_group(ctx, r) for r in requests
        if r.resource_type in kinds.WITH_FLAVOR and
        r.affinity is not None]


def _private_flavor(ctx, req: ReservationRequest):
    """The private flavor of a capacity reservation: its id is the
    reservation's; a flavor:instance one is a copy of its flavor (extra
    specs too).  The owner gets access to it at the start.
    """
    copies = kinds.of(req.resource_type).copies_flavor
    source = flavors.find(ctx, req.flavor_id) if copies else None
    # A copy has its source's numbers, not the slot's: what a server takes
    # (its extra specs may override them) is not the guest's size.
    size = (dict(vcpus=source.vcpus, memory_mb=source.memory_mb,
                 root_gb=source.root_gb, ephemeral_gb=source.ephemeral_gb,
                 swap=source.swap) if source else
            dict(vcpus=req.need.vcpus, memory_mb=req.need.memory_mb,
                 root_gb=req.need.disk_gb, ephemeral_gb=0, swap=0))
    flavor = objects.Flavor(
        context=ctx, name='reservation:%s' % req.id, flavorid=req.id,
        is_public=False, **size,
        extra_specs=dict(source.extra_specs) if source else {})
    flavor.create()
    req.private_flavor_id = flavor.flavorid
    if not copies:
        req.flavor_id = flavor.flavorid
    return flavor


def _server_group(ctx, req: ReservationRequest,
                  project_id: Optional[str] = None,
                  user_id: Optional[str] = None):
    """The server group of an instance reservation with an affinity, in
    the project (the lease's, or else the caller's), as Blazar makes it:
    its servers boot with ``--hint group=<its id>``.
    """
    group = objects.InstanceGroup(
        context=ctx, project_id=project_id or ctx.project_id,
        user_id=user_id or ctx.user_id,
        name='reservation:%s' % req.id,
        policy='affinity' if req.affinity else 'anti-affinity')
    group.create()
    req.server_group_id = group.uuid
    return group


def reshape(ctx, lease, replaced: list) -> None:
    """A reshaped instance reservation's private flavor and server group
    are made again to its new shape (no server uses them before the
    start).
    """
    for res in db_leases.reservations(db_api.Context(), lease.id):
        kind = kinds.of(res.resource_type)
        if res.id not in replaced or not kind.private_flavor or \
                kind.copies_flavor:
            continue
        req = ReservationRequest(
            id=res.id, resource_type=res.resource_type, count=res.amount,
            need=capacity.Resources(res.vcpus, res.memory_mb, res.disk_gb),
            affinity=res.affinity)
        # Private, and the project has no access to it yet.
        flavor = flavors.find(ctx.elevated(),
                              res.private_flavor_id or res.id)
        if flavor is not None:
            flavor.destroy()
        _private_flavor(ctx, req)
        if res.server_group_id:
            try:
                objects.InstanceGroup.get_by_uuid(
                    ctx, res.server_group_id).destroy()
            except nova_exception.InstanceGroupNotFound:
                pass
        if req.affinity is not None:
            _server_group(ctx, req, lease.project_id, lease.user_id)
        db_leases.set_reservation(
            db_api.Context(), res.id, private_flavor_id=req.private_flavor_id,
            flavor_id=req.flavor_id, server_group_id=req.server_group_id)
