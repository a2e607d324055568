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

"""Moving the future slots of leases off nodes that failed (their compute
service is down or disabled) to nodes that fit, as their reservations
asked.
"""

from typing import Iterable, Optional

from nova_reservation.clients import cells
from nova_reservation.db import api as db_api
from nova_reservation.db import holds as db_holds
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation import exception
from nova_reservation.lease.request import ReservationRequest
from nova_reservation.lease.request import slot_row_of
from nova_reservation.lease.request import traits_of
from nova_reservation.lease import write


def relocate(writer: write.Writer, failed_nodes: Iterable[str],
             now: float, window: Optional[tuple] = None,
             all_or_none: bool = False, running: bool = False) -> tuple:
    """Move the future slots off nodes whose compute service is down or
    disabled (those that meet `window` (start, end) only, if given), to
    nodes that fit; with `running`, the slots that began too (a
    maintenance window's: their servers are moved after them).

    Returns (moved slot count, leases that could not be moved, which
    are marked degraded; with `all_or_none`, nothing moves then).
    """
    failed = set(failed_nodes)
    for _ in range(write.LEDGER_RETRIES):
        gen = writer.ledger.refresh()
        view = writer.ledger.view
        stranded = [s for node in sorted(failed)
                    for s in view.slots_on(node)
                    if (s.start > now or running and not _claimed(s)) and (
                        window is None or
                        s.start < window[1] and s.end > window[0])]
        if not stranded:
            return 0, []
        moves, degraded, timelines = _moves(writer, stranded, failed,
                                            fresh=False)
        if degraded:
            # The cached view of the nodes counts the servers deleted
            # since it was read (Placement does not move a provider's
            # generation when a consumer's allocations go): what found no
            # room on it is placed again on Placement read anew, as a plan
            # is.
            moves, degraded, timelines = _moves(writer, stranded, failed,
                                                fresh=True)
        if all_or_none and degraded:
            return 0, sorted(degraded)
        added = [(slot.reservation_id,
                  slot_row_of(moves[slot.id], slot.start, slot.end))
                 for slot in stranded if slot.id in moves and
                 writer.on_shared_pool(slot.reservation_id)]
        try:
            if not added:
                _move(writer.ctx, gen, moves, degraded)
            else:
                writer.guarded(gen, added, timelines, lambda hold: _move(
                    writer.ctx, None, moves, degraded, hold),
                    'a server booted meanwhile took the last of node %s')
            return len(moves), sorted(degraded)
        except (exception.LedgerConflict, exception.NoCapacity):
            continue   # The next plan sees the boot's claim.
    raise exception.LedgerBusy()


def _moves(writer: write.Writer, stranded: list, failed: set,
           fresh: bool) -> tuple:
    """({slot id: its new place}, the leases whose slots find no room,
    the timelines with the moves) of the `stranded` slots, off the
    `failed` nodes (`fresh`: Placement read anew).
    """
    pools = writer.pools(unusable=failed, fresh=fresh)
    excluded = {s.id for s in stranded}
    timelines = {n: tl.copy(excluded) if excluded else tl
                 for n, tl in writer.ledger.timelines.items()
                 if n not in failed}
    moves, degraded = {}, set()
    fake_id = -1
    # A slot that holds a server keeps to the server's cell, its node's.
    cell_of = cells.node_cells({s.node for s in stranded if _bound(s)})
    cell_nodes: dict = {}
    by_reservation: dict = {}
    for slot in sorted(stranded, key=lambda s: (s.start, s.id)):
        cell = cell_of.get(slot.node) if _bound(slot) else None
        by_reservation.setdefault((slot.reservation_id, cell),
                                  []).append(slot)
    for (rid, cell), slots in by_reservation.items():
        res = db_leases.reservation(writer.ctx, rid)
        if res is None or res.deleted:
            continue
        if cell and cell not in cell_nodes:
            cell_nodes[cell] = cells.nodes_of(cell)
        placed = _replace(writer, res, slots, pools, timelines,
                          excluded, cell_nodes.get(cell))
        if not placed:
            degraded.add(res.lease_id)
            continue
        for slot, p in zip(slots, placed):
            moves[slot.id] = p
        fake_id = writer.overlay(timelines, rid, placed, slots[0].start,
                                 slots[0].end, fake_id)
    return moves, degraded, timelines


def _claimed(slot) -> bool:
    """Whether a boot under way claims the slot: its server may land on
    the slot's node at any moment, so the slot stays there.
    """
    return (slot.instance_uuid or '').startswith(db_ledger.CLAIM_PREFIX)


def _bound(slot) -> bool:
    """Whether the slot holds a server (not the claim of a boot under way,
    whose server is not in a cell yet).
    """
    return bool(slot.instance_uuid) and not _claimed(slot)


def _replace(planner, res, slots: list, pools, timelines,
             moving: set, nodes: Optional[frozenset] = None
             ) -> Optional[list]:
    """New places for some `slots` of reservation `res`, as its request
    asked: the host requirements, and the affinity with the slots that
    stay; only on `nodes` if given (the cell of their servers).
    """
    req = ReservationRequest(
        resource_type=res.resource_type, count=len(slots),
        min_count=len(slots), need=slots[0].resources,
        traits=traits_of(res), extras=slots[0].extras,
        affinity=res.affinity,
        hypervisor_properties=res.hypervisor_properties or '',
        resource_properties=res.resource_properties or '', nodes=nodes)
    staying = {s.node for s in planner.ledger.slots(res.id)
               if s.id not in moving}
    shared, reservable = pools
    if res.affinity is True and staying:
        shared = [h for h in shared if h.node in staying]
    elif res.affinity is False:
        shared = [h for h in shared if h.node not in staying]
    return planner.place_one(req, (shared, reservable), timelines,
                             slots[0].start, slots[0].end)


@db_api.writer
def _move(ctx, planned: Optional[int], moves: dict, degraded: Iterable[str],
          hold: Optional[tuple] = None) -> None:
    """Slots onto other nodes, and the leases that lost some degraded;
    `hold` as for `db_leases.change`.
    """
    db_holds.spend_hold(ctx, hold)
    db_ledger.move_slots(ctx, planned, moves)
    db_leases.mark_degraded(ctx, degraded)
