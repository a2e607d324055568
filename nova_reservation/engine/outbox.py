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

"""The notice outbox: an event's notification is stored with its outcome
(`outcomes.record`), sent after the commit, and dropped once sent; one
that its engine could not send (it died, the broker was away) is sent by
any engine later.  A notice is never sent twice by one engine.
"""

import datetime
import threading
from typing import Iterable

from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import notices as db_notices
from nova_reservation import notifications

CONF = conf.CONF


class Outbox:

    def __init__(self, notifier, engine_id: str, pool, clock) -> None:
        self.notifier = notifier
        self.engine_id = engine_id
        self.pool = pool
        self.clock = clock
        self.ctx = db_api.Context()
        # Notices sent but not yet dropped from the store.
        self._sent: set = set()
        self._lock = threading.Lock()

    def claim_for(self, notice: dict) -> dict:
        """The notice, held by this engine to send; taken over by another
        if this one dies first.
        """
        return dict(notice, claimed_by=self.engine_id,
                    claim_expires=self.clock() + datetime.timedelta(
                        seconds=CONF.reservation.event_claim_timeout))

    def store_update(self, ctx, lease_id: str, told: list) -> None:
        """Store a lease.update of the lease as `ctx` has just written it,
        in ctx's transaction, and put it in `told`, to `send` once that
        commits; nothing without a notifier.  It replaces the lease's
        notice of a try whose transaction was rolled back.
        """
        if not self.notifier:
            return
        details = db_leases.details(ctx, [lease_id])[lease_id]
        notice = self.claim_for(dict(
            id=uuidutils.generate_uuid(), lease_id=lease_id,
            event_type='lease.update', payload=jsonutils.dumps(
                notifications.lease_payload(lease_id, details))))
        db_notices.add(ctx, [notice], self.clock())
        told[:] = [n for n in told if n['lease_id'] != lease_id] + [notice]

    def send(self, notices: Iterable) -> None:
        """Send stored notices (dicts or rows): the leases side by side
        (each publish waits for the broker's confirm), a lease's own oldest
        first.  They are dropped from the store once per pass (`flush`),
        all in one statement, and kept in memory till then.
        """
        def send_all(lease_notices):
            for notice in lease_notices:
                self.notifier.send(_get(notice, 'event_type'),
                                   jsonutils.loads(_get(notice, 'payload')))
                with self._lock:
                    self._sent.add(_get(notice, 'id'))
        by_lease: dict = {}
        for notice in notices:
            by_lease.setdefault(_get(notice, 'lease_id'), []).append(notice)
        for sending in [self.pool.submit(send_all, n)
                        for n in by_lease.values()]:
            sending.result()

    def holds_sent(self) -> bool:
        """Are notices sent but still in the store (`flush` drops them)?"""
        with self._lock:
            return bool(self._sent)

    def _forget_sent(self) -> None:
        with self._lock:
            sent, self._sent = self._sent, set()
        if not sent:
            return
        try:
            db_notices.forget(self.ctx, sent)
        except Exception:
            with self._lock:
                self._sent |= sent
            raise

    def flush(self) -> None:
        """Drop what was sent (in this pass, or while the store was away);
        send the notices that an engine stored but could not send.
        """
        self._forget_sent()
        self.send(db_notices.claim_unsent(
            self.ctx, self.engine_id, self.clock(),
            CONF.reservation.event_claim_timeout))
        self._forget_sent()


def _get(notice, field: str):
    return notice[field] if isinstance(notice, dict) else getattr(notice,
                                                                  field)
