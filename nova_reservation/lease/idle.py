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

"""Idle leases, as the lease records them: idle since a moment, or busy
again; each idle stretch told once, with the release of the capacity it
leaves unused.  The engine measures the leases (`engine.idle`).
"""

import datetime
from typing import Optional

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger

STORE = db_api.Context()


def mark(lease_id: str, since: Optional[datetime.datetime]) -> None:
    """The lease is idle since `since` (kept if it already was), or busy
    again (None: its next idle stretch is told anew).
    """
    db_leases.set_idle(STORE, lease_id, since)


def tell(ctx, lease_id: str, since: datetime.datetime, unused: list,
         release: bool) -> Optional[list]:
    """Take the telling of the lease's idle stretch that began at `since`,
    in the transaction `ctx` (the notice that tells it joins it): None if
    another engine told it.  Else, with `release`, the slots of `unused`
    ([(reservation, slot)]) go back to the pool: those no server took
    meanwhile, which it returns in the same shape.
    """
    if not db_leases.tell_idle(ctx, lease_id, since):
        return None
    given: list = []
    if not release:
        return given
    by_res: dict = {}
    for res, slot in unused:
        by_res.setdefault(res.id, (res, []))[1].append(slot)
    for res, slots in by_res.values():
        freed = set(db_ledger.give_back(ctx, res.id, [s.id for s in slots]))
        given += [(res, s) for s in slots if s.id in freed]
    return given
