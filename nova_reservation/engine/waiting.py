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

"""Waiting leases (``if_busy: wait``): tried again until they fit.

A lease that did not fit when it was made waits, holding nothing (its
servers, if it is a boot's, are reserved and offloaded).  At each try
(every ``retry_interval`` minutes, else ``[reservation] wait_interval``
seconds) the planner places it at its start, now for a start of now, or
with ``flexible_start`` at the earliest start that fits up to
``start_before``.  Placed, it is PENDING with its events; it is REFUSED
once its start (or ``start_before``) has passed, or after ``retries``
tries.  Each outcome is told (``lease.update``), stored with it in one
transaction; each try is taken by one engine (`lease.waiting.take_try`).
"""

import datetime
from typing import Callable, Optional

from oslo_log import log as logging

from nova_reservation.capacity import epoch
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import waiting as db_waiting
from nova_reservation import exception
from nova_reservation.lease import request as plan_request
from nova_reservation.lease import service as lease_service
from nova_reservation.lease import waiting as lease_waiting

LOG = logging.getLogger(__name__)
CONF = conf.CONF


def deadline(lease) -> Optional[datetime.datetime]:
    """The latest start a waiting lease may still take (None: it waits as
    long as its tries last).
    """
    if lease.start_before is not None:
        return lease.start_before
    if not (lease.start_now or lease.flexible_start):
        return lease.start_at
    if CONF.reservation.max_advance:
        return lease.created_at + datetime.timedelta(
            seconds=CONF.reservation.max_advance)
    return None


class Waiting:

    def __init__(self, clock: Callable[[], float], outbox) -> None:
        self.clock = clock
        self.outbox = outbox
        self.ctx = db_api.Context()

    def run(self) -> None:
        now = self.clock()
        for lease in db_waiting.waiting_due(self.ctx,
                                            epoch.from_epoch(now)):
            self._try(lease, now)
        if self.outbox.notifier:
            self.outbox.flush()

    def _try(self, lease, now: float) -> None:
        if not lease_waiting.take_try(lease, epoch.from_epoch(
                now + plan_request.retry_interval(lease))):
            return   # another engine tries it
        tries = (lease.tries or 0) + 1
        told: list = []
        placed: list = []

        def also(ctx) -> None:
            placed.append(lease.id)
            self.outbox.store_update(ctx, lease.id, told)

        try:
            lease_service.place(lease, now, also)
        except exception.ReservationError as e:
            # A quota passed waits too: its project may give some back.
            reason = (str(e) if e.kind == exception.NoCapacity.kind or
                      isinstance(e, (exception.NotAllowed,
                                     exception.ServiceUnavailable))
                      else 'the ledger was too busy')
            last = deadline(lease)
            if (lease.retries and tries >= lease.retries) or (
                    last is not None and
                    epoch.to_epoch(last) <= now):
                self._refuse(lease, tries, reason)
            else:
                lease_waiting.keep_waiting(
                    lease.id, 'waiting for room (try %d%s): %s' % (
                        tries, ' of %d' % lease.retries
                        if lease.retries else '', reason))
            return
        if placed:
            LOG.info('Waiting lease %s placed after %d tries', lease.id,
                     tries)
            self._send(told)

    def _refuse(self, lease, tries: int, reason: str) -> None:
        told: list = []
        why = 'refused after %d %s: %s' % (tries, 'try' if tries == 1
                                           else 'tries', reason)
        if lease_waiting.refuse(lease.id, why,
                                lambda ctx: self.outbox.store_update(
                                    ctx, lease.id, told)):
            LOG.info('Waiting lease %s %s', lease.id, why)
            self._send(told)

    def _send(self, notices: list) -> None:
        if notices:
            self.outbox.send(notices)
