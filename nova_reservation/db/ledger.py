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

"""The capacity ledger: slots on nodes over time, and its generation.

Every ledger write starts with `bump`, whose row lock makes writers take
turns and whose generation lets readers (`db.changes`) fetch only what is
new.  Reservations carry a generation too: the ledger's copies
(`nova_reservation.ledger.memory`) know each reservation's kind and owner.
"""

import datetime
import json
from typing import Iterable, Optional

from oslo_db import api as oslo_db_api
import sqlalchemy as sa

from nova_reservation.capacity import amounts
from nova_reservation.db import api
from nova_reservation.db import models
from nova_reservation.exception import LedgerConflict
from nova_reservation.exception import NotShared
from nova_reservation.lease import floatingips
from nova_reservation.lease import resource_types
from nova_reservation.lease import shares
from nova_reservation import status

# What `claim_slots` holds slots with, until the boot's servers exist.
CLAIM_PREFIX = 'boot-'
# What `hold` marks the slots of a lease change with until it is written
# (`leases.change`) or given up (`holds.drop_hold`): they count against the
# nodes like any slot, and belong to no reservation's slots (`slots`).
HOLD_PREFIX = 'hold-'


@api.writer
def bump(ctx, planned: Optional[int] = None,
         nodes: Iterable[str] = ()) -> int:
    """Advance the ledger generation, the first write of every ledger
    transaction: its row lock makes writers take turns.  Returns the new
    generation, which the transaction's rows carry.

    With `planned` (the generation a plan was made on), only if no slot on
    `nodes` was written since (else LedgerConflict): a plan is only stale
    where it adds to a node, so writers on different nodes never make each
    other plan again (as Placement's generations are per provider).
    """
    table = models.LedgerState.__table__
    ctx.session.execute(table.update().where(table.c.id == 1).values(
        generation=table.c.generation + 1))
    nodes = sorted(set(nodes))
    if planned is not None and nodes:
        s = models.Slot
        if ctx.session.execute(sa.select(s.id).where(
                s.node.in_(nodes), s.generation > planned).limit(1)).first():
            raise LedgerConflict()
        # An address taken must still be registered: its removal bumps
        # the generation first (`floatingips.delete`), so it is seen here.
        ids = {n[len(floatingips.PREFIX):] for n in nodes
               if floatingips.is_address(n)}
        f = models.FloatingIP
        if ids and ctx.session.execute(sa.select(sa.func.count(f.id)).where(
                f.id.in_(sorted(ids)))).scalar_one() < len(ids):
            raise LedgerConflict()
    return ctx.session.execute(sa.select(table.c.generation).where(
        table.c.id == 1)).scalar_one()


def extras_column(value: tuple) -> Optional[str]:
    """The `extras` column of a slot holding `value` (as
    `capacity.extras` gives).
    """
    if not value:
        return None
    return json.dumps([[provider, rc, n] for (provider, rc), n in value])


def extras_value(column: Optional[str]) -> tuple:
    """The extras of a slot whose `extras` column is `column`."""
    if not column:
        return amounts.NO_EXTRAS
    return amounts.extras({(provider, rc): n
                           for provider, rc, n in json.loads(column)})


@api.writer
def add_slots(ctx, generation: int, reservation_id: str,
              slots: Iterable[dict]) -> None:
    """New slots of a reservation (`slots`: their columns)."""
    for values in slots:
        ctx.session.add(models.Slot(
            generation=generation, deleted=False,
            reservation_id=reservation_id, **values))


def _not_held(s) -> sa.sql.ColumnElement:
    """Slots that are not held for a change being made (`hold`)."""
    return sa.or_(s.instance_uuid.is_(None),
                  s.instance_uuid.notlike(HOLD_PREFIX + '%'))


