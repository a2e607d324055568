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

"""The event engine: runs each lease event on time, exactly once.

Any number of engines may share the store.  An event is claimed with one
conditional UPDATE, so exactly one engine runs it; a claim expires after
``[reservation] event_claim_timeout`` so that an event whose engine died is
taken over.  The engine sleeps until the next event falls due (at most
``engine_poll_interval``), not on a coarse poll.
"""

from concurrent import futures
import datetime
import queue
import random
import socket
import threading
import time
from typing import Any, Callable, NamedTuple, Optional

from nova.scheduler.client import report
from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.engine import actions
from nova_reservation.engine import reconciler
from nova_reservation import ledger as ledger_mod
from nova_reservation import notifications
from nova_reservation import planner
from nova_reservation import status

LOG = logging.getLogger(__name__)
CONF = conf.CONF

# Seconds an outcome may wait for others to be written with it.
RECORD_DELAY = 0.05


class Ran(NamedTuple):
    """An event run, with what it came to."""
    event: Any
    details: Any   # db_api.LeaseDetails, as the action saw them
    outcome: db_api.Outcome


class Engine:

    def __init__(self, nova, clock: Callable[[], float] = time.time,
                 worker_id: Optional[str] = None,
                 on_event: Optional[Callable] = None,
                 notifier=None) -> None:
        self.nova = nova
        self.clock = clock
        self.worker_id = worker_id or '%s:%s' % (
            socket.gethostname(), uuidutils.generate_uuid()[:8])
        # Called after each event with (event, lease, outcome, details).
        self.on_event = on_event
        self.notifier = notifier
        self.planner = None   # made on first need (it reads Placement)
        self.reconciler = reconciler.Reconciler(nova, notifier, clock)
        # Notices sent but not yet dropped from the store.
        self._sent: set = set()
        self._sent_lock = threading.Lock()
        self._stop = threading.Event()
        self._pool = futures.ThreadPoolExecutor(
            CONF.reservation.engine_workers,
            thread_name_prefix='reservation-engine')

    def now(self) -> datetime.datetime:
        return ledger_mod.from_epoch(self.clock())

    def run_once(self) -> int:
        """Run every event that is due now; return how many finished.

        Events run side by side (``engine_workers``), and their outcomes
        are written together, a few statements and one commit for many
        events.  An event that takes long is written on its own later, so
        that it does not hold up the others.
        """
        now = self.now()
        work = self._take(now)
        done = self._run_all(work, now) if work else 0
        self.send_unsent()
        return done

    def _take(self, now: datetime.datetime) -> list:
        """Claim the due events: [(event, holder)], one per lease, oldest
        first.  An event whose lease has an earlier one not finished (here
        or on another engine) is handed back until that one is.
        """
        ttl = CONF.reservation.event_claim_timeout
        batch = CONF.reservation.engine_batch
        claimed = db_api.claim_due(self.worker_id, now, ttl, batch)
        if claimed is None:
            claimed = []
            due = db_api.due_events(now, limit=batch)
        else:
            # Taken in one go; what is left here is expired claims.
            due = [e for e in db_api.due_events(now, limit=20)
                   if e.status == db_api.IN_PROGRESS]
        # Engines that wake together go at the events in different orders
        # instead of all racing for the first.
        random.shuffle(due)
        work = [(e, e.claimed_by) for e in claimed] + [
            (e, self.worker_id) for e in due
            if db_api.claim_event(e, self.worker_id, now, ttl)]
        waiting = db_api.waiting_events(e for e, _ in work)
        running = {e.lease_id for e, _ in work if e.id not in waiting}
        # Due again once the earlier event may be done: at the next pass
        # if it runs in this one, else after a poll interval.
        later = now + datetime.timedelta(
            seconds=CONF.reservation.action_poll_interval)
        db_api.record_events([
            db_api.Outcome(e.id, holder, db_api.UNDONE, waited=True,
                           due_at=(e.due_at if e.lease_id in running
                                   else max(e.due_at, later)))
            for e, holder in work if e.id in waiting])
        return [(e, holder) for e, holder in work if e.id not in waiting]

    def _run_all(self, work: list, now: datetime.datetime) -> int:
        """Run the claimed events side by side; write their outcomes as
        they come, those that come within RECORD_DELAY of each other
        together.
        """
        details = db_api.leases_details(e.lease_id for e, _ in work)
        results: queue.SimpleQueue = queue.SimpleQueue()

        def run(event, holder):
            try:
                results.put(self._run(event, holder,
                                      details.get(event.lease_id), now))
            except Exception:
                # Left claimed: run again once the claim expires.
                LOG.exception('Lease %s: %s could not run', event.lease_id,
                              event.event_type)
                results.put(None)

        for event, holder in work:
            self._pool.submit(run, event, holder)
        done, ready, oldest, left = 0, [], None, len(work)
        while left:
            wait = None if oldest is None else max(
                0.0, oldest + RECORD_DELAY - time.monotonic())
            try:
                ran = results.get(timeout=wait)
                left -= 1
                if ran is not None:
                    ready.append(ran)
            except queue.Empty:
                pass
            if ready and oldest is None:
                oldest = time.monotonic()
            if ready and (not left or
                          time.monotonic() >= oldest + RECORD_DELAY):
                done += self._record(ready)
                ready, oldest = [], None
        return done

    def _run(self, event, holder: str, details, now: datetime.datetime
             ) -> Ran:
        """Run one event's action: its failure is an outcome too."""
        lease = details.lease if details else None
        if lease is None or lease.status == status.DELETED:
            # Gone: nothing is left to do.
            return Ran(event, details,
                       db_api.Outcome(event.id, holder, db_api.DONE))
        action = actions.ACTIONS[event.event_type]
        poll = now + datetime.timedelta(
            seconds=CONF.reservation.action_poll_interval)
        if lease.status == status.CREATING:
            # nova-api has not recorded the lease's servers yet (if it
            # never does, the reconciler finishes the lease).
            return Ran(event, details, db_api.Outcome(
                event.id, holder, db_api.UNDONE, due_at=poll))
        try:
            lease_status = action(self.nova, details, now)
        except actions.Pending:
            waited = (now - (event.started_at or now)).total_seconds()
            if waited > CONF.reservation.action_timeout:
                return self._give_up(event, details, holder, (
                    '%s timed out: Nova did not finish within %d s'
                    % (event.event_type, CONF.reservation.action_timeout)))
            return Ran(event, details, db_api.Outcome(
                event.id, holder, db_api.UNDONE, due_at=poll))
        except Exception as e:
            return self._failed(event, details, now, e, holder)
        if lease_status:
            lease.status = lease_status
        notice = None
        if self.notifier:
            notice = notifications.event_notice(event, lease, details)
        if notice:
            # Held by this engine to send; taken over if it dies first.
            notice.update(claimed_by=self.worker_id, claim_expires=(
                self.now() + datetime.timedelta(
                    seconds=CONF.reservation.event_claim_timeout)))
        return Ran(event, details, db_api.Outcome(
            event.id, holder, db_api.DONE, lease_id=lease.id,
            lease_status=lease_status, notice=notice))

    def _failed(self, event, details, now, error: Exception,
                holder: str) -> Ran:
        lease = details.lease
        message = '%s failed: %s' % (event.event_type, error)
        if event.attempts < CONF.reservation.start_retries:
            delay = CONF.reservation.retry_backoff * 2 ** event.attempts
            LOG.warning('Lease %s: %s; retry in %.0f s', lease.id, message,
                        delay)
            return Ran(event, details, db_api.Outcome(
                event.id, holder, db_api.UNDONE, error=message, failed=True,
                due_at=now + datetime.timedelta(seconds=delay)))
        return self._give_up(event, details, holder, message)

    @staticmethod
    def _give_up(event, details, holder: str, message: str) -> Ran:
        """The event ends in ERROR, and its lease too, with the reason."""
        LOG.error('Lease %s: %s; giving up', details.lease.id, message)
        return Ran(event, details, db_api.Outcome(
            event.id, holder, db_api.ERROR, lease_id=details.lease.id,
            lease_status=status.ERROR, error=message))

    def _record(self, ran: list) -> int:
        """Write what the events came to, then tell: the notices and the
        `on_event` callback.  Returns how many events are over.
        """
        written = db_api.record_events([r.outcome for r in ran])
        over = 0
        for r in ran:
            outcome = r.outcome
            if outcome.event_id not in written:
                LOG.warning('Lease %s: %s was taken over by another engine',
                            r.event.lease_id, r.event.event_type)
                continue
            if outcome.status == db_api.UNDONE:
                continue
            over += 1
            if outcome.lease_id is None:
                continue   # The lease was gone.
            lease = r.details.lease
            LOG.info('Lease %s (%s): %s %s', lease.id, lease.name,
                     r.event.event_type, outcome.status.lower())
            self._report(r.event, lease, outcome.status, r.details)
        notices = [r.outcome.notice for r in ran
                   if r.outcome.notice and r.outcome.event_id in written]
        if notices:
            try:
                self._send(notices)
            except Exception as e:
                LOG.warning('%d notifications are kept to be sent later: '
                            '%s', len(notices), e)
        return over

    def _send(self, notices: list) -> None:
        """Send stored notices: the leases side by side (each publish waits
        for the broker's confirm), a lease's own oldest first.  They are
        dropped from the store once per pass (`send_unsent`), all in one
        statement, and kept in memory till then, so that they are never
        sent twice.
        """
        def send(lease_notices):
            for notice in lease_notices:
                self.notifier.send(notice['event_type'],
                                   jsonutils.loads(notice['payload']))
                with self._sent_lock:
                    self._sent.add(notice['id'])
        by_lease: dict = {}
        for notice in notices:
            by_lease.setdefault(notice['lease_id'], []).append(notice)
        for sending in [self._pool.submit(send, n)
                        for n in by_lease.values()]:
            sending.result()

    def _forget_sent(self) -> None:
        with self._sent_lock:
            sent, self._sent = self._sent, set()
        if not sent:
            return
        try:
            db_api.forget_notices(sent)
        except Exception:
            with self._sent_lock:
                self._sent |= sent
            raise

    def send_unsent(self) -> None:
        """Drop what was sent (in this pass, or while the store was away);
        send the notices that an engine stored but could not send (it
        died).
        """
        if not self.notifier:
            return
        self._forget_sent()
        self._send(db_api.claim_unsent(
            self.worker_id, self.now(), CONF.reservation.event_claim_timeout))
        self._forget_sent()

    def _report(self, event, lease, outcome: str, details=None) -> None:
        if self.on_event:
            self.on_event(event, lease, outcome, details)

    def check_hosts(self) -> None:
        """Move future slots off failed compute nodes; mark the leases
        that can not move degraded, and say so (lease.update).
        """
        failed = self.nova.failed_nodes()
        if not failed:
            return
        if self.planner is None:
            self.planner = planner.Planner(
                ledger_mod.Ledger(), report.report_client_singleton(),
                self.clock)
        moved, degraded = self.planner.relocate(failed, self.clock())
        if moved or degraded:
            LOG.warning('Compute nodes %s failed: %d future slots moved; '
                        'leases degraded: %s', ', '.join(sorted(failed)),
                        moved, ', '.join(degraded) or 'none')
        for lease_id in degraded:
            if self.notifier:
                self.notifier.lease('update', lease_id)

    def reconcile(self) -> list:
        """Compare the store with Nova and repair (see `reconciler`)."""
        return self.reconciler.run()

    def sleep_time(self) -> float:
        due = db_api.next_due()
        wait = CONF.reservation.engine_poll_interval
        if due is not None:
            wait = min(wait, ledger_mod.to_epoch(due) - self.clock())
        return max(wait, 0.0)

    def run_forever(self) -> None:
        LOG.info('Engine %s running', self.worker_id)
        # Recurring work besides events: [task, what it does, interval
        # option, when next].
        recurring = [
            [self.check_hosts, 'check the compute nodes',
             'host_check_interval', 0.0],
            [self.reconcile, 'compare the store with Nova',
             'reconcile_interval',
             self.clock() + CONF.reservation.reconcile_interval]]
        while not self._stop.is_set():
            try:
                for task in recurring:
                    if self.clock() < task[3]:
                        continue
                    task[3] = self.clock() + getattr(CONF.reservation,
                                                     task[2])
                    try:
                        task[0]()
                    except Exception as e:
                        # Nova or Placement away: events still run.
                        LOG.warning('Could not %s: %s', task[1], e)
                self.run_once()
                wait = self.sleep_time()
            except Exception:
                # The store or Nova went away: keep going, nothing is lost
                # since unfinished events stay in the store.
                LOG.exception('Engine pass failed; trying again')
                wait = CONF.reservation.engine_poll_interval
            self._stop.wait(wait)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
