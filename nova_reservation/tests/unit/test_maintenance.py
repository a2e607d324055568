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

"""Maintenance windows, the pure parts: nodes held whole, the body's
checks, the tag that marks a compute service the window disabled, what
the invariants accept of a server whose slot a window moved."""

import datetime
import json
import unittest
from unittest import mock

from devcloud import invariants
from nova_reservation.api import validation as api_validation
from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.db import ledger as db_ledger
from nova_reservation.engine import maintenance
from nova_reservation import exception
from nova_reservation.lease.kinds import maintenance as maintenance_kind
from nova_reservation.lease import maintenance as lease_maintenance

NOW = datetime.datetime(2030, 1, 1)
FULL = capacity.Resources(10, 8192, 100)


def body(*reservations, **extra) -> dict:
    return dict({'name': 'w', 'start_date': '2030-01-02 00:00',
                 'end_date': '2030-01-02 04:00',
                 'reservations': list(reservations)}, **extra)


def window(**extra) -> dict:
    return dict({'resource_type': 'maintenance', 'hosts': ['n1'],
                 'reason': 'firmware'}, **extra)


def lease(value: dict):
    return api_validation.lease(value, NOW, 10 ** 7, 0, lambda f: None)


class WholeNodesTest(unittest.TestCase):

    def test_nodes_whole_whatever_servers_outside_the_ledger_use(self):
        hosts = [capacity.Host('n1', FULL, base=FULL),
                 capacity.Host('n2', FULL)]
        self.assertEqual([capacity.Placed('n1', FULL),
                          capacity.Placed('n2', FULL)],
                         capacity.plan_whole(hosts, {}, 0, 10))

    def test_any_slot_that_meets_the_window_refuses_it(self):
        tl = timeline_mod.Timeline()
        tl.add(capacity.Slot(1, 'r', 'n2', 10, 20,
                             capacity.Resources(1, 1, 1)))
        hosts = [capacity.Host('n1', FULL), capacity.Host('n2', FULL)]
        self.assertIsNone(capacity.plan_whole(hosts, {'n2': tl}, 5, 11))
        self.assertIsNone(capacity.plan_whole(hosts, {'n2': tl}, 19, 30))
        # Back to back: it fits.
        self.assertEqual(2, len(capacity.plan_whole(hosts, {'n2': tl}, 20,
                                                    30)))


class BodyTest(unittest.TestCase):

    def test_a_window_is_a_request_of_its_nodes_and_reason(self):
        _, [req], _ = lease(body(window(hosts=['n1', 'n2'])))
        self.assertEqual(('maintenance', ('n1', 'n2'), 'firmware', 2), (
            req.resource_type, req.hosts, req.reason, req.count))
        self.assertEqual('maintenance of node(s) n1, n2', req.describe())

    def test_refusals_name_the_field(self):
        cases = [
            (body(window(hosts=[])), 'hosts'),
            (body(window(hosts=['n1', 'n1'])), 'hosts'),
            (body(window(hosts=['n 1'])), 'hosts'),
            (body(window(hosts='n1')), 'hosts'),
            (body(window(hosts=['n%d' % i for i in range(101)])), 'hosts'),
            (body(window(reason=None)), 'reason'),
            (body(window(reason=' ')), 'reason'),
            (body(window(reason='é' * 256)), 'reason'),
            (body(window(shared_with=['p'])), 'shared_with'),
            (body(window(), window()), 'reservations'),
            (body(window(), {'resource_type': 'virtual:instance',
                             'vcpus': 1, 'memory_mb': 1, 'amount': 1}),
             'reservations'),
            (body(window(), if_busy='wait'), 'if_busy'),
            (body(window(), flexible_start=True), 'flexible_start'),
            (body(window(), on_end='extend_if_free'), 'on_end'),
        ]
        for value, field in cases:
            with self.assertRaises(exception.InvalidParam,
                                   msg=value) as caught:
                lease(value)
            self.assertIn(field, str(caught.exception), value)

    def test_a_reason_of_255_characters_of_any_script_is_taken(self):
        _, [req], _ = lease(body(window(reason='維' * 255)))
        self.assertEqual(255, len(req.reason))


