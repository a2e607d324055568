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

"""Server leases booted with ``--hint lease_params``, on real Nova."""

import datetime
import threading
import time

from nova import context as nova_context
from nova import objects

from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import events as db_events
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import notices as db_notices
from nova_reservation.engine import service
from nova_reservation import notifications
from nova_reservation import status
from nova_reservation.tests.functional import base

STORE = db_api.Context()


when = base.when
params = base.params


class FutureLeaseTest(base.ReservationTestCase):

    def _reserved(self, **extra):
        return self.boot_reserved(**extra)

    def test_reserved_until_start_then_active_on_its_node(self):
        uuid = self._reserved()
        server = self.api.get_server(uuid)
        self.assertEqual('RESERVED', server['status'])
        admin_view = self.admin_api.get_server(uuid)
        self.assertEqual('RESERVED', admin_view['status'])
        self.assertEqual('shelved_offloaded',
                         admin_view['OS-EXT-STS:vm_state'])
        self.assertIsNone(admin_view['OS-EXT-SRV-ATTR:host'])
        reservation = server['reservation']
        self.assertEqual('RESERVED', reservation['status'])
        lease = db_leases.get(STORE, reservation['lease_id'])
        self.assertEqual('PENDING', lease.status)
        self.assertIn('lease-' + lease.id, server['tags'])
        self.assertEqual(lease.id, server['metadata']['reservation:lease_id'])
        for node in self.NODES:
            self.assertEqual(0, self.placement_usage(node)['VCPU'])
        slot = db_ledger.slot_of(STORE, reservation['reservation_id'], uuid)

        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        server = self.admin_api.get_server(uuid)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(slot.host, server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(2, self.placement_usage(slot.node)['VCPU'])
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease.id).status)
        self.assertEqual('ACTIVE',
                         self.api.get_server(uuid)['reservation']['status'])

        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        self._wait_until_deleted(server)
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease.id).status)

    def test_on_end_shelve(self):
        uuid = self._reserved(on_end='shelve')
        lease = db_leases.get(
            STORE, self.api.get_server(uuid)['reservation']['lease_id'])
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        server = self.admin_api.get_server(uuid)
        self.assertTrue(server['status'].startswith('SHELVED'),
                        server['status'])
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease.id).status)


class SnapshotOnEndTest(base.ReservationTestCase):
    CAST_AS_CALL = False

    def test_on_end_snapshot(self):
        uuid = self.boot_reserved(on_end='snapshot')
        lease = db_leases.get(
            STORE, self.api.get_server(uuid)['reservation']['lease_id'])
        # Nova unshelves meanwhile: many passes on a loaded machine.
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1, passes=600)
        self.clock.now = epoch.to_epoch(lease.end_at) + 1
        # The snapshot is taken while the engine looks again and again:
        # the server is only deleted once its image is done.
        deadline = time.time() + 60
        while time.time() < deadline and self.admin_api.api_get(
                '/servers/%s' % uuid,
                check_response_status=False).status == 200:
            self.engine.run_once()
            time.sleep(0.1)
            self.clock.now += 1
        image_id = db_bindings.of_lease(STORE, lease.id)[0].image_id
        image = self.glance.show(None, image_id)
        self.assertEqual(('l1-vm', 'active'), (image['name'],
                                               image['status']))
        self.wait_gone(uuid)
        self.run_engine()
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease.id).status)


class SlowActionTest(base.ReservationTestCase):

    def test_a_slow_action_does_not_hold_up_other_events(self):
        uuid = self.boot_reserved()
        lease = db_leases.get(
            STORE, self.api.get_server(uuid)['reservation']['lease_id'])
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        # Nova takes its time over this server (a delete that lasts).
        ctx = nova_context.get_admin_context()
        instance = objects.Instance.get_by_uuid(ctx, uuid)
        instance.task_state = 'deleting'
        instance.save()
        other = self.lease_api()('POST', '/leases', {
            'name': 'other', 'start_date': when(125)[:16],
            'end_date': when(150)[:16],
            'reservations': [{'resource_type': 'flavor:instance',
                              'flavor_id': '1', 'amount': 1}]})
        self.assertEqual(201, other.status_code, other.text)
        other = db_leases.get(STORE, other.json()['lease']['id'])
        self.clock.now = epoch.to_epoch(other.start_at) + 1
        due = {e.event_type for e in db_events.due(STORE, self.engine.now())
               if e.lease_id == lease.id}
        self.assertEqual({'end'}, due)
        for _ in range(3):
            self.engine.run_once()
        self.assertEqual('ACTIVE', db_leases.get(STORE, other.id).status)
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease.id).status)
        end = next(e for e in db_events.of_lease(STORE, lease.id)
                   if e.event_type == 'end')
        self.assertEqual((status.UNDONE, 0), (end.status, end.attempts))


