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

"""Leases waiting for approval, as the engine sees them: rejected at
their start if no admin approved them by then (their start event), and
once their hold is over (``[reservation] approval_hold``, a periodic
task).  Each rejection is one conditional write, so that of several
engines one makes it; its notification is stored with it and sent here.
"""

from typing import Callable

from nova_reservation.db import api as db_api
from nova_reservation.engine import outcomes
from nova_reservation.lease import approval as lease_approval
from nova_reservation import ledger as ledger_mod
from nova_reservation import status


def at_start(event, claim: str, lease) -> outcomes.Outcome:
    """The outcome of the start event of a lease still waiting for
    approval: done, and the lease rejected with it (nothing started).
    """
    return outcomes.Outcome(
        event.id, claim, status.DONE, lease_id=lease.id,
        writes=((lease_approval.at_start(lease, event.id), (), {}),))


class Approvals:

    def __init__(self, clock: Callable[[], float], outbox) -> None:
        self.clock = clock
        self.outbox = outbox
        self.ctx = db_api.Context()

    def run(self) -> list:
        """Reject the leases whose wait is over; the ids rejected."""
        gone = lease_approval.expire(ledger_mod.from_epoch(self.clock()))
        if self.outbox.notifier:
            self.outbox.flush()
        return gone
