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

from oslo_log import log as logging
from oslo_service import periodic_task
from oslo_utils import uuidutils

from nova_reservation.capacity import epoch
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import notices as db_notices
from nova_reservation.db import turns as db_turns
from nova_reservation.engine import actions
from nova_reservation.engine import idle
from nova_reservation.engine import outbox
from nova_reservation.engine import preemption
from nova_reservation.engine import reconciler
from nova_reservation.engine import relocation
from nova_reservation.engine import soft_end
from nova_reservation.engine import waiting
from nova_reservation.lease import approvals as lease_approvals
from nova_reservation.lease import outcomes
from nova_reservation import notifications
from nova_reservation.schemas import leases as schemas
from nova_reservation import status

LOG = logging.getLogger(__name__)
CONF = conf.CONF

# Seconds an outcome may wait for others to be written with it.
RECORD_DELAY = 0.05


class Ran(NamedTuple):
    """An event run, with what it came to."""
    event: Any
    details: Any   # leases.Details, as the action saw them
    outcome: outcomes.Outcome


class Engine(periodic_task.PeriodicTasks):
    """The engine's manager: the events as they fall due (`run_forever`),
    and its recurring work as periodic tasks at the intervals of
    ``[reservation]`` (read again on SIGHUP: `configure`).
    """

    # Periodic task: its interval option.
    INTERVALS = {'check_hosts': 'host_check_interval',
                 'reconcile_in_turn': 'reconcile_interval',
                 'preempt': 'preempt_check_interval',
                 'watch_idle': 'idle_check_interval',
                 'place_waiting': 'wait_interval',
                 'expire_approvals': 'approval_check_interval'}

    def __init__(self, nova, clock: Callable[[], float] = time.time,
                 engine_id: Optional[str] = None,
                 on_event: Optional[Callable] = None,
                 notifier=None) -> None:
        self.nova = nova
        self.clock = clock
        self.engine_id = engine_id or '%s:%s' % (
            socket.gethostname(), uuidutils.generate_uuid()[:8])
        # Called after each event with (event, lease, outcome, details).
        self.on_event = on_event
        self.ctx = db_api.Context()
        self.reconciler = reconciler.Reconciler(nova, None, clock)
        self.relocation = relocation.Relocation(nova, clock)
        self._stop = threading.Event()
        self._pool = futures.ThreadPoolExecutor(
            CONF.reservation.engine_workers,
            thread_name_prefix='reservation-engine')
        self.outbox = outbox.Outbox(None, self.engine_id, self._pool,
                                    self.now)
        self.preemption = preemption.Preemption(nova, clock, self.engine_id,
                                                self.outbox)
        self.idle = idle.Idle(nova, clock, self.outbox)
        self.waiting = waiting.Waiting(clock, self.outbox)
        self.notifier = notifier
        super().__init__(CONF)
        self.configure()

    def configure(self) -> None:
        self._periodic_spacing = {
            name: getattr(CONF.reservation, option)
            for name, option in self.INTERVALS.items()}

    @property
    def notifier(self):
        return self._notifier

    @notifier.setter
    def notifier(self, notifier) -> None:
        """What tells (None: nothing is told); its pieces use it too."""
        self._notifier = self.outbox.notifier = notifier
        self.reconciler.notifier = notifier

    def now(self) -> datetime.datetime:
        return epoch.from_epoch(self.clock())

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
        if self.notifier:
            self.outbox.flush()
        return done

    def _take(self, now: datetime.datetime) -> list:
        """Claim the due events: [(event, claim)], one per lease, oldest
        first.  An event whose lease has an earlier one not finished (here
        or on another engine) is handed back until that one is.
        """
        ttl = CONF.reservation.event_claim_timeout
        batch = CONF.reservation.engine_batch
        claimed = db_events.claim_due(self.ctx, self.engine_id, now, ttl,
                                      batch)
        if claimed is None:
            claimed = []
            due = db_events.due(self.ctx, now, limit=batch)
        else:
            # Taken in one go; what is left here is expired claims.
            due = [e for e in db_events.due(self.ctx, now, limit=20)
                   if e.status == status.IN_PROGRESS]
        # Engines that wake together go at the events in different orders.
        random.shuffle(due)
        work = [(e, e.claimed_by) for e in claimed] + [
            (e, self.engine_id) for e in due
            if db_events.claim(self.ctx, e, self.engine_id, now, ttl)]
        for e, _ in work:   # as the claim wrote it, for the order check
            e.started_at = e.started_at or now
        behind = db_events.waiting(self.ctx, (e for e, _ in work))
        running = {e.lease_id for e, _ in work if e.id not in behind}
        # Due again once the earlier event may be done: at the next pass
        # if it runs in this one, else after a poll interval.
        later = now + datetime.timedelta(
            seconds=CONF.reservation.action_poll_interval)
        outcomes.record(self.ctx, [
            outcomes.Outcome(e.id, claim, status.UNDONE, waited=True,
                             due_at=(e.due_at if e.lease_id in running
                                     else max(e.due_at, later)))
            for e, claim in work if e.id in behind])
        work = [(e, claim) for e, claim in work if e.id not in behind]
        db_events.start_after_earlier(self.ctx, (e for e, _ in work))
        return work

    def _run_all(self, work: list, now: datetime.datetime) -> int:
        """Run the claimed events side by side; write their outcomes as
        they come, those that come within RECORD_DELAY of each other
        together.
        """
        details = db_leases.details(self.ctx, (e.lease_id for e, _ in work))
        results: queue.SimpleQueue = queue.SimpleQueue()

        def run(event, claim):
            try:
                results.put(self._run(event, claim,
                                      details.get(event.lease_id), now))
            except Exception:
                # Left claimed: run again once the claim expires.
                LOG.exception('Lease %s: %s could not run', event.lease_id,
                              event.event_type)
                results.put(None)

        for event, claim in work:
            self._pool.submit(run, event, claim)
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

    def _run(self, event, claim: str, details, now: datetime.datetime
             ) -> Ran:
        """Run one event's action: its failure is an outcome too."""
        lease = details.lease if details else None
        if lease is None or lease.status == status.DELETED:
            # Gone: nothing is left to do.
            return Ran(event, details,
                       outcomes.Outcome(event.id, claim, status.DONE))
        if event.event_type == 'end' and lease.status != status.REFUSED \
                and lease.on_end == schemas.EXTEND_IF_FREE:
            until = soft_end.extended(lease, now, self.outbox)
            if until is not None:
                # Its end falls due again at the new end.
                return Ran(event, details, outcomes.Outcome(
                    event.id, claim, status.UNDONE, due_at=until))
        action = actions.ACTIONS[event.event_type]
        poll = now + datetime.timedelta(
            seconds=CONF.reservation.action_poll_interval)
        if lease.status == status.PENDING_APPROVAL and event.event_type == \
                'start':
            # Not approved by its start: rejected, nothing started.
            return Ran(event, details, outcomes.Outcome(
                event.id, claim, status.DONE, lease_id=lease.id, writes=(
                    (lease_approvals.at_start(lease, event.id), (), {}),)))
        if lease.status == status.CREATING:
            # nova-api has not recorded the lease's servers yet (if it
            # never does, the reconciler finishes the lease).
            return Ran(event, details, outcomes.Outcome(
                event.id, claim, status.UNDONE, due_at=poll))
        writes = outcomes.Writes()
        try:
            lease_status = action(self.nova, details, now, writes)
        except actions.Pending:
            waited = (now - (event.started_at or now)).total_seconds()
            if waited > CONF.reservation.action_timeout:
                return self._give_up(event, details, claim, (
                    '%s timed out: Nova did not finish within %d s'
                    % (event.event_type, CONF.reservation.action_timeout)),
                    writes)
            return Ran(event, details, outcomes.Outcome(
                event.id, claim, status.UNDONE, due_at=poll,
                writes=tuple(writes.calls)))
        except Exception as e:
            return self._failed(event, details, now, e, claim, writes)
        if lease_status:
            lease.status = lease_status
        notice = None
        if self.notifier:
            notice = notifications.event_notice(event, lease, details)
        if notice:
            notice = self.outbox.claim_for(notice)
        return Ran(event, details, outcomes.Outcome(
            event.id, claim, status.DONE, lease_id=lease.id,
            lease_status=lease_status, notice=notice,
            writes=tuple(writes.calls)))

    def _failed(self, event, details, now, error: Exception, claim: str,
                writes: outcomes.Writes) -> Ran:
        lease = details.lease
        message = '%s failed: %s' % (event.event_type, error)
        if event.attempts < CONF.reservation.event_retries:
            delay = CONF.reservation.retry_backoff * 2 ** event.attempts
            LOG.warning('Lease %s: %s; retry in %.0f s', lease.id, message,
                        delay)
            return Ran(event, details, outcomes.Outcome(
                event.id, claim, status.UNDONE, error=message, failed=True,
                due_at=now + datetime.timedelta(seconds=delay),
                writes=tuple(writes.calls)))
        return self._give_up(event, details, claim, message, writes)

    @staticmethod
    def _give_up(event, details, claim: str, message: str,
                 writes: outcomes.Writes) -> Ran:
        """The event ends in ERROR, and its lease too, with the reason;
        what the action did before it failed is kept.
        """
        LOG.error('Lease %s: %s; giving up', details.lease.id, message)
        return Ran(event, details, outcomes.Outcome(
            event.id, claim, status.ERROR, lease_id=details.lease.id,
            lease_status=status.ERROR, error=message,
            writes=tuple(writes.calls)))

    def _record(self, ran: list) -> int:
        """Write what the events came to, then tell: the notices and the
        `on_event` callback.  Returns how many events are over.
        """
        written = outcomes.record(self.ctx, [r.outcome for r in ran])
        over = 0
        for r in ran:
            outcome = r.outcome
            if outcome.event_id not in written:
                LOG.warning('Lease %s: %s was taken over by another engine',
                            r.event.lease_id, r.event.event_type)
                continue
            if outcome.status == status.UNDONE:
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
                self.outbox.send(notices)
            except Exception as e:
                LOG.warning('%d notifications are kept to be sent later: '
                            '%s', len(notices), e)
        return over

    def _report(self, event, lease, outcome: str, details=None) -> None:
        if self.on_event:
            self.on_event(event, lease, outcome, details)

    def _try(self, task: Callable, what: str):
        try:
            return task()
        except Exception as e:
            # Nova or Placement away: events still run.
            LOG.warning('Could not %s: %s', what, e)

    @periodic_task.periodic_task(run_immediately=True)
    def check_hosts(self, context=None) -> None:
        """Move future slots off failed compute nodes (`relocation`)."""
        self._try(lambda: self.relocation.run(self.notifier),
                  'check the compute nodes')

    def reconcile(self) -> list:
        """Compare the store with Nova and repair (see `reconciler`)."""
        return self.reconciler.run()

    @periodic_task.periodic_task
    def reconcile_in_turn(self, context=None) -> Optional[list]:
        """`reconcile`, unless another engine's turn for it runs (two
        engines must not repair the same thing at once; see `db.turns`).
        A turn lasts two intervals: a pass may outlast one.
        """
        def in_turn() -> list:
            if not db_turns.take(self.ctx, 'reconcile', self.engine_id,
                                 self.now(),
                                 2 * CONF.reservation.reconcile_interval):
                return []
            return self.reconcile()
        return self._try(in_turn, 'compare the store with Nova')

    @periodic_task.periodic_task(run_immediately=True)
    def preempt(self, context=None) -> None:
        """Warn, move off, shelve and bring back the preemptible servers
        (`preemption`).
        """
        self._try(self.preemption.run, 'look at the preemptible servers')

    @periodic_task.periodic_task
    def watch_idle(self, context=None) -> None:
        """Measure the running leases' use, tell and release idle ones
        (`idle`).
        """
        self._try(self.idle.run, 'measure the leases\' use')

    @periodic_task.periodic_task(run_immediately=True)
    def place_waiting(self, context=None) -> None:
        """Try the waiting leases that are due (`waiting`)."""
        self._try(self.waiting.run, 'try the waiting leases')

    @periodic_task.periodic_task(run_immediately=True)
    def expire_approvals(self, context=None) -> Optional[list]:
        """Reject the leases whose wait for approval is over; the ids."""
        def expire() -> list:
            gone = lease_approvals.expire(self.now())
            if self.notifier:
                self.outbox.flush()
            return gone
        return self._try(expire, 'expire the leases waiting for approval')

    def sleep_time(self) -> float:
        """Seconds until an event or a notice falls due (its own time, or
        the expiry of its claim), at most ``engine_poll_interval``: new
        events are seen by looking.
        """
        with db_api.reading(self.ctx):
            due = [when for when in (db_events.next_due(self.ctx),
                                     db_notices.next_unsent(self.ctx))
                   if when is not None]
        wait = CONF.reservation.engine_poll_interval
        if due:
            wait = min(wait, epoch.to_epoch(min(due)) - self.clock())
        return max(wait, 0.0)

    def step(self) -> float:
        """One look at the store: a pass if something is due (or sent
        notices are still stored); how long to sleep after it.  A look
        that finds nothing due only reads.
        """
        wait = self.sleep_time()
        if wait > 0 and not (self.notifier and self.outbox.holds_sent()):
            return wait
        self.run_once()
        # Look again at once: the pass may have left something due.
        return 0.0

    def run_forever(self) -> None:
        """Run the events as they fall due until `stop`; a pass under way
        when it is asked to stop finishes first.
        """
        LOG.info('Engine %s running', self.engine_id)
        while not self._stop.is_set():
            try:
                wait = self.step()
            except Exception:
                # The store or Nova went away: keep going, nothing is lost
                # since unfinished events stay in the store.
                LOG.exception('Engine pass failed; trying again')
                wait = CONF.reservation.engine_poll_interval
            self._stop.wait(wait)
        LOG.info('Engine %s stopped', self.engine_id)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