class ImmediateLeaseTest(base.ReservationTestCase):

    def test_now_boots_at_once_and_ends_at_end(self):
        resp = self.boot(params('now', when(30)))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        server = self._wait_for_state_change(
            self.admin_api.get_server(uuid), 'ACTIVE')
        lease = db_leases.get(
            STORE, self.api.get_server(uuid)['reservation']['lease_id'])
        self.assertEqual('ACTIVE', lease.status)
        self.run_engine()
        self.assertIn('lease-' + lease.id,
                      self.api.get_server(uuid)['tags'])
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        self._wait_until_deleted(server)
        self.assertEqual('TERMINATED', db_leases.get(STORE, lease.id).status)


class MultiCreateTest(base.ReservationTestCase):

    def test_one_lease_for_all_servers(self):
        resp = self.boot(params(when(60), when(120)), count=2)
        self.assertEqual(202, resp.status, resp.content)
        lease_id = resp.body['server']['reservation']['lease_id']
        self.run_engine()
        self.assertEqual(1, len(db_leases.get_all(STORE)))
        bindings = db_bindings.of_lease(STORE, lease_id)
        self.assertEqual(2, len(bindings))
        self.assertEqual({'RESERVED'}, {b.state for b in bindings})
        lease = db_leases.get(STORE, lease_id)
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        nodes = set()
        for b in bindings:
            server = self.admin_api.get_server(b.instance_uuid)
            self.assertEqual('ACTIVE', server['status'])
            nodes.add(server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
            slot = db_ledger.slot_of(STORE, b.reservation_id, b.instance_uuid)
            self.assertEqual(slot.node,
                             server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.assertEqual(set(self.NODES), nodes)


class RealClockTest(base.ReservationTestCase):
    """The engine on the real clock: a lease a few seconds long."""

    def test_short_lease_runs_on_time(self):
        self.flags(engine_poll_interval=0.2, action_poll_interval=0.2,
                   group='reservation')
        # Far enough ahead that the boot has returned (and the engine shelved
        # the server) before the start, also on a loaded machine: once the
        # start is due the engine skips the shelving.
        start = db_api.utcnow() + datetime.timedelta(seconds=6)
        # Long enough that the start's unshelve is mostly done before the
        # end is due (the end is timed from when it may begin, below).
        end = start + datetime.timedelta(seconds=9)
        resp = self.boot(params(start.isoformat() + 'Z',
                                end.isoformat() + 'Z'))
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        engine = service.Engine(self.nova_client())
        runner = threading.Thread(target=engine.run_forever)
        runner.start()
        self.addCleanup(runner.join)
        self.addCleanup(engine.stop)

        def server_or_none():
            resp = self.admin_api.api_get('/servers/%s' % uuid,
                                          check_response_status=False)
            return resp.body['server'] if resp.status == 200 else None

        seen = []
        deadline = time.time() + 120   # ends once deleted
        while time.time() < deadline:
            server = server_or_none()
            state = server['OS-EXT-STS:vm_state'] if server else 'deleted'
            if not seen or seen[-1][0] != state:
                seen.append((state, db_api.utcnow()))
            if state == 'deleted':
                break
            time.sleep(0.1)
        states = [s for s, _ in seen]
        self.assertEqual('deleted', states[-1], seen)
        self.assertIn('shelved_offloaded', states)
        active_at = next(t for s, t in seen if s == 'active' and t > start)
        deleted_at = seen[-1][1]
        # On time: the engine wakes for each event, not on a coarse poll;
        # Nova then takes what its services take (more on a loaded
        # machine: an unshelve there once took over three seconds).
        # An engine runs one event at a time: the end may begin once the
        # start is done, later than due where the start's unshelve took
        # longer than the lease (17 s once, on a loaded machine).
        lease_id = db_leases.get_all(STORE)[0].id
        events = {e.event_type: e
                  for e in db_events.of_lease(STORE, lease_id)}
        may_end = max(events['end'].due_at, events['start'].finished_at)
        late = {'start': events['start'].started_at - events['start'].due_at,
                'end': events['end'].started_at - may_end}
        self.assertLess(max(abs(t.total_seconds()) for t in late.values()),
                        1.5, late)
        # Nova's part, after the engine's punctual event: its unshelve and
        # delete (16 s once for the unshelve, on a loaded machine).
        self.assertLess(abs((active_at - start).total_seconds()), 60)
        self.assertLess(abs((deleted_at - max(end, may_end)).total_seconds()),
                        60)
        # The engine records the end right after Nova took the delete.
        for _ in range(50):
            if db_leases.get_all(STORE)[0].status == 'TERMINATED':
                break
            time.sleep(0.1)
        self.assertEqual('TERMINATED', db_leases.get_all(STORE)[0].status)


class NotificationTest(base.ReservationTestCase):

    def test_one_notification_per_event(self):
        self.flags(before_start_offset=15, group='reservation')
        self.capture_notifications()
        resp = self.boot(params(when(60), when(120), before_end=10))
        self.assertEqual(202, resp.status, resp.content)
        lease = db_leases.get(STORE, resp.body['server']['reservation'][
            'lease_id'])
        self.run_engine()
        # Nothing is told of the reserve event (shelving), only the lease.
        self.assertEqual(['lease.create'], [t for t, _ in self.notified()])
        self.run_engine(at=epoch.to_epoch(lease.start_at) - 15 * 60 + 1)
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        self.run_engine(at=epoch.to_epoch(lease.end_at) - 600 + 1)
        self.run_engine(at=epoch.to_epoch(lease.end_at) + 1)
        types = [t for t, _ in self.notified()]
        self.assertEqual(['lease.create', 'lease.event.before_start_lease',
                          'lease.event.start_lease',
                          'lease.event.before_end_lease',
                          'lease.event.end_lease'], types)
        end = self.notified()[-1][1]
        self.assertEqual(lease.id, end['lease_id'])
        self.assertEqual('TERMINATED', end['status'])
        # Sent notices are not kept.
        self.assertEqual([], db_notices.unsent(STORE))

    def test_a_notice_the_engine_could_not_send_is_sent_once_later(self):
        self.flags(driver=['test'], group='oslo_messaging_notifications')
        self.flags(event_claim_timeout=30, group='reservation')
        from oslo_messaging.notify import _impl_test as sent
        sent.reset()
        self.addCleanup(sent.reset)

        class Unreachable(notifications.Notifier):
            """A broker that is gone while the engine holds the notice."""
            def send(self, event_type, payload):
                raise ConnectionError('broker gone')

        self.engine.notifier = Unreachable()
        resp = self.boot(params(when(60), when(120)))
        lease_id = resp.body['server']['reservation']['lease_id']
        lease = db_leases.get(STORE, lease_id)
        self.run_engine()
        self.run_engine(at=epoch.to_epoch(lease.start_at) + 1)
        # The event is done, its notice kept, held by the first engine.
        self.assertEqual('ACTIVE', db_leases.get(STORE, lease_id).status)
        kept = db_notices.unsent(STORE)
        self.assertEqual(['lease.event.start_lease'],
                         [n.event_type for n in kept])

        other = service.Engine(self.nova_client(), clock=self.clock,
                               notifier=notifications.Notifier())
        other.run_once()
        self.assertNotIn('lease.event.start_lease', [
            n[1]['event_type'] for n in sent.NOTIFICATIONS])
        # Once the first engine's hold has expired, another sends it.
        self.clock.now += 31
        other.run_once()
        other.run_once()
        started = [n[1] for n in sent.NOTIFICATIONS
                   if n[1]['event_type'] == 'lease.event.start_lease']
        self.assertEqual(1, len(started))
        self.assertEqual(lease_id, started[0]['payload']['lease_id'])
        self.assertEqual('ACTIVE', started[0]['payload']['status'])
        self.assertEqual([], db_notices.unsent(STORE))
