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

"""Registered floating IP addresses (/v1/floatingips)."""

import datetime
from typing import Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import ledger
from nova_reservation.db import models
from nova_reservation.lease import floatingips


@api.reader
def get_all(ctx, network_id: Optional[str] = None) -> list:
    f = models.FloatingIP
    query = sa.select(f).order_by(f.created_at, f.id)
    if network_id is not None:
        query = query.where(f.floating_network_id == network_id)
    return api.rows(ctx, query)


@api.reader
def mark(ctx) -> tuple:
    """A value that changes whenever an address is registered or removed
    (the only writes of the table are below).
    """
    f = models.FloatingIP
    return tuple(ctx.session.execute(sa.select(
        sa.func.count(f.id), sa.func.max(f.created_at))).one())


@api.reader
def get(ctx, floatingip_id: str) -> Optional[models.FloatingIP]:
    return ctx.session.get(models.FloatingIP, floatingip_id)


@api.writer
def create(ctx, **values) -> models.FloatingIP:
    """Register an address; oslo.db's DBDuplicateEntry if it is already."""
    row = models.FloatingIP(created_at=api.utcnow(), reservable=True,
                            **values)
    ctx.session.add(row)
    ctx.session.flush()
    return row


@api.writer
def delete(ctx, floatingip_id: str, after: datetime.datetime) -> list:
    """Remove an address unless the ledger holds it after `after`: the
    slots that hold it (nothing removed), or [] once removed.  The
    generation moves first, so that a lease planned with the address
    meanwhile is planned again (`ledger.bump`).
    """
    ledger.bump(ctx)
    held = ledger.slots_on(ctx, floatingips.node_of(floatingip_id), after)
    if not held:
        ctx.session.execute(sa.delete(models.FloatingIP).where(
            models.FloatingIP.id == floatingip_id))
    return held
