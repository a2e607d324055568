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

"""Events at scale: engine processes on the machine's MariaDB and RabbitMQ
run the start events of many leases, then all their end events at once.

Each lease has a `virtual:instance` reservation, so that its start and
end act on Nova (the private flavor's access, then the flavor); Nova is a
stand-in here that answers at once, so that what is measured is the
engine.  Lateness: when an event was first taken (and when it was done,
its outcome written), against when it was due.  Throughput: events
finished per second per engine when every event is due at once.  The
baseline, measured in the same run, is the store itself: one engine-less
claim and finish of an event, back to back.
"""

import asyncio
import datetime
import statistics
import threading
import time
import uuid

import sqlalchemy as sa

from devcloud import machine
from nova_reservation.db import api as db_api
from nova_reservation.db import events as db_events
from nova_reservation.db import models
from nova_reservation.lease import outcomes
from nova_reservation import status

STORE = db_api.Context()


class NovaStandIn:
    """Answers the flavor calls of the engine's actions at once, as a
    compute API would: HTTP/1.1, connections kept open.  One thread and no
    framework, so that it takes little of the machine from the engines.
    """

    ACCESS = (b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
              b'Content-Length: 21\r\n\r\n{"flavor_access": []}')
    DELETED = b'HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n'

    def __init__(self) -> None:
        self.calls = 0
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(asyncio.start_server(
            self._serve, '127.0.0.1', 0))
        self.port = self._server.sockets[0].getsockname()[1]
        threading.Thread(target=self._loop.run_forever, daemon=True).start()

    async def _serve(self, reader, writer) -> None:
        try:
            while True:
                head = await reader.readuntil(b'\r\n\r\n')
                length = 0
                for line in head.split(b'\r\n')[1:]:
                    name, _, value = line.partition(b':')
                    if name.strip().lower() == b'content-length':
                        length = int(value)
                await reader.readexactly(length)
                self.calls += 1
                writer.write(self.DELETED if head.startswith(b'DELETE ')
                             else self.ACCESS)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)


def make_leases(count: int) -> None:
    """`count` leases, written in bulk: their events fall due in a day, to
    be brought forward by the phases.
    """
    now = db_api.utcnow()
    start = now + datetime.timedelta(days=1)
    end = start + datetime.timedelta(hours=1)
    leases, reservations, slots, events = [], [], [], []
    for i in range(count):
        lease_id, res_id = str(uuid.uuid4()), str(uuid.uuid4())
        leases.append(dict(id=lease_id, name='e%d' % i, project_id='p',
                           user_id='u', start_at=start, end_at=end,
                           status='PENDING', on_end='delete', created_at=now,
                           version=0, degraded=False))
        reservations.append(dict(
            id=res_id, lease_id=lease_id, project_id='p',
            resource_type='virtual:instance', flavor_id='flavor-%d' % i,
            vcpus=1, memory_mb=512, disk_gb=1, amount=1, status='pending',
            generation=1, deleted=False))
        slots.append(dict(reservation_id=res_id, node='node%d' % (i % 100),
                          start_at=start, end_at=end, vcpus=1,
                          memory_mb=512, disk_gb=1, generation=1,
                          deleted=False))
        for kind, due in (('start', start), ('end', end)):
            events.append(dict(uuid=str(uuid.uuid4()), lease_id=lease_id,
                               event_type=kind, created_at=now,
                               due_at=due, scheduled_at=due,
                               status=status.UNDONE, attempts=0, runs=0))
    engine = db_api.get_engine()
    with engine.begin() as conn:
        conn.execute(models.LedgerState.__table__.delete())
        conn.execute(models.LedgerState.__table__.insert(), [dict(
            id=1, generation=1, epoch=str(uuid.uuid4()))])
        for table, rows in ((models.Lease, leases),
                            (models.Reservation, reservations),
                            (models.Slot, slots),
                            (models.Event, events)):
            for i in range(0, len(rows), 5000):
                conn.execute(table.__table__.insert(), rows[i:i + 5000])


