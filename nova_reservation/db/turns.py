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

"""Turns: recurring work that one engine at a time does.

Every engine runs the same periodic tasks; the reconciler's repairs
(deleting a server that outlived its lease, removing a lease left
CREATING) must not be done by two engines at once: Nova itself fails
two concurrent deletions of one unbuilt server, and may leave it
listed but impossible to delete.  An engine takes a task's turn for a
while with a compare-and-swap, and keeps it each time it runs the task;
the others skip the task until the turn ends.
"""

import datetime

from oslo_db import exception as db_exception
import sqlalchemy as sa

from nova_reservation.db import api
from nova_reservation.db import models


@api.writer
def _take(ctx, name: str, engine_id: str, now: datetime.datetime,
          until: datetime.datetime) -> bool:
    t = models.Turn
    if ctx.session.execute(sa.update(t).where(
            t.name == name, sa.or_(t.until <= now, t.engine == engine_id)
    ).values(engine=engine_id, until=until)).rowcount == 1:
        return True
    if api.row(ctx, sa.select(t.name).where(t.name == name)) is not None:
        return False
    ctx.session.execute(sa.insert(t).values(name=name, engine=engine_id,
                                            until=until))
    return True


def take(ctx, name: str, engine_id: str, now: datetime.datetime,
         seconds: float) -> bool:
    """Whether `engine_id` has task `name`'s turn for the next `seconds`:
    taken when no other engine's turn runs at `now`, or kept when it is
    its own.
    """
    try:
        return _take(ctx, name, engine_id, now,
                     now + datetime.timedelta(seconds=seconds))
    except db_exception.DBDuplicateEntry:
        return False   # another engine took the first turn at once