class DisabledReasonTest(unittest.TestCase):

    def test_the_mark_always_fits_and_tells_the_window_apart(self):
        lease = '6f8a4c52-2d55-4b0e-9d1e-0a5c1b8a5f11'
        reason = maintenance_kind.disabled_reason('x' * 255, lease)
        self.assertEqual(255, len(reason))
        self.assertTrue(reason.endswith('(maintenance window %s)' % lease))
        self.assertTrue(maintenance_kind.ours(
            {'status': 'disabled', 'disabled_reason': reason}, lease))
        # Another window's, an operator's, an enabled one: not this one's.
        for service in ({'status': 'disabled', 'disabled_reason':
                         maintenance_kind.disabled_reason('x', 'other')},
                        {'status': 'disabled', 'disabled_reason': 'mine'},
                        {'status': 'disabled', 'disabled_reason': None},
                        {'status': 'enabled', 'disabled_reason': reason}):
            self.assertFalse(maintenance_kind.ours(service, lease), service)


class RunningSlotTest(unittest.TestCase):
    """Which slots of running leases a window moves."""

    def test_servers_slots_move_host_slots_and_claims_do_not(self):
        info = lease_maintenance.movable_now
        for kind, holder, moves in (
                ('flavor:instance', None, True),
                ('virtual:instance', 'a-server', True),
                ('server', 'a-server', True),
                ('flavor:instance', db_ledger.CLAIM_PREFIX + 'x', False),
                ('physical:host', None, False)):
            found = info(mock.Mock(resource_type=kind),
                         mock.Mock(instance_uuid=holder))
            self.assertEqual(moves, found, (kind, holder))
        self.assertIn('host reservation', lease_maintenance.unmovable_now(
            mock.Mock(resource_type='physical:host'), None, 'n1'))
        self.assertIn('booting', lease_maintenance.unmovable_now(
            mock.Mock(resource_type='server'), None, 'n1'))


class NamedHostNova:
    """What `_step` asks of Nova: the host of a node, a live migration."""

    def __init__(self, hosts: dict) -> None:
        self.hosts = hosts
        self.asked: list = []

    def host_of_node(self, node: str) -> str:
        if node not in self.hosts:
            raise exception.NovaNotFound(node)
        return self.hosts[node]

    def set_metadata(self, uuid: str, metadata: dict) -> None:
        pass

    def action(self, uuid: str, name: str, args=None) -> None:
        self.asked.append((uuid, name, args))


class RacedNova(NamedHostNova):
    """Another engine's live migration of the server came first: Nova
    answers `error`, and the server then has the task `task_state`.
    """

    def __init__(self, error: str, task_state) -> None:
        super().__init__({})
        self.error, self.task_state = error, task_state

    def action(self, uuid: str, name: str, args=None) -> None:
        raise exception.NovaError(self.error)

    def server(self, uuid: str) -> dict:
        return {'id': uuid, 'OS-EXT-STS:task_state': self.task_state}


class LeaseServerStepTest(unittest.TestCase):
    """A lease's server follows its slot: to the host of its node, named
    (not forced, so the scheduler's filters check it).
    """

    def step(self, nova, target) -> str:
        start = NOW + datetime.timedelta(minutes=5)
        server = {'id': 'x', 'status': 'ACTIVE', 'metadata': {
            'reservation:maintenance_at': start.isoformat() + 'Z'}}
        return maintenance._step(
            nova, mock.Mock(reason='r'), mock.Mock(id='w', start_at=start),
            server, 'a', NOW, None, target)

    def test_to_the_slots_node_or_listed_when_it_is_gone(self):
        nova = NamedHostNova({'c': 'compute-c'})
        self.assertEqual('', self.step(nova, 'c'))
        self.assertEqual([('x', 'os-migrateLive', {
            'host': 'compute-c', 'block_migration': 'auto'})], nova.asked)
        nova.asked = []
        self.assertEqual('node d of its slot is gone', self.step(nova, 'd'))
        self.assertEqual([], nova.asked)
        # An ordinary server: where the scheduler picks.
        self.step(nova, None)
        self.assertIsNone(nova.asked[0][2]['host'])

    def test_another_engine_s_migration_is_not_a_refusal(self):
        # Two engines on one window ask at once: Nova's check of the task
        # state loses the race with a 500, or answers 409.
        lost = ('POST /servers/x/action: 500 UnexpectedTaskStateError: '
                'Unexpected task state: expecting (None,) but the actual '
                'state is migrating')
        self.assertEqual('', self.step(RacedNova(lost, 'migrating'), None))
        self.assertEqual('', self.step(RacedNova(
            'POST /servers/x/action: 409 Conflict', None), None))
        # Nova refused it, and nothing is under way: listed with why.
        self.assertEqual('Nova would not live-migrate it: ' + lost[:200],
                         self.step(RacedNova(lost, None), None))