@api.reader
def slots(ctx, reservation_id: str, deleted: bool = False) -> list:
    """The reservation's slots (with `deleted`, the released ones too),
    without those held for a change of its lease not written yet.
    """
    s = models.Slot
    query = sa.select(s).where(s.reservation_id == reservation_id,
                               _not_held(s))
    if not deleted:
        query = query.where(s.deleted == sa.false())
    return api.rows(ctx, query.order_by(s.id))


@api.reader
def slot_of(ctx, reservation_id: str,
            instance_uuid: str) -> Optional[models.Slot]:
    """The slot of the reservation that the server holds."""
    s = models.Slot
    return api.row(ctx, sa.select(s).where(
        s.reservation_id == reservation_id,
        s.instance_uuid == instance_uuid, s.deleted == sa.false()))


@api.reader
def slots_on(ctx, node: str, after: datetime.datetime) -> list:
    """The slots on `node` that end after `after`."""
    s = models.Slot
    return api.rows(ctx, sa.select(s).where(
        s.node == node, s.deleted == sa.false(), s.end_at > after).order_by(
        s.end_at.desc(), s.id))


def _choose(found: list, instance_uuid: str, node: Optional[str]) -> tuple:
    """(the slot the server holds after binding, the sibling's slot it
    swaps with or None); (None, None) if it has none.
    """
    mine = next((s for s in found if s.instance_uuid == instance_uuid),
                None)
    there = next((s for s in found if s.node == node and s is not mine
                  and s.instance_uuid is None), None) or next(
        (s for s in found if s.node == node and s is not mine), None)
    if mine is None:
        if there is None or there.instance_uuid is not None:
            return None, None
        return there, None
    if mine.node != node and there is not None:
        return there, mine
    return mine, None


@api.reader
def slot_for(ctx, reservation_id: str, instance_uuid: str,
             node: Optional[str]) -> Optional[models.Slot]:
    """The slot that `bind_slot` would tie the server to (or None)."""
    return _choose(slots(ctx, reservation_id), instance_uuid, node)[0]


@api.writer
def bind_slot(ctx, reservation_id: str, instance_uuid: str,
              node: Optional[str], host: Optional[str],
              slot_host: Optional[str] = None) -> Optional[models.Slot]:
    """Tie a server to the slot of its reservation on the node it runs on.

    A server already holds a slot from the boot (`take_slots`); when Nova
    put it on another node of the reservation (multi-create), it swaps
    slots with the sibling that holds the slot there.  A slot that still
    has no host gets `host` (the server's, on its node) or `slot_host`.
    Returns the server's slot, or None if it has none.
    """
    found = slots(ctx, reservation_id)
    mine, swapped = _choose(found, instance_uuid, node)
    if mine is None:
        return None
    if swapped is not None:
        swapped.instance_uuid = mine.instance_uuid
    gen = bump(ctx)
    mine.instance_uuid = instance_uuid
    if host and mine.node == node:
        mine.host = host
    elif mine.host is None:
        mine.host = slot_host
    for s in found:
        if s in ctx.session.dirty:
            s.generation = gen
    ctx.session.flush()
    return mine


@api.writer
def take_slots(ctx, reservation_id: str, instance_uuids: Iterable[str],
               claim: Optional[str] = None) -> None:
    """Each server holds one slot of the reservation (one it holds
    already, or of those the boot claimed (`claim`), or else a free one).
    Claimed slots left over are free again.
    """
    s = models.Slot
    uuids = list(instance_uuids)
    mine = [s.reservation_id == reservation_id, s.deleted == sa.false()]
    holding = set(ctx.session.execute(sa.select(s.instance_uuid).where(
        *mine, s.instance_uuid.in_(uuids))).scalars())
    uuids = [u for u in uuids if u not in holding]
    if not uuids and not claim:
        return
    gen = bump(ctx)
    held = api.rows(ctx, sa.select(s).where(
        *mine,
        s.instance_uuid == claim if claim else s.instance_uuid.is_(None)
    ).order_by(s.id))
    for uuid, slot in zip(uuids, held):
        slot.instance_uuid = uuid
        slot.generation = gen
    for slot in held[len(uuids):]:
        slot.instance_uuid = None   # fewer servers than held
        slot.generation = gen


