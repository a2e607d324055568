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

"""Waiting leases (``if_busy: wait``) as their tries move them: a try
taken by one engine, a lease that waits on, one refused at last.  The
engine tries them (`engine.waiting`); a try that fits is written by
`lease.write.Writer.place`.
"""

import datetime
from typing import Callable, Optional

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import waiting as db_waiting
from nova_reservation import status

STORE = db_api.Context()


def take_try(lease, next_try_at: datetime.datetime) -> bool:
    """Count a try of the waiting lease (its row) and set its next one;
    whether this engine got it (several engines try each lease once).
    """
    return db_waiting.take_try(STORE, lease, next_try_at)


def keep_waiting(lease_id: str, reason: str) -> None:
    """A waiting lease that did not fit at a try waits on, with `reason`
    (unless it left WAITING meanwhile).
    """
    db_leases.set_status(STORE, [lease_id], status.WAITING, reason,
                         only_from=(status.WAITING,))


def refuse(lease_id: str, reason: str,
           also: Optional[Callable] = None) -> bool:
    """The waiting lease is REFUSED with `reason`: its slots go, and its
    end removes what was made for it; whether it was waiting.
    `also(ctx)`: more to write in the same transaction.
    """
    return db_waiting.refuse(STORE, lease_id, reason, also)
