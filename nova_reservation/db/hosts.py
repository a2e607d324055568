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

"""Reservable hosts: the compute nodes enrolled for host reservations."""

from typing import Optional

import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models


@api.reader
def get_all(ctx) -> list:
    return api.rows(ctx, sa.select(models.Host).order_by(models.Host.id))


@api.reader
def mark(ctx) -> tuple:
    """A value that changes whenever a host is enrolled, changed or
    removed (the only writes of the table are below).
    """
    h = models.Host
    return tuple(ctx.session.execute(sa.select(
        sa.func.count(h.id), sa.func.max(h.id),
        sa.func.max(sa.func.coalesce(h.updated_at, h.created_at)))).one())


@api.reader
def get(ctx, host_id: int) -> Optional[models.Host]:
    return ctx.session.get(models.Host, host_id)


@api.writer
def create(ctx, **values) -> models.Host:
    host = models.Host(created_at=api.utcnow(), reservable=True, **values)
    ctx.session.add(host)
    ctx.session.flush()
    return host


@api.writer
def update(ctx, host_id: int, **values) -> None:
    ctx.session.execute(sa.update(models.Host).where(
        models.Host.id == host_id).values(updated_at=api.utcnow(), **values))


@api.writer
def delete(ctx, host_id: int) -> None:
    ctx.session.execute(sa.delete(models.Host).where(
        models.Host.id == host_id))


@api.reader
def private_properties(ctx) -> set:
    """The names of the extra capabilities that only admins see."""
    p = models.HostProperty
    return set(ctx.session.execute(sa.select(p.name).where(
        p.private == sa.true())).scalars())


@api.writer
def set_property(ctx, name: str, private: bool) -> None:
    """Make the extra capability `name` private, or not."""
    ctx.session.merge(models.HostProperty(name=name, private=private,
                                          updated_at=api.utcnow()))
