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

"""Waiting and best-effort leases (``if_busy: wait``): accepted WAITING
when they do not fit, holding nothing, placed by the engine once the
ledger has room (at the earliest fitting start with ``flexible_start``),
or refused once their tries or their start have passed.
"""

import datetime
import threading

from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import notices as db_notices
from nova_reservation.db import waiting as db_waiting
from nova_reservation.tests.functional import base

STORE = base.STORE


def waiting_lease(start='now', end=30, name='waiting', **extra) -> dict:
    """A lease of one server's capacity that waits for room."""
    body = base.flavor_lease(amount=1, end=end, name=name)
    body['start_date'] = start if start == 'now' else base.when(start)[:16]
    return dict(body, if_busy='wait', **extra)


def at_once(engines: list) -> None:
    """Each engine's try of the waiting leases, all at the same time."""
    threads = [threading.Thread(target=e.place_waiting) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class WaitingLeaseTest(base.ReservationsTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.flags(ledger_max_age=0, group='reservation')
        self.capture_notifications()

    def full(self, start=0, end=60) -> dict:
        """Both nodes leased over [start, end) minutes from now."""
        resp = self.rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=start, end=end, name='full'))
        self.assertEqual(201, resp.status_code, resp.text)
        self.run_engine()
        return resp.json()['lease']

    def create(self, body, code=201) -> dict:
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(code, resp.status_code, resp.text)
        return resp.json()['lease']

    def show(self, lease_id: str) -> dict:
        return self.rsv('GET', '/leases/%s' % lease_id).json()['lease']

    def try_waiting(self, at: float) -> None:
        """The engine's pass at `at`: the waiting leases, then events."""
        self.clock.now = max(self.clock.now, at)
        self.engine.place_waiting()
        self.run_engine()

    def next_try(self, lease: dict) -> float:
        """When the engine tries the waiting lease next (a loaded machine
        may have let the real clock pass the test's).
        """
        return epoch.to_epoch(db_leases.get(STORE, lease['id']).next_try_at)

    def slots(self, lease: dict) -> list:
        return db_ledger.slots(STORE, lease['reservations'][0]['id'])

    def test_a_waiting_lease_is_placed_when_another_ends(self):
        full = self.full()
        lease = self.create(waiting_lease())
        self.assertEqual('WAITING', lease['status'])
        self.assertIn('Not enough capacity', lease['status_reason'])
        asked = db_leases.get(STORE, lease['id'])
        length = asked.end_at - asked.start_at
        self.assertEqual(('wait', 0), (lease['if_busy'], lease['tries']))
        self.assertEqual([], self.slots(lease))   # it holds nothing
        self.assertEqual([], lease['events'])
        # Still full: tried again, and still waiting.
        self.try_waiting(self.next_try(lease) + 1)
        shown = self.show(lease['id'])
        self.assertEqual(('WAITING', 1), (shown['status'], shown['tries']))
        self.assertIn('try 1', shown['status_reason'])
        # The full lease ends: the next try places it, from then on.
        end = epoch.to_epoch(db_leases.get(STORE, full['id']).end_at)
        self.run_engine(at=end + 1)
        self.try_waiting(end + 61)
        placed = db_leases.get(STORE, lease['id'])
        self.assertEqual('ACTIVE', placed.status)
        self.assertGreaterEqual(epoch.to_epoch(placed.start_at), end)
        self.assertEqual(length, placed.end_at - placed.start_at)
        self.assertEqual(1, len(self.slots(lease)))
        told = [p for t, p in self.notified('lease.update')
                if p['lease_id'] == lease['id']]
        self.assertEqual(['PENDING'], [p['status'] for p in told])

    def test_a_best_effort_lease_takes_its_earliest_fitting_start(self):
        full = self.full(end=60)
        end_of_full = db_leases.get(STORE, full['id']).end_at
        lease = self.create(waiting_lease(
            start=5, end=35, flexible_start=True,
            start_before=base.when(180)))
        # Placed at once, where it fits: when the full lease ends.
        self.assertEqual('PENDING', lease['status'], lease['status_reason'])
        row = db_leases.get(STORE, lease['id'])
        self.assertEqual((end_of_full, datetime.timedelta(minutes=30)),
                         (row.start_at, row.end_at - row.start_at))
        self.assertEqual(1, len(self.slots(lease)))
        # No start before start_before fits: it waits.
        short = self.create(waiting_lease(
            start=5, end=35, flexible_start=True,
            start_before=base.when(40), name='short'))
        self.assertEqual('WAITING', short['status'])

    def test_retries_exhausted_refuse_it_and_tell_why(self):
        self.full()
        lease = self.create(waiting_lease(retries=2, retry_interval=1))
        self.assertEqual((2, 1), (lease['retries'], lease['retry_interval']))
        self.try_waiting(self.next_try(lease) + 1)
        self.assertEqual('WAITING', self.show(lease['id'])['status'])
        # Not due before its interval: no try is spent.
        self.try_waiting(self.clock.now + 1)
        self.assertEqual(1, self.show(lease['id'])['tries'])
        self.try_waiting(self.clock.now + 61)
        shown = self.show(lease['id'])
        self.assertEqual(('REFUSED', 2), (shown['status'], shown['tries']))
        self.assertIn('refused after 2 tries', shown['status_reason'])
        told = [p for t, p in self.notified('lease.update')
                if p['lease_id'] == lease['id']]
        self.assertEqual([('REFUSED', shown['status_reason'])],
                         [(p['status'], p['status_reason']) for p in told])
        # Refused for good: no later try places it.
        self.try_waiting(self.clock.now + 3600 * 2)
        self.assertEqual('REFUSED', self.show(lease['id'])['status'])
        self.assertEqual([], self.slots(lease))

    def test_a_fixed_start_that_passed_is_refused(self):
        self.full(start=0, end=60)
        lease = self.create(waiting_lease(start=10, end=40))
        self.assertEqual('WAITING', lease['status'])
        start = epoch.to_epoch(db_leases.get(STORE, lease['id']).start_at)
        self.try_waiting(start + 61)
        shown = self.show(lease['id'])
        self.assertEqual('REFUSED', shown['status'])
        self.assertIn('has passed', shown['status_reason'])

    def test_a_waiting_lease_can_not_change_and_can_be_deleted(self):
        self.full()
        lease = self.create(waiting_lease())
        resp = self.rsv('PUT', '/leases/%s' % lease['id'],
                        {'end_date': base.when(50)[:16]})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('WAITING', resp.json()['error_message'])
        self.assertEqual(204, self.rsv(
            'DELETE', '/leases/%s' % lease['id']).status_code)
        self.run_engine()
        self.try_waiting(self.clock.now + 3600 * 2)
        self.assertEqual('DELETED', db_leases.get(STORE, lease['id']).status)
        self.assertEqual([], self.slots(lease))

    def test_several_engines_place_it_once(self):
        full = self.full()
        lease = self.create(waiting_lease())
        self.assertEqual(204, self.rsv(
            'DELETE', '/leases/%s' % full['id']).status_code)
        self.run_engine()
        engines = [self.engine] + [self.cloud.engine(clock=self.clock)
                                   for _ in range(2)]
        for engine in engines[1:]:
            engine.notifier = self.engine.notifier
        self.clock.now += 61
        at_once(engines)
        self.run_engine()
        row = db_leases.get(STORE, lease['id'])
        self.assertEqual(('ACTIVE', 1), (row.status, row.tries))
        self.assertEqual(1, len(self.slots(lease)))
        told = [p for t, p in self.notified('lease.update')
                if p['lease_id'] == lease['id']]
        self.assertEqual(1, len(told))

    def test_bad_waiting_fields_are_400s_that_name_them(self):
        later = base.when(120)
        for extra, field in (
                (dict(if_busy='maybe'), 'if_busy'),
                (dict(if_busy=None), 'if_busy'),
                (dict(flexible_start=True), 'flexible_start'),
                (dict(retries=2), 'retries'),
                (dict(if_busy='wait', retries=0), 'retries'),
                (dict(if_busy='wait', retries='2'), 'retries'),
                (dict(if_busy='wait', retry_interval=0), 'retry_interval'),
                (dict(if_busy='wait', flexible_start='yes'),
                 'flexible_start'),
                (dict(if_busy='wait', flexible_start=True), 'start_before'),
                (dict(if_busy='wait', start_before=later), 'start_before'),
                (dict(if_busy='wait', flexible_start=True,
                      start_before='tomorrow'), 'start_before'),
                (dict(if_busy='wait', flexible_start=True,
                      start_before=base.when(30)), 'start_before')):
            body = dict(base.flavor_lease(), **extra)
            resp = self.rsv('POST', '/leases', body)
            self.assertEqual(400, resp.status_code, (extra, resp.text))
            self.assertTrue(resp.json()['error_message'].startswith(field),
                            (extra, resp.text))
            resp = self.boot(base.params(base.when(60), base.when(90),
                                         **extra))
            self.assertEqual(400, resp.status, (extra, resp.content))
            self.assertIn('lease_params.' + field,
                          resp.body['badRequest']['message'])
        self.assertEqual([], self.leases())


