"""The event engine: runs each lease event on time, exactly once.

Any number of engines may share the store.  An event is claimed with one
conditional UPDATE, so exactly one engine runs it; a claim expires after
``[reservation] event_claim_timeout`` so that an event whose engine died is
taken over.  The engine sleeps until the next event falls due (at most
``engine_poll_interval``), not on a coarse poll.
"""

from concurrent import futures
import datetime
import random
import socket
import threading
import time
from typing import Callable, Optional

from nova.scheduler.client import report
from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.engine import actions
from nova_reservation import ledger as ledger_mod
from nova_reservation import notifications
from nova_reservation import planner

LOG = logging.getLogger(__name__)
CONF = conf.CONF


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

        Events run side by side (``engine_workers``), so that one slow
        event does not hold up the others.
        """
        now = self.now()
        ttl = CONF.reservation.event_claim_timeout
        claimed = db_api.claim_due(self.worker_id, now, ttl,
                                   CONF.reservation.engine_workers * 2)
        if claimed is None:
            claimed = []
            due = db_api.due_events(now, limit=CONF.reservation.engine_batch)
        else:
            # Taken in one go; what is left here is expired claims.
            due = [e for e in db_api.due_events(now, limit=20)
                   if e.status == db_api.IN_PROGRESS]
        # Engines that wake together go at the events in different orders
        # instead of all racing for the first.
        random.shuffle(due)
        work = [(e, True) for e in claimed] + [(e, False) for e in due]
        if len(work) <= 1:
            done = sum(self._claim_and_run(e, now, held) for e, held in work)
        else:
            done = sum(self._pool.map(
                lambda item: self._claim_and_run(item[0], now, item[1]),
                work))
        self.send_unsent()
        return done

    def _claim_and_run(self, event, now: datetime.datetime,
                       held: bool = False) -> int:
        """Run an event held already (its claim names the holder), or
        claimed here.
        """
        holder = event.claimed_by if held else self.worker_id
        if not held and not db_api.claim_event(
                event, holder, now, CONF.reservation.event_claim_timeout):
            return 0   # Another engine has it.
        return int(self._run(event, now, holder))

    def _run(self, event, now: datetime.datetime, holder: str) -> bool:
        details = db_api.lease_details(event.lease_id)
        lease, _, bindings, _ = details
        if lease is None or lease.status == 'DELETED':
            # Gone: nothing is left to do.
            db_api.finish_event(event.id, holder, db_api.DONE)
            return True
        action = actions.ACTIONS[event.event_type]
        try:
            if lease.status == 'CREATING':
                # nova-api has not recorded the lease's servers yet.
                raise actions.Pending()
            lease_status = action(self.nova, lease, bindings, now)
        except actions.Pending:
            db_api.postpone_event(
                event.id, holder, now + datetime.timedelta(
                    seconds=CONF.reservation.action_poll_interval),
                failed=False)
            return False
        except Exception as e:
            return self._failed(event, lease, now, e, holder)
        if lease_status:
            lease.status = lease_status
        notice = (notifications.event_notice(event, lease, details)
                  if self.notifier else None)
        if notice:
            # Held by this engine to send; taken over if it dies first.
            notice.update(claimed_by=self.worker_id, claim_expires=(
                self.now() + datetime.timedelta(
                    seconds=CONF.reservation.event_claim_timeout)))
        if not db_api.finish_event(event.id, holder, db_api.DONE,
                                   lease_id=lease.id,
                                   lease_status=lease_status, notice=notice):
            LOG.warning('Lease %s: %s was taken over by another engine',
                        lease.id, event.event_type)
            return False
        LOG.info('Lease %s (%s): %s done', lease.id, lease.name,
                 event.event_type)
        if notice:
            try:
                self._send([notice])
            except Exception as e:
                LOG.warning('Lease %s: the notification of %s is kept to be '
                            'sent later: %s', lease.id, event.event_type, e)
        self._report(event, lease, 'DONE', details)
        return True

    def _send(self, notices: list) -> None:
        """Send stored notices, oldest first.  They are dropped from the
        store once per pass (`send_unsent`), all in one statement, and kept
        in memory till then, so that they are never sent twice.
        """
        for notice in notices:
            self.notifier.send(notice['event_type'],
                               jsonutils.loads(notice['payload']))
            with self._sent_lock:
                self._sent.add(notice['id'])

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

    def _failed(self, event, lease, now, error: Exception,
                holder: str) -> bool:
        message = '%s failed: %s' % (event.event_type, error)
        if event.attempts < CONF.reservation.start_retries:
            delay = CONF.reservation.retry_backoff * 2 ** event.attempts
            LOG.warning('Lease %s: %s; retry in %.0f s', lease.id, message,
                        delay)
            db_api.postpone_event(event.id, holder,
                                  now + datetime.timedelta(seconds=delay),
                                  failed=True, error=message)
            return False
        LOG.error('Lease %s: %s; giving up', lease.id, message)
        db_api.finish_event(event.id, holder, db_api.ERROR, message,
                            lease_id=lease.id, lease_status='ERROR')
        self._report(event, lease, 'ERROR')
        return True

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

    def sleep_time(self) -> float:
        due = db_api.next_due()
        wait = CONF.reservation.engine_poll_interval
        if due is not None:
            wait = min(wait, ledger_mod.to_epoch(due) - self.clock())
        return max(wait, 0.0)

    def run_forever(self) -> None:
        LOG.info('Engine %s running', self.worker_id)
        next_check = 0.0
        while not self._stop.is_set():
            try:
                if self.clock() >= next_check:
                    next_check = (self.clock() +
                                  CONF.reservation.host_check_interval)
                    try:
                        self.check_hosts()
                    except Exception as e:
                        # Nova or Placement away: events still run.
                        LOG.warning('Could not check the compute nodes: %s',
                                    e)
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
