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

"""A split of a capacity or host reservation: some of its slots (or
hosts), and the servers on them, handed on to a new lease over the same
interval, for the same project or another one.

A split moves whole slots (a capacity reservation's, or a host
reservation's hosts) with the servers on them, and changes neither their
nodes nor their times: what the ledger holds on each node at each instant
is the same before and after, so a split can never overbook (`choose`:
which slots move).
"""

import dataclasses
from typing import Iterable, Optional

from nova.compute import api as compute_api
from nova import exception as nova_exception
from oslo_log import log as logging
from oslo_utils import uuidutils

from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation.db import splits as db_splits
from nova_reservation import exception
from nova_reservation.lease import kinds
from nova_reservation.lease import nova_objects
from nova_reservation.lease.request import request_of
from nova_reservation.lease.request import reservation_row
from nova_reservation.lease import schedule
from nova_reservation import status

LOG = logging.getLogger(__name__)


def split(ctx, lease, reservation_id: str, amount: int,
          project_id: Optional[str] = None,
          name: Optional[str] = None) -> str:
    """Move `amount` slots of reservation `reservation_id` of `lease` (its
    row) into a new lease of `project_id` (the lease's by default); the
    new lease's id.  InvalidParam for a reservation that is not the
    lease's or does not split; Conflict when it can not be done whole.
    """
    store = db_api.Context()
    if lease.status not in (status.PENDING, status.ACTIVE):
        raise exception.Conflict('lease %s is %s; only a lease that is '
                                 'pending or active splits' % (
                                     lease.id, lease.status), 'InvalidState')
    res = db_leases.reservation(store, reservation_id)
    if res is None or res.deleted or res.lease_id != lease.id:
        raise exception.Invalid('reservation_id: must be the id of a '
                                'reservation of lease %s' % lease.id,
                                'BadRequest')
    if res.resource_type not in kinds.SHAREABLE:
        raise exception.Invalid('reservation_id: %s is a %s reservation; '
                                'only %s reservations split' % (
                                    res.id, res.resource_type,
                                    ', '.join(kinds.SHAREABLE)),
                                'BadRequest')
    project = project_id or lease.project_id
    same = project == lease.project_id
    values = dict(
        id=uuidutils.generate_uuid(), name=name or lease.name,
        project_id=project, user_id=lease.user_id if same else None,
        start_at=lease.start_at, end_at=lease.end_at,
        # PENDING, with its start event: a running lease's part starts at
        # once (its flavor's access, its hosts' aggregate).
        status=status.PENDING, on_end=lease.on_end,
        before_end_minutes=lease.before_end_minutes,
        trust_id=lease.trust_id if same else None,
        created_at=db_api.utcnow())
    old = request_of(res)
    req = dataclasses.replace(
        old, id=uuidutils.generate_uuid(), count=amount,
        min_count=amount, server_group_id=None, private_flavor_id=None,
        shared_with=old.shared_with if same else (),
        flavor_id=(res.flavor_id if kinds.of(res.resource_type).copies_flavor
                   else None))
    made = nova_objects.private_flavors(ctx, [req])
    moved = None
    try:
        moved = db_splits.split(
            store, lease.id, res.id, amount, values,
            reservation_row(values, req), schedule.lease_events(
                values, db_api.utcnow()), _servers_on(ctx, res),
            lambda slots: choose(slots, amount))
    except exception.TooFewToSplit as e:
        raise exception.TooFewToSplit('amount: %d of reservation %s can not '
                                      'move: %s' % (amount, res.id, e)) from e
    except exception.LeaseChanged as e:
        raise exception.LeaseChanged('lease %s changed while it was split; '
                                     'read it again and retry' % lease.id
                                     ) from e
    finally:
        if moved is None:   # nothing written: its flavor goes
            for thing in made:
                thing.destroy()
    LOG.info('Lease %s: %d of reservation %s split into lease %s of '
             'project %s, with servers %s', lease.id, amount, res.id,
             values['id'], project, moved)
    return values['id']


def _servers_on(ctx, res) -> dict:
    """{server: its node} of a host reservation's servers, as Nova has
    them (read before the split's transaction: Nova's databases are not
    the store's).
    """
    if not kinds.of(res.resource_type).whole_hosts:
        return {}
    api = compute_api.API()
    nodes = {}
    for b in db_bindings.of_reservation(db_api.Context(), res.id):
        try:
            nodes[b.instance_uuid] = api.get(ctx.elevated(),
                                             b.instance_uuid).node
        except nova_exception.InstanceNotFound:
            continue
    return nodes


def choose(slots: Iterable[db_splits.Movable], amount: int) -> list:
    """The ids of the `amount` slots a split moves: those with no server
    first (a split hands on room before it hands on servers), then those
    with the fewest servers, by id; never one a boot or a change holds in
    flight.  TooFewToSplit if there are not that many, or if all would go (a
    reservation keeps at least one).
    """
    slots = list(slots)
    free = sorted((s for s in slots if not s.busy), key=lambda s: (
        s.instance_uuid is not None, s.servers, s.id))
    if amount >= len(slots):
        raise exception.TooFewToSplit(
            'the reservation has %d; a split leaves it at least '
            'one' % len(slots))
    if len(free) < amount:
        raise exception.TooFewToSplit(
            '%d of its %d can move now (the others are held by '
            'boots or changes in flight); try again' % (
                len(free), len(slots)))
    return [s.id for s in free[:amount]]