class WaitingServerLeaseTest(base.ReservationsTestCase):
    """A boot's waiting lease: its servers are reserved and hold nothing
    until the lease is placed; then they start on its node.
    """

    def setUp(self) -> None:
        super().setUp()
        self.flags(ledger_max_age=0, group='reservation')
        self.capture_notifications()

    def test_servers_hold_nothing_until_placed_then_start(self):
        full = self.rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=0, end=60, name='full'))
        self.assertEqual(201, full.status_code, full.text)
        self.run_engine()
        resp = self.boot(base.params('now', base.when(30), if_busy='wait'))
        self.assertEqual(202, resp.status, resp.content)
        shown = resp.body['server']['reservation']
        self.assertEqual('WAITING', shown['status'])
        uuid = resp.body['server']['id']
        server = self.admin_api.get_server(uuid)
        self.assertEqual(('RESERVED', 'shelved_offloaded', None, 'WAITING'),
                         (server['status'], server['OS-EXT-STS:vm_state'],
                          server['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                          server['reservation']['status']))
        self.assertEqual({}, self.placement.get(
            '/allocations/%s' % uuid).body['allocations'])
        lease = db_leases.get(STORE, shown['lease_id'])
        self.assertEqual('WAITING', lease.status)
        self.assertIn('Not enough capacity', lease.status_reason)
        self.assertEqual(['RESERVED'], [
            b.state for b in db_bindings.of_lease(STORE, lease.id)])
        # The user can not run it meanwhile.
        unshelve = self.api.api_post('/servers/%s/action' % uuid,
                                     {'unshelve': None},
                                     check_response_status=False)
        self.assertEqual(409, unshelve.status, unshelve.content)
        # Room: the full lease goes; the next try places it, and its
        # server starts on the node of its slot.
        self.assertEqual(204, self.rsv(
            'DELETE', '/leases/%s' % full.json()['lease']['id']).status_code)
        self.run_engine()
        self.clock.now = max(self.clock.now,
                             epoch.to_epoch(db_api.utcnow())) + 61
        self.engine.place_waiting()
        self.run_engine()
        placed = db_leases.get(STORE, lease.id)
        self.assertEqual('ACTIVE', placed.status)
        node = self.node_of(uuid)
        slots = db_ledger.slots(STORE, shown['reservation_id'])
        self.assertEqual([(node, uuid)],
                         [(s.node, s.instance_uuid) for s in slots])

    def test_a_refused_boot_lease_takes_its_servers_away(self):
        full = self.rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=0, end=60, name='full'))
        self.assertEqual(201, full.status_code, full.text)
        self.run_engine()
        resp = self.boot(base.params('now', base.when(30), if_busy='wait',
                                     retries=1), count=2)
        self.assertEqual(202, resp.status, resp.content)
        lease_id = resp.body['server']['reservation']['lease_id']
        uuids = [b.instance_uuid for b in db_bindings.of_lease(STORE,
                                                               lease_id)]
        self.assertEqual(2, len(uuids))
        self.clock.now = max(self.clock.now,
                             epoch.to_epoch(db_api.utcnow())) + 61
        self.engine.place_waiting()
        self.run_engine()
        refused = db_leases.get(STORE, lease_id)
        self.assertEqual('REFUSED', refused.status)
        self.assertIn('refused after 1 try:', refused.status_reason)
        for uuid in uuids:
            self.wait_gone(uuid)
        told = [p['status'] for t, p in self.notified('lease.update')
                if p['lease_id'] == lease_id]
        self.assertEqual(['REFUSED'], told)

    def test_a_best_effort_boot_takes_its_earliest_fitting_start(self):
        full = self.rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=0, end=60, name='full'))
        self.assertEqual(201, full.status_code, full.text)
        self.run_engine()
        resp = self.boot(base.params(base.when(5), base.when(35),
                                     if_busy='wait', flexible_start=True,
                                     start_before=base.when(240)))
        self.assertEqual(202, resp.status, resp.content)
        shown = resp.body['server']['reservation']
        # Placed at once, when the full lease ends; reserved till then.
        self.assertEqual('RESERVED', shown['status'])
        lease = db_leases.get(STORE, shown['lease_id'])
        self.assertEqual((db_leases.get(STORE, full.json()['lease'][
            'id']).end_at, 'PENDING'), (lease.start_at, lease.status))
        self.assertEqual([resp.body['server']['id']], [
            s.instance_uuid for s in db_ledger.slots(
                STORE, shown['reservation_id'])])