@api.writer
def set_times(ctx, generation: int, reservation_ids: Iterable[str],
              start_at: datetime.datetime,
              end_at: datetime.datetime) -> None:
    """The reservations' slots move to [start_at, end_at)."""
    s = models.Slot
    ctx.session.execute(sa.update(s).where(
        s.reservation_id.in_(list(reservation_ids)),
        s.deleted == sa.false()).values(
        start_at=start_at, end_at=end_at, generation=generation))


@api.reader
def nodes_of(ctx, reservation_ids: Iterable[str]) -> list:
    """The nodes of the reservations' slots, one per slot."""
    s = models.Slot
    return list(ctx.session.execute(sa.select(s.node).where(
        s.reservation_id.in_(list(reservation_ids)),
        s.deleted == sa.false())).scalars())


@api.writer
def release(ctx, lease_id: str) -> None:
    """Give the lease's capacity back: its slots and reservations go."""
    gen = bump(ctx)
    res_ids = sa.select(models.Reservation.id).where(
        models.Reservation.lease_id == lease_id).scalar_subquery()
    ctx.session.execute(sa.update(models.Slot).where(
        models.Slot.reservation_id.in_(res_ids)).values(
        deleted=True, generation=gen))
    ctx.session.execute(sa.update(models.Reservation).where(
        models.Reservation.lease_id == lease_id).values(
        deleted=True, status=status.RESERVATION_DELETED, generation=gen))


@api.writer
def give_back(ctx, reservation_id: str, slot_ids: Iterable[int]) -> list:
    """Free slots of a running reservation go back to the pool (those
    that no server took meanwhile): the ids given back.
    """
    s, r = models.Slot, models.Reservation
    gen = bump(ctx)
    free = list(ctx.session.execute(sa.select(s.id).where(
        s.id.in_(list(slot_ids)), s.reservation_id == reservation_id,
        s.instance_uuid.is_(None), s.deleted == sa.false()).with_for_update(
    )).scalars())
    if free:
        ctx.session.execute(sa.update(s).where(s.id.in_(free)).values(
            deleted=True, generation=gen))
        ctx.session.execute(sa.update(r).where(r.id == reservation_id).values(
            amount=r.amount - len(free), generation=gen,
            updated_at=api.utcnow()))
    return free


@api.writer
def drop_slots(ctx, generation: int, reservation_id: str) -> None:
    """A reservation's slots go: it is placed again, in a new shape."""
    ctx.session.execute(sa.update(models.Slot).where(
        models.Slot.reservation_id == reservation_id,
        models.Slot.deleted == sa.false()).values(
        deleted=True, generation=generation))


@api.writer
def unbind(ctx, lease_ids: Iterable[str]) -> None:
    """The leases are over: servers they leave running are ordinary ones,
    and their slots hold no server.
    """
    res_ids = sa.select(models.Reservation.id).where(
        models.Reservation.lease_id.in_(list(lease_ids))).scalar_subquery()
    bound = [models.Slot.reservation_id.in_(res_ids),
             models.Slot.instance_uuid.isnot(None), _not_held(models.Slot)]
    if ctx.session.execute(sa.select(models.Slot.id).where(
            *bound).limit(1)).first() is None:
        return   # Nothing to change: no ledger write (it serialises).
    gen = bump(ctx)
    ctx.session.execute(sa.update(models.Slot).where(*bound).values(
        instance_uuid=None, generation=gen))


@api.writer
def free_servers(ctx, instance_uuids: Iterable[str]) -> None:
    """The servers' slots are free for another boot; a server
    reservation's slot, which no other server may take, goes.
    """
    s, r = models.Slot, models.Reservation
    held = ctx.session.execute(sa.select(s, r.resource_type).join(
        r, r.id == s.reservation_id).where(
        s.instance_uuid.in_(list(instance_uuids)),
        s.deleted == sa.false())).all()
    if not held:
        return
    gen = bump(ctx)
    for slot, kind in held:
        slot.generation = gen
        if kind == resource_types.SERVER:
            slot.deleted = True
        else:
            slot.instance_uuid = None


