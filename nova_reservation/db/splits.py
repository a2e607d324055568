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

"""A split: slots of a reservation, and the servers on them, moved into a
new lease, in one transaction (`nova_reservation.lease.splits` chooses them).
"""

from typing import Callable, NamedTuple, Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import events
from nova_reservation.db import ledger
from nova_reservation.db import models
from nova_reservation.exception import LeaseChanged
from nova_reservation.lease import resource_types
from nova_reservation import status


class Movable(NamedTuple):
    """A slot as a split sees it."""
    id: int
    node: str
    # The server it holds (capacity), or None; a boot's claim or a
    # change's hold in flight is `busy`.
    instance_uuid: Optional[str]
    busy: bool
    # How many servers run on its node in the reservation (hosts).
    servers: int = 0


@api.writer
def split(ctx, lease_id: str, reservation_id: str, amount: int,
          lease: dict, reservation: dict, lease_events: list,
          servers_on: dict, choose: Callable[[list], list]) -> list:
    """Move `amount` slots of `reservation_id` (of lease `lease_id`) into a
    new lease (`lease`, `reservation`: their columns; `lease_events`: its
    events), with the bindings of the servers on them; the ids of the
    servers moved.  `servers_on`: {server: node} of a host reservation's
    servers, as Nova had them just before (they run anywhere on its
    hosts; one bound since stays).  `choose`: the ids of the slots that
    move, of the reservation's [Movable].

    The ledger row first: boots into the reservation, its changes and
    other splits take turns with it, and it reads the slots as they left
    them.  exception.TooFewToSplit or LeaseChanged, with nothing written.
    """
    gen = ledger.bump(ctx)
    old = ctx.session.get(models.Reservation, reservation_id,
                          populate_existing=True)
    row = ctx.session.get(models.Lease, lease_id, populate_existing=True)
    if old is None or old.deleted or old.lease_id != lease_id or \
            row is None or row.status not in (status.PENDING, status.ACTIVE):
        raise LeaseChanged()
    bindings = db_bindings.of_reservation(ctx, reservation_id)
    host = old.resource_type == resource_types.HOST
    on = {b.instance_uuid: servers_on[b.instance_uuid] for b in bindings
          if host and b.instance_uuid in servers_on}
    count: dict = {}
    for node in on.values():
        count[node] = count.get(node, 0) + 1
    s = models.Slot
    rows = api.rows(ctx, sa.select(s).where(
        s.reservation_id == reservation_id, s.deleted == sa.false()))
    chosen = set(choose([Movable(
        x.id, x.node, x.instance_uuid, bool(x.instance_uuid) and (
            x.instance_uuid.startswith(ledger.CLAIM_PREFIX) or
            x.instance_uuid.startswith(ledger.HOLD_PREFIX)),
        count.get(x.node, 0)) for x in rows]))
    moved_nodes = {x.node for x in rows if x.id in chosen}
    moved = ({u for u, n in on.items() if n in moved_nodes} if host else
             {x.instance_uuid for x in rows
              if x.id in chosen and x.instance_uuid})
    ctx.session.add(models.Lease(version=0, degraded=False, **lease))
    ctx.session.flush()
    ctx.session.add(models.Reservation(generation=gen, deleted=False,
                                       **reservation))
    ctx.session.flush()
    ctx.session.execute(sa.update(s).where(s.id.in_(sorted(chosen))).values(
        reservation_id=reservation['id'], generation=gen))
    # A host reservation holds between min and max hosts: what it has.
    left = (len(rows) if host else old.amount) - amount
    sizes = dict(amount=left)
    if host:
        sizes.update(max_count=left, min_count=min(old.min_count or 1, left))
    ctx.session.execute(sa.update(models.Reservation).where(
        models.Reservation.id == reservation_id).values(
        generation=gen, updated_at=api.utcnow(), **sizes))
    ctx.session.execute(sa.update(models.Lease).where(
        models.Lease.id == lease_id).values(
        version=models.Lease.version + 1, updated_at=api.utcnow()))
    owner = row.project_id
    for binding in bindings:
        if binding.instance_uuid not in moved:
            continue
        project = binding.project_id or owner
        binding.lease_id = lease['id']
        binding.reservation_id = reservation['id']
        binding.project_id = (None if project == lease['project_id']
                              else project)
    events.add(ctx, lease['id'], lease_events)
    return sorted(moved)