class WaitingRaceTest(base.ReservationsTestCase):
    """Waiting leases against each other and against a try cut off."""

    def setUp(self) -> None:
        super().setUp()
        self.flags(ledger_max_age=0, group='reservation')

    def test_two_waiting_leases_for_one_freed_slot(self):
        held = []
        for name in ('one', 'two'):
            resp = self.rsv('POST', '/leases', base.flavor_lease(
                amount=1, start=0, end=60, name=name))
            self.assertEqual(201, resp.status_code, resp.text)
            held.append(resp.json()['lease']['id'])
        self.run_engine()
        first = self.rsv('POST', '/leases', waiting_lease(name='a')).json()
        second = self.rsv('POST', '/leases', waiting_lease(name='b')).json()
        # One slot frees; both are tried at once, by two engines.
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s' % held[0])
                         .status_code)
        self.run_engine()
        self.clock.now = max(self.clock.now,
                             epoch.to_epoch(db_api.utcnow())) + 61
        at_once([self.engine, self.cloud.engine(clock=self.clock)])
        statuses = sorted(db_leases.get(STORE, x['lease']['id']).status
                          for x in (first, second))
        self.assertEqual(['PENDING', 'WAITING'], statuses)
        # No notifier here: no notice stored that nothing would send.
        self.assertEqual([], db_notices.unsent(STORE))

    def test_a_try_cut_off_after_its_slots_leaves_no_extra(self):
        full = self.rsv('POST', '/leases', base.flavor_lease(
            amount=2, start=0, end=60, name='full'))
        self.run_engine()
        lease = self.rsv('POST', '/leases', waiting_lease()).json()['lease']
        self.assertEqual(204, self.rsv(
            'DELETE', '/leases/%s' % full.json()['lease']['id']).status_code)
        self.run_engine()
        # An engine wrote the slots of a try, then died.
        row = db_leases.get(STORE, lease['id'])
        rid = lease['reservations'][0]['id']
        db_waiting.hold_waiting(STORE, None, lease['id'], {rid: [dict(
            node='host1', start_at=row.start_at, end_at=row.end_at, vcpus=2,
            memory_mb=4096, disk_gb=40)]})
        self.clock.now = max(self.clock.now,
                             epoch.to_epoch(db_api.utcnow())) + 61
        self.engine.place_waiting()
        self.run_engine()
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease['id']).status)
        self.assertEqual(1, len(db_ledger.slots(STORE, rid)))