def slot_row(slot_id, node, uuid=None, vcpus=4, start=-1, end=2) -> dict:
    return {'id': slot_id, 'reservation_id': 'r%d' % slot_id, 'node': node,
            'instance_uuid': uuid, 'vcpus': vcpus, 'memory_mb': 512,
            'disk_gb': 1, 'deleted': False,
            'start_at': NOW + datetime.timedelta(hours=start),
            'end_at': NOW + datetime.timedelta(hours=end)}


class ServerOffItsSlotTest(unittest.TestCase):
    """The invariants of a server whose slot a window moved."""

    def window(self, starts_in: float, unmoved=()) -> tuple:
        reservation = {'id': 'w', 'lease_id': 'lw', 'deleted': False,
                       'resource_type': 'maintenance', 'hosts': '["a"]',
                       'unmoved_servers': json.dumps(
                           [{'server_id': u} for u in unmoved]) or None}
        lease = {'status': 'PENDING', 'start_at': NOW + datetime.timedelta(
            hours=starts_in)}
        return [reservation], {'lw': lease}

    def where(self, starts_in, unmoved=()) -> list:
        servers = {'x': {'id': 'x',
                         'OS-EXT-SRV-ATTR:hypervisor_hostname': 'a'}}
        return invariants._where([slot_row(1, 'b', 'x')], servers,
                                 *self.window(starts_in, unmoved), NOW)

    def test_off_its_slot_until_the_window_starts_or_listed(self):
        self.assertEqual([], self.where(1))
        self.assertEqual(['server x runs on a, its slot 1 on b'],
                         self.where(-1))
        self.assertEqual([], self.where(-1, unmoved=['x']))
        self.assertEqual(['server x runs on a, its slot 1 on b'],
                         invariants._where(
                             [slot_row(1, 'b', 'x')], {'x': {
                                 'id': 'x', 'OS-EXT-SRV-ATTR:'
                                 'hypervisor_hostname': 'a'}}, [], {}, NOW))

    def capacity(self, others: int) -> list:
        """Server x (4 VCPUs) on node a, its slot moved to b; slots of
        `others` VCPUs on a (of its 10).
        """
        size = {'total': 10, 'reserved': 0, 'allocation_ratio': 1.0}
        answers = {
            '/resource_providers': {'resource_providers': [
                {'name': 'a', 'uuid': 'A'}, {'name': 'b', 'uuid': 'B'}]},
            '/resource_providers/A/allocations': {'allocations': {
                'x': {'resources': {'VCPU': 4}}}},
            '/resource_providers/B/allocations': {'allocations': {}}}
        for rp in 'AB':
            answers['/resource_providers?in_tree=%s' % rp] = {
                'resource_providers': [{'uuid': rp}]}
            answers['/resource_providers/%s/inventories' % rp] = {
                'inventories': {rc: dict(size, total=10000) if rc != 'VCPU'
                                else size
                                for rc in capacity.RESOURCE_CLASSES}}
        slots = [slot_row(1, 'b', 'x'), slot_row(2, 'a', vcpus=others)]
        return invariants._capacity(slots, answers.get,
                                    epoch.to_epoch(NOW), set(), set())

    def test_a_server_off_its_slot_counts_where_it_runs(self):
        # Until it leaves, it uses node a as an ordinary server does.
        self.assertEqual([], self.capacity(6))
        [found] = self.capacity(7)
        self.assertIn('node a is promised', found)
