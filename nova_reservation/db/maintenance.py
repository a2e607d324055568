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

"""Maintenance windows: those whose servers must leave their nodes."""

import datetime
import json

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models
from nova_reservation.lease import resource_types
from nova_reservation import status


@api.reader
def approaching(ctx, until: datetime.datetime,
                now: datetime.datetime) -> list:
    """[(reservation, lease)] of the maintenance windows not ended that
    start by `until`, first the earliest.
    """
    r, t = models.Reservation, models.Lease
    return [tuple(row) for row in ctx.session.execute(sa.select(r, t).join(
        t, t.id == r.lease_id).where(
        r.resource_type == resource_types.MAINTENANCE,
        r.deleted == sa.false(),
        t.status.in_((status.PENDING, status.ACTIVE)),
        t.start_at <= until, t.end_at > now).order_by(t.start_at, r.id))]


@api.writer
def set_unmoved(ctx, reservation_id: str, unmoved: list) -> bool:
    """Record the servers the window could not move off ([{server_id,
    node, reason}]); whether that changed the record.
    """
    value = json.dumps(unmoved, sort_keys=True) if unmoved else None
    r = models.Reservation
    known = ctx.session.execute(sa.select(r.unmoved_servers).where(
        r.id == reservation_id)).scalar()
    if known == value:
        return False
    ctx.session.execute(sa.update(r).where(r.id == reservation_id).values(
        unmoved_servers=value))
    return True


@api.reader
def slot_nodes(ctx, instance_uuids, now: datetime.datetime) -> dict:
    """{server uuid: node} of the slots not ended that hold the servers
    `instance_uuids`: where each must run.
    """
    s = models.Slot
    uuids = list(instance_uuids)
    if not uuids:
        return {}
    return dict(ctx.session.execute(sa.select(s.instance_uuid, s.node).where(
        s.instance_uuid.in_(uuids), s.deleted == sa.false(),
        s.end_at > now).order_by(s.start_at)).all()[::-1])
