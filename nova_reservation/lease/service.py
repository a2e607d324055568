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

"""The lease service: the one road by which a lease is made, changed,
placed and deleted, for the boot hook, the lease API and the engine alike.

An entry point translates its request into a `Draft` (or a change), calls
one function here and translates the answer: a `Made`, or one of
`nova_reservation.exception`'s errors, which say what went wrong (the
entry point answers it in its own protocol).
"""

import dataclasses
import datetime
from typing import Callable, Iterable, NamedTuple, Optional

from nova import context as nova_context
from oslo_db import exception as db_exception
from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.clients import cells
from nova_reservation.clients import trusts
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation import enforcement
from nova_reservation import exception
from nova_reservation.lease import approvals
from nova_reservation.lease import bindings
from nova_reservation.lease import idempotency
from nova_reservation.lease import kinds
from nova_reservation.lease import maintenance
from nova_reservation.lease import nova_objects
from nova_reservation.lease import quotas as lease_quotas
from nova_reservation.lease.request import request_of
from nova_reservation.lease import schedule
from nova_reservation.lease import write
from nova_reservation import status

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Draft:
    """A lease as asked for, whichever entry point asked: the one shape
    the service takes.
    """
    values: dict            # its columns (name, start_at, end_at, ...)
    requests: list          # [ReservationRequest], one per reservation
    # [(start, end)] of each occurrence of a recurring lease (else None).
    intervals: Optional[list] = None
    token: Optional[str] = None    # client_token
    digest: Optional[str] = None   # of the request that carries the token
    # Its servers are made by the boot that asked for it: the lease stays
    # CREATING until they are bound (`db_bindings.bind_servers`).
    servers: bool = False


class Made(NamedTuple):
    lease_id: str
    waits: bool      # written waiting for room (``if_busy: wait``)
    again: bool      # an earlier create with the same client token made it
    reservation_ids: list   # of its reservations (the first occurrence's)
    awaiting: bool = False  # waits for an admin's approval (`approval`)


def earlier_create(ctx, token: Optional[str], digest: str) -> Optional[Made]:
    """What an earlier create of the caller's project with the client
    `token` made (for the request of `digest`), or None;
    ClientTokenConflict where it can not be the answer.
    """
    lease = idempotency.lease_of_token(db_api.Context(), ctx.project_id,
                                       token, digest)
    if lease is None:
        return None
    LOG.info('Lease %s: a create retried with its client token', lease.id)
    return Made(lease.id, lease.status == status.WAITING, True,
                [r.id for r in db_leases.reservations(db_api.Context(),
                                                      lease.id)])


def create(ctx, draft: Draft) -> Made:
    """Make the lease of `draft` for the caller of `ctx` (its project and
    user): planned and written whole, or written waiting for room, or
    refused (`nova_reservation.exception`) with nothing of it left.
    """
    same = earlier_create(ctx, draft.token, draft.digest)
    if same is not None:
        return same
    enforcement.check_create(ctx, draft.values, draft.requests)
    lease_id = uuidutils.generate_uuid()
    values = dict(draft.values, id=lease_id, project_id=ctx.project_id,
                  user_id=ctx.user_id, created_at=db_api.utcnow(),
                  status=status.CREATING if draft.servers
                  else status.PENDING, client_token=draft.token,
                  request_digest=draft.token and draft.digest)
    awaiting = approvals.gate(ctx, values, draft.requests, draft.servers)
    occurrences = (series(values, draft.requests, draft.intervals)
                   if draft.intervals else None)
    every = ([r for _, own, _ in occurrences for r in own] if occurrences
             else draft.requests)
    writer = write.shared()
    if _flavors_first(draft, values):
        # A lease that does not fit on the ledger as it is is refused
        # before the private flavors of its reservations are made (and
        # deleted again); one that fits is planned again as it is written.
        writer.ledger.refresh()
        writer.series_plans(occurrences or [(values, draft.requests, ())])
    made = nova_objects.private_objects(ctx, every)
    waits = False
    trust_id = None
    try:
        quota = lease_quotas.of(ctx, ctx.project_id)
        trust_id = _trust(ctx)
        for row in [values] + [v for v, _, _ in occurrences or ()]:
            row['trust_id'] = trust_id
        if occurrences and draft.servers:
            _series_in_one_cell(writer, occurrences, quota)
        elif occurrences:
            writer.create_series(occurrences, quota)
        elif maintenance.window_of(draft.requests) is not None:
            # An admin's window, on no project's quota, written whole.
            maintenance.create(writer, values,
                               maintenance.window_of(draft.requests))
        else:
            waits = writer.create_or_wait(values, draft.requests, quota)
    except exception.CellUnreachable as e:
        raise exception.CellUnreachable('%s; try again' % e) from e
    except db_exception.DBDuplicateEntry:
        # Another create with this token made its lease first.
        same = earlier_create(ctx, draft.token, draft.digest)
        if same is None:
            raise
        return same
    finally:
        kept = db_leases.get(db_api.Context(), lease_id)
        if kept is None or kept.status == status.DELETED:
            for thing in made:   # private flavors and server groups
                thing.destroy()
            _quietly(trusts.delete, trust_id)
    LOG.info('Lease %s (%s) created: %s%s', lease_id, values['name'],
             '; '.join(r.describe() for r in draft.requests),
             ', waiting for room' if waits else '')
    if awaiting and not draft.servers:   # a boot's, once bound
        approvals.requested(lease_id)
    return Made(lease_id, waits, False, [r.id for r in draft.requests],
                awaiting)