def bring_forward(event_type: str, first: float, spread: float) -> None:
    """The `event_type` events fall due from `first` s from now, evenly
    over `spread` s (0: all at once).
    """
    t0 = db_api.utcnow() + datetime.timedelta(seconds=first)
    engine = db_api.get_engine()
    with engine.begin() as conn:
        ids = [r[0] for r in conn.execute(sa.select(models.Event.id).where(
            models.Event.event_type == event_type).order_by(
            models.Event.id))]
        rows = [dict(event_id=e, due=t0 + datetime.timedelta(
            seconds=spread * n / max(len(ids), 1)))
            for n, e in enumerate(ids)]
        t = models.Event.__table__
        conn.execute(t.update().where(t.c.id == sa.bindparam('event_id'))
                     .values(due_at=sa.bindparam('due'),
                             scheduled_at=sa.bindparam('due')), rows)


def wait_done(event_type: str, count: int, timeout: float) -> list:
    t = models.Event
    done = [t.event_type == event_type, t.status == status.DONE]
    deadline = time.time() + timeout
    finished = 0
    while time.time() < deadline:
        with db_api.reading(STORE) as session:
            finished = session.execute(sa.select(sa.func.count()).where(
                *done)).scalar()
        if finished >= count:
            return db_api.rows(STORE, sa.select(t).where(*done))
        time.sleep(0.5)
    raise RuntimeError('%d of %d %s events done after %d s' % (
        finished, count, event_type, timeout))


def store_baseline(samples: int = 300) -> float:
    """Events per second that the store alone takes: a claim and a finish
    of an event, back to back, with no engine.
    """
    t = models.Event
    events = db_api.rows(STORE, sa.select(t).where(
        t.event_type == 'end').limit(samples))
    # Due now, then run through the store's own claim and finish.
    now = db_api.utcnow()
    with db_api.writing(STORE) as session:
        session.execute(sa.update(t).where(t.id.in_(
            [e.id for e in events])).values(
            due_at=now, status=status.UNDONE, claimed_by=None,
            claim_expires=None))
    t0 = time.perf_counter()
    for e in events:
        assert db_events.claim(STORE, e, 'baseline', now, 60)
        assert outcomes.record(STORE, [outcomes.Outcome(
            e.id, 'baseline', status.DONE)]) == {e.id}
    return len(events) / (time.perf_counter() - t0)


def percentile(values: list, p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def run_with(engines: int, count: int, window: float) -> dict:
    nova = NovaStandIn()
    try:
        with machine.MariaDBStore() as store, \
                machine.RabbitVhost() as vhost:
            make_leases(count)
            conf = machine.engine_conf(
                vhost.url, store.url,
                nova='http://127.0.0.1:%d/v2.1' % nova.port)
            procs = [machine.EngineProcess(conf)
                     for _ in range(engines)]
            for p in procs:
                p.setUp()
            try:
                for p in procs:
                    p.engine_id()
                # Lateness: the starts fall due over the window.
                bring_forward('start', 3.0, window)
                started = wait_done('start', count, window + 600)
                late = [(e.started_at - e.scheduled_at).total_seconds()
                        for e in started]
                late_done = [(e.finished_at - e.scheduled_at).total_seconds()
                             for e in started]
                # Throughput: every end at once.
                bring_forward('end', 2.0, 0)
                ended = wait_done('end', count, 1200)
                first = min(e.scheduled_at for e in ended)
                last = max(e.finished_at for e in ended)
                rate = count / (last - first).total_seconds() / engines
            finally:
                for p in procs:
                    p.cleanUp()
            baseline = store_baseline(min(300, count))
            runs = {e.runs for e in started + ended}
            assert runs == {1}, 'an event ran %s times' % runs
            return dict(engines=engines, events=count, window_s=window,
                        lateness_p50_s=statistics.median(late),
                        lateness_p99_s=percentile(late, 0.99),
                        done_lateness_p50_s=statistics.median(late_done),
                        done_lateness_p99_s=percentile(late_done, 0.99),
                        events_per_s_per_engine=rate,
                        store_events_per_s=baseline,
                        engine_vs_store=rate / baseline,
                        nova_calls=nova.calls)
    finally:
        nova.stop()


def run(count: int = 10_000, window: float = 60.0,
        engines=(1, 3)) -> list:
    return [run_with(n, count, window) for n in engines]


if __name__ == '__main__':
    for row in run():
        print(row)
