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

"""A lease's servers, as boots make them: slots claimed for a boot into a
reservation and given back when it fails, the servers Nova made bound to
their reservation, a reserved server tied to its slot's node.

The boot hook asks here; only the lease domain and the store write slots
and bindings.  The engine's actions ask for the bindings' moves below that
take a transaction (`ctx`) first: they are made with the event's outcome
(`outcomes.Writes`).
"""

from typing import Iterable, Optional, Tuple

from oslo_utils import uuidutils

from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import ledger as db_ledger
from nova_reservation import exception

STORE = db_api.Context()


def claim(reservation, count: int,
          project_id: Optional[str]) -> Tuple[str, list]:
    """(claim, ids of the slots held) of `count` free slots of a capacity
    reservation (its row) for a boot of `project_id` (None: the
    reservation's own project); ReservationUnusable if it has not that
    many, NotFound if its share was taken back meanwhile.
    """
    made = db_ledger.CLAIM_PREFIX + uuidutils.generate_uuid()[:30]
    try:
        held = db_ledger.claim_slots(STORE, reservation.id, count, made,
                                     project_id)
    except exception.NotShared as e:
        raise exception.NotFound('reservation: %s not found'
                                 % reservation.id) from e
    if not held:
        free = sum(1 for s in db_ledger.slots(STORE, reservation.id)
                   if s.instance_uuid is None)
        raise exception.ReservationUnusable(
            'reservation: %d of its %d slots are free; %d servers asked '
            'for' % (free, reservation.amount, count))
    return made, held


def release(claim: Optional[str]) -> None:
    """The boot that made `claim` is over: the slots it did not use are
    free again.
    """
    if claim:
        db_ledger.release_claim(STORE, claim)


def bind_servers(lease_id: str, reservation_id: str,
                 instance_uuids: Iterable[str], **how) -> bool:
    """Bind the servers Nova made for a lease's reservation
    (`db.bindings.bind_servers`, with `how` it binds them); False if the
    lease went meanwhile (nothing written).
    """
    return db_bindings.bind_servers(STORE, lease_id, reservation_id,
                                    instance_uuids, **how)


def bind_slot(reservation_id: str, instance_uuid: str, node: str,
              host: Optional[str]) -> None:
    """Tie a reserved server to the slot of its reservation on `node`, in
    a transaction of its own (the hook's; the engine's is `hold_slot`).
    """
    db_ledger.bind_slot(STORE, reservation_id, instance_uuid, node, host)


def servers_gone(instance_uuids: Iterable[str]) -> list:
    """The servers no longer exist: their bindings end and their slots are
    free for another boot; the server leases left with none of their
    servers (`db.bindings.servers_gone`), which the caller takes down.
    """
    return db_bindings.servers_gone(STORE, instance_uuids)


def hold_slot(ctx, reservation_id: str, instance_uuid: str,
              node: Optional[str], host: Optional[str],
              slot_host: Optional[str]) -> None:
    """A running server holds the slot of its reservation on its node,
    swapping with the sibling there (`db.ledger.bind_slot`), in the
    engine's transaction `ctx`; a slot with no host yet gets `host`, or
    `slot_host`.
    """
    db_ledger.bind_slot(ctx, reservation_id, instance_uuid, node, host,
                        slot_host)


def set_state(ctx, instance_uuid: str, state: str) -> None:
    """The server's binding moves to `state`, where its moves allow it."""
    db_bindings.set_binding(ctx, instance_uuid, state=state)


def set_snapshot(ctx, instance_uuid: str, image_id: str) -> None:
    """The snapshot of the server at its lease's end is `image_id`."""
    db_bindings.set_binding(ctx, instance_uuid, image_id=image_id)


def pass_on(ctx, instance_uuid: str, lease_id: str,
            reservation_id: str) -> None:
    """A recurring lease's server goes on to its next occurrence
    (`db.bindings.pass_on`).
    """
    db_bindings.pass_on(ctx, instance_uuid, lease_id, reservation_id)


def server_failed(ctx, instance_uuid: str, lease_id: str,
                  reason: str) -> None:
    """A server of the lease failed: its binding fails, its slot is free
    for another boot, and the lease is degraded with `reason`.
    """
    db_bindings.server_failed(ctx, instance_uuid, lease_id, reason)