def _flavors_first(draft: Draft, values: dict) -> bool:
    """Whether the lease of `draft` is planned on the ledger before its
    private flavors are made: one that is refused when it does not fit
    (not a boot's, a waiting one or a maintenance window) and makes any.
    """
    asked = [kinds.of(r.resource_type) for r in draft.requests]
    return (not draft.servers and values.get('if_busy') != 'wait' and
            not any(k.window for k in asked) and
            any(k.private_flavor for k in asked))


def _trust(ctx) -> Optional[str]:
    """The trust of the caller to the engine for a new lease, if it gets
    one (`trusts`); TrustUnavailable when Keystone can not make it.
    """
    if not trusts.wanted(ctx):
        return None
    try:
        return trusts.make(ctx)
    except exception.TrustUnavailable as e:
        raise exception.TrustUnavailable(
            'The lease\'s trust (for the engine to act as its owner) could '
            'not be made: %s; try again' % e) from e


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception as e:   # left behind; it gives nothing away
        LOG.warning('%s%r: %s', fn.__name__, args, e)


def series(lease: dict, requests: list, intervals: list) -> list:
    """The occurrences of a recurring lease (`intervals`: [(start, end)]
    of each) for `Writer.create_series`: [(row values, requests,
    events)].  The first keeps the lease's id, which names the series,
    its requests and its client token.
    """
    found = []
    for number, (start, end) in enumerate(intervals):
        values = dict(lease, start_at=start, end_at=end,
                      series_id=lease['id'], occurrence=number)
        own = requests
        if number:
            values.update(id=uuidutils.generate_uuid(), client_token=None,
                          request_digest=None)
            own = [dataclasses.replace(r, id=uuidutils.generate_uuid())
                   for r in requests]
        found.append((values, own, schedule.lease_events(
            values, db_api.utcnow())))
    return found


def change(ctx, lease, values: dict, growth: Iterable[tuple] = (),
           replaced: Iterable[str] = (),
           also: Optional[Callable] = None) -> None:
    """Change `lease` (its row, at the version read) as
    `Writer.change` does, or refused; a reshaped instance reservation's
    flavor and server group are made again in Nova (`ctx`: the caller's
    Nova context; None where nothing is reshaped).
    """
    replaced = list(replaced)
    if ctx is not None:   # a user's change, not the engine's extension
        enforcement.check_update(lease, values, growth)
    try:
        maintenance.keeps_dates(lease, values)
        write.shared().change(lease, lease.version, values, growth,
                              replaced, also,
                              lease_quotas.of(ctx, lease.project_id))
    except (exception.LedgerBusy, exception.LeaseChanged) as e:
        raise exception.LeaseChanged(
            'lease %s changed while this change was made; read it again '
            'and retry' % lease.id) from e
    if replaced:
        nova_objects.reshape(ctx, lease, replaced)


def place(lease, now: float, also: Optional[Callable] = None) -> None:
    """Place a waiting lease (its row) where it may start as of `now`
    (`Writer.place`), or refused.
    """
    store = db_api.Context()
    try:
        requests = _in_their_cell(store, lease.id, [
            request_of(r) for r in db_leases.reservations(store, lease.id)])
    except exception.CellUnreachable as e:
        raise exception.CellUnreachable(str(e)) from e
    write.shared().place(lease, requests, now, also,
                         lease_quotas.of(None, lease.project_id))