class _TooFew(Exception):
    pass


# Boots that claim at the same moment may deadlock: the loser tries again.
# Outermost only (it opens its own transaction).
@oslo_db_api.wrap_db_retry(max_retries=5, retry_on_deadlock=True,
                           retry_interval=0.01, max_retry_interval=0.1)
def claim_slots(ctx, reservation_id: str, count: int, claim: str,
                project_id: Optional[str] = None) -> list:
    """Hold `count` free slots of a reservation for a boot, atomically;
    their ids, or [] (nothing held) if there are not that many.  With
    `project_id`, only if that project may use the reservation then
    (else NotShared): a share taken back before the claim refuses it.
    """
    try:
        return _claim_slots(ctx, reservation_id, count, claim, project_id)
    except _TooFew:
        return []


@api.writer
def _claim_slots(ctx, reservation_id: str, count: int, claim: str,
                 project_id: Optional[str]) -> list:
    s = models.Slot
    # The ledger row first: boots into one reservation take turns, and
    # each reads the slots as the one before left them (and a change of
    # its shares, which bumps it too, comes before or after).
    gen = bump(ctx)
    if project_id is not None:
        res = ctx.session.get(models.Reservation, reservation_id,
                              populate_existing=True)
        if res is None or res.deleted or not shares.row_may_use(
                res, project_id):
            raise NotShared()
    free = list(ctx.session.execute(sa.select(s.id).where(
        s.reservation_id == reservation_id, s.instance_uuid.is_(None),
        s.deleted == sa.false()).order_by(s.id).limit(
        count).with_for_update()).scalars())
    if len(free) < count:
        raise _TooFew()   # rolls the bump back
    ctx.session.execute(sa.update(s).where(s.id.in_(free)).values(
        instance_uuid=claim, generation=gen))
    return free


@api.writer
def release_claim(ctx, claim: str) -> None:
    """The boot is over: the slots it claimed and did not use are free."""
    gen = bump(ctx)
    ctx.session.execute(sa.update(models.Slot).where(
        models.Slot.instance_uuid == claim).values(
        instance_uuid=None, generation=gen))


@api.reader
def claims(ctx, prefix: str = CLAIM_PREFIX) -> set:
    """The claims of the boots that hold slots now (`claim_slots`), or
    with `prefix` HOLD_PREFIX, the holds of changes (`hold`).
    """
    s = models.Slot
    return set(ctx.session.execute(sa.select(s.instance_uuid).where(
        s.instance_uuid.like(prefix + '%'),
        s.deleted == sa.false()).distinct()).scalars())


@api.writer
def move_slots(ctx, planned: int, moves: dict) -> None:
    """Put slots on other nodes ({slot id: `capacity.Placed`}), if their
    new nodes are as they were at generation `planned`.
    """
    gen = bump(ctx, planned, (node for node, _, _ in moves.values()))
    for slot_id, (node, res, extras) in moves.items():
        ctx.session.execute(sa.update(models.Slot).where(
            models.Slot.id == slot_id).values(
            node=node, host=None, vcpus=res.vcpus, memory_mb=res.memory_mb,
            disk_gb=res.disk_gb, extras=extras_column(extras),
            generation=gen))


@api.reader
def bound_servers(ctx) -> dict:
    """{server uuid: lease id} of the servers that hold a slot."""
    s, r = models.Slot, models.Reservation
    return dict(ctx.session.execute(sa.select(
        s.instance_uuid, r.lease_id).join(
        r, r.id == s.reservation_id).where(
        s.instance_uuid.isnot(None), s.deleted == sa.false(),
        s.instance_uuid.notlike(CLAIM_PREFIX + '%'), _not_held(s))).all())