def _series_in_one_cell(writer: write.Writer, occurrences: list,
                        quota=None) -> None:
    """Write the occurrences of a recurring boot lease, its servers' slots all
    in one cell (the first, in Nova's order, that holds them all): its servers
    go from one occurrence to the next, and Nova builds a server only in the
    cell it was made in.  exception.NoCapacity: the refusal that names the
    earliest start.
    """
    found = cells.with_servers(nova_context.get_admin_context())
    if len(found) == 1:
        return writer.create_series(occurrences, quota)
    refusals = []
    for _, nodes in cells.readable(found):
        try:
            return writer.create_series([
                (values, [dataclasses.replace(r, nodes=nodes)
                          if kinds.of(r.resource_type).made_by_boot
                          else r for r in requests], events)
                for values, requests, events in occurrences], quota)
        except exception.NoCapacity as e:
            refusals.append(e)
    raise min(refusals, key=lambda e: e.earliest or datetime.datetime.max)


def _in_their_cell(store, lease_id: str, requests: list) -> list:
    """`requests`, each whose servers wait in a cell kept to its nodes:
    Nova builds a server only in the cell it was made in.
    """
    waiting = {}
    for binding in db_bindings.of_lease(store, lease_id):
        waiting.setdefault(binding.reservation_id, binding.instance_uuid)
    kept = []
    for req in requests:
        cell = (cells.of_server(waiting[req.id]) if req.id in waiting and
                kinds.of(req.resource_type).made_by_boot else None)
        kept.append(dataclasses.replace(req, nodes=cells.nodes_of(cell))
                    if cell else req)
    return kept


def waiting_cell(reservation_id: str) -> str:
    """The cell (its uuid) where the servers of a waiting reservation are
    made and wait: the one whose nodes hold the most of them over its
    lease's interval now, then the one with the most nodes, then the first
    (of those whose database answers); CellUnreachable if none does.
    """
    store = db_api.Context()
    res = db_leases.reservation(store, reservation_id)
    lease = db_leases.get(store, res.lease_id)
    req = request_of(res)
    need = capacity.Need(req.need, req.traits, req.extras)
    planner = write.shared()
    planner.ledger.refresh()
    start, end = (epoch.to_epoch(lease.start_at),
                  epoch.to_epoch(lease.end_at))
    shared, _ = planner.pools(start=start)
    try:
        found = cells.readable(cells.with_servers(
            nova_context.get_admin_context()))
    except exception.CellUnreachable as e:
        raise exception.CellUnreachable(
            'no cell to make the waiting servers in: %s; try again' % e
        ) from e
    best = None
    for index, (cell, nodes) in enumerate(found):
        hosts = [h for h in shared
                 if h.node in nodes and capacity.may_hold(h, need)]
        held = min(count for _, count in capacity.free_counts(
            hosts, planner.ledger.timelines, req.need, start, end,
            req.extras))
        rank = (held, len(hosts), -index)
        if best is None or rank > best[0]:
            best = (rank, cell.uuid)
    return best[1]


def delete(lease) -> list:
    """Begin to delete a lease (its row): the engine removes what it made.
    The series' id (its first occurrence's) deletes the whole series;
    another occurrence's, that occurrence only.  The ids whose deletion
    this began, or that are `lease`'s own.
    """
    store = db_api.Context()
    gone = [lease.id]
    if lease.series_id == lease.id:
        gone = [x.id for x in db_leases.series(
            store, [lease.id]).get(lease.id, [])] or gone
    return [i for i in gone
            if db_leases.begin_delete(store, i) or i == lease.id]


def discard(lease_id: str) -> bool:
    """Remove a lease still CREATING whose boot made nothing
    (`db_leases.discard`), and its trust; whether it did.
    """
    store = db_api.Context()
    lease = db_leases.get(store, lease_id)
    if not db_leases.discard(store, lease_id):
        return False
    if lease is not None:
        _quietly(trusts.delete, lease.trust_id)
    return True


def servers_gone(uuids: Iterable[str]) -> None:
    """Servers were deleted: their slots are free for other boots, and a
    lease left with none of its own servers goes.
    """
    for lease_id in bindings.servers_gone(uuids):
        take_down(lease_id)


def take_down(lease_id: str) -> bool:
    """A server lease left with none of its servers goes: its deletion
    begins (the engine removes what it made).  Whether it began.
    """
    return db_leases.begin_delete(db_api.Context(), lease_id)


def retry_event(lease_id: str, event_id: int) -> bool:
    """An event of the lease in ERROR is due again now, and the lease back
    to where it was (`db.leases.retry_event`); whether it was in ERROR.
    """
    return db_leases.retry_event(db_api.Context(), lease_id, event_id)
