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

"""ReservationFilter keeps a host's room from one request to the next:
on Nova's own HostState objects, each change of the host's usage or
totals, and each change of the ledger, is seen by the next request.
"""

import datetime

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from nova import objects
from nova.scheduler import host_manager
import testtools

from nova_reservation import capacity
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.clients import placement_usage
from nova_reservation import filters
from nova_reservation.ledger import memory as ledger_mod

objects.register_all()
NOW = 1_000_000.0
HOUR = 3600.0


def compute_node(vcpus=8, vcpus_used=0, memory_mb=16384,
                 memory_mb_used=0, local_gb=100, local_gb_used=0,
                 ratio=1.0, updated_at=None):
    return objects.ComputeNode(
        uuid='c0ffee00-0000-4000-8000-000000000001', id=1, host='n1',
        hypervisor_hostname='n1', vcpus=vcpus, vcpus_used=vcpus_used,
        memory_mb=memory_mb, memory_mb_used=memory_mb_used,
        free_ram_mb=memory_mb - memory_mb_used, local_gb=local_gb,
        local_gb_used=local_gb_used, free_disk_gb=local_gb - local_gb_used,
        disk_available_least=local_gb - local_gb_used,
        updated_at=updated_at or datetime.datetime(
            2026, 1, 1, tzinfo=datetime.timezone.utc),
        host_ip='127.0.0.1', hypervisor_type='fake', hypervisor_version=1,
        numa_topology=None, supported_hv_specs=[], pci_device_pools=None,
        cpu_info='{}', stats=None, metrics=None, cpu_allocation_ratio=ratio,
        ram_allocation_ratio=ratio, disk_allocation_ratio=ratio)


def host_state(**node) -> host_manager.HostState:
    """A HostState as Nova's host manager makes and updates it."""
    state = host_manager.HostState('n1', 'n1', 'cell')
    state.update(compute=compute_node(**node), aggregates=[], inst_dict={})
    return state


def spec(vcpus=1, memory_mb=1024, root_gb=10,
         **extra_specs) -> objects.RequestSpec:
    flavor = objects.Flavor(id=1, flavorid='1', name='f', vcpus=vcpus,
                            memory_mb=memory_mb, root_gb=root_gb,
                            ephemeral_gb=0, swap=0, extra_specs=extra_specs)
    return objects.RequestSpec(
        project_id='p', user_id='u', flavor=flavor, num_instances=1,
        scheduler_hints={}, instance_group=None, numa_topology=None,
        pci_requests=None)


def view(*promised) -> ledger_mod.View:
    """A ledger with slots on n1 starting in an hour, each (vcpus,
    memory_mb, disk_gb).
    """
    slots = [capacity.Slot(i, 'r1', 'n1', NOW + HOUR, NOW + 2 * HOUR,
                           capacity.Resources(*need))
             for i, need in enumerate(promised, 1)]
    return ledger_mod.View(timelines={'n1': timeline_mod.Timeline(slots)})


class RoomTest(testtools.TestCase):

    def setUp(self) -> None:
        super().setUp()
        self.filter = filters.ReservationFilter(ledger=object(),
                                                clock=lambda: NOW)

    def passes(self, ledger: ledger_mod.View, state, request=None) -> bool:
        return bool(self.filter._ordinary(ledger, request or spec(),
                                          [state]))

    def test_a_server_placed_by_the_scheduler_is_seen_next_request(self):
        ledger = view((7, 1024, 10))
        state = host_state()
        self.assertTrue(self.passes(ledger, state))
        # Nova's own accounting of a server it placed on the node.
        state.consume_from_request(spec(vcpus=1))
        self.assertFalse(self.passes(ledger, state))

    def test_a_compute_node_read_again_is_seen_next_request(self):
        ledger = view((7, 1024, 10))
        state = host_state()
        self.assertTrue(self.passes(ledger, state))
        state.update(compute=compute_node(
            vcpus=7, updated_at=datetime.datetime(
                2026, 1, 2, tzinfo=datetime.timezone.utc)),
            aggregates=[], inst_dict={})
        self.assertFalse(self.passes(ledger, state))

    def test_a_new_ledger_is_seen_next_request(self):
        state = host_state()
        self.assertTrue(self.passes(view((7, 1024, 10)), state))
        self.assertFalse(self.passes(view((7, 1024, 10), (1, 0, 0)), state))

    def test_usage_changed_without_a_new_updated_is_seen(self):
        # A placement that failed half way changes the usage and not
        # `updated`.
        ledger = view((4, 14336, 10))
        state = host_state()
        self.assertTrue(self.passes(ledger, state))
        state.free_ram_mb -= 2048
        self.assertFalse(self.passes(ledger, state))

    def test_a_host_state_never_updated_is_looked_at_each_time(self):
        ledger = view((7, 1024, 10))
        state = host_state()
        state.updated = None
        self.assertTrue(self.passes(ledger, state))
        state.vcpus_total = 7
        self.assertFalse(self.passes(ledger, state))

    def test_a_server_takes_what_nova_asks_placement_for(self):
        # 7 of the node's 8 vCPUs are promised: a flavor of 4 vCPUs whose
        # extra specs ask Placement for one fits, and a GPU, which the
        # ledger does not promise, keeps no boot off.
        ledger = view((7, 1024, 10))
        state = host_state()
        self.assertFalse(self.passes(ledger, state, spec(vcpus=4)))
        self.assertTrue(self.passes(ledger, state, spec(
            vcpus=4, **{'resources:VCPU': '1'})))
        self.assertTrue(self.passes(ledger, state, spec(
            **{'resources:CUSTOM_GPU_A100': '1'})))
        self.assertFalse(self.passes(ledger, state, spec(
            vcpus=2, **{'resources:CUSTOM_GPU_A100': '1'})))
        self.assertFalse(self.passes(ledger, state, spec(
            vcpus=1, **{'resources:VCPU': '2'})))
        # A pinned server may be given vCPUs (Nova's fallback query when
        # no node has PCPU for it): they count.
        self.assertFalse(self.passes(ledger, state, spec(
            vcpus=2, **{'hw:cpu_policy': 'dedicated'})))

    def test_a_node_without_promises_always_passes(self):
        state = host_state(vcpus_used=8)
        self.assertTrue(self.passes(view(), state))

    def test_a_node_without_promises_takes_a_preemptible_server(self):
        # Nova's host state still counts a server it placed on the node
        # and that was never built (the node's record then never changes
        # again): Placement, which gave the node as a candidate, says
        # what fits.
        state = host_state()
        state.consume_from_request(spec(vcpus=8, memory_mb=16384,
                                        root_gb=100))
        state.update(compute=compute_node(), aggregates=[], inst_dict={})
        self.assertEqual(8, state.vcpus_used)
        preemptible = spec()
        preemptible.scheduler_hints = {'preemptible': ['true']}
        self.assertEqual([state], self.filter._preemptible(
            view(), preemptible, [state]))
        # A lease that starts within the margin still keeps it off.
        soon = ledger_mod.View(timelines={'n1': timeline_mod.Timeline([
            capacity.Slot(1, 'r1', 'n1', NOW + 30, NOW + HOUR,
                          capacity.Resources(1, 1024, 10))])})
        self.assertEqual([], self.filter._preemptible(
            soon, preemptible, [state]))

    @settings(max_examples=200, deadline=None)
    @given(st.tuples(st.integers(0, 16), st.integers(0, 32768),
                     st.integers(0, 200)),
           st.tuples(st.integers(0, 16), st.integers(0, 32768),
                     st.integers(0, 200)),
           st.tuples(st.integers(1, 8), st.integers(1, 8192),
                     st.integers(1, 50)),
           st.sampled_from([1.0, 1.5, 16.0]),
           st.integers(0, 2))
    def test_the_room_gives_the_rule(self, used, promised, need, ratio,
                                     placed):
        state = host_state(vcpus_used=used[0], memory_mb_used=used[1],
                           local_gb_used=used[2], ratio=ratio)
        ledger = view(promised)
        request = spec(*need)
        # Asked before and after Nova placed servers on the node: each
        # answer is the rule's on the host's state at that moment (a node
        # without promises is left to Nova's own filters).
        for _ in range(placed + 1):
            usage = filters.reservation_filter.node_usage(state)
            cap = filters.reservation_filter.node_capacity(state)
            expected = not any(promised) or (
                usage + capacity.Resources(*promised) +
                capacity.Resources(*need)).fits_in(cap)
            self.assertEqual(expected, self.passes(ledger, state, request))
            state.consume_from_request(spec(*need))

    def test_enrolled_nodes_are_set_aside_by_node(self):
        # Four nodes of one nova-compute service (bare metal), the whole
        # service in the freepool as Nova's aggregates hold services: only
        # the two enrolled nodes are kept for host reservations.
        freepool = objects.Aggregate(id=2, name='freepool', hosts=['svc'],
                                     metadata={})
        states = []
        for node in ('n1', 'n2', 'n3', 'n4'):
            state = host_manager.HostState('svc', node, 'cell')
            state.update(compute=compute_node(), aggregates=[freepool],
                         inst_dict={})
            states.append(state)
        self.filter.enrolled = lambda: {'svc': frozenset({'n2', 'n3'})}
        passed = self.filter._ordinary(ledger_mod.View(), spec(), states)
        self.assertEqual([states[0], states[3]], passed)
        passed = self.filter._preemptible(ledger_mod.View(), spec(), states)
        self.assertEqual([states[0], states[3]], passed)
        # A service the copy of the enrolled hosts does not know yet (just
        # enrolled) is set aside whole, as its aggregate says.
        self.filter.enrolled = dict
        self.assertEqual([], self.filter._ordinary(ledger_mod.View(),
                                                   spec(), states))
        # Out of the freepool, nothing is.
        for state in states:
            state.aggregates = []
        self.filter.enrolled = lambda: {'svc': frozenset({'n2', 'n3'})}
        self.assertEqual(states, self.filter._ordinary(ledger_mod.View(),
                                                       spec(), states))

    def test_hosts_set_aside_for_leases_by_their_aggregates(self):
        az = objects.Aggregate(id=1, name='az1', hosts=[],
                               metadata={'availability_zone': 'az1'})
        freepool = objects.Aggregate(id=2, name='freepool', hosts=[],
                                     metadata={})
        leased = objects.Aggregate(id=3, name='lease-1', hosts=[],
                                   metadata={'reservation:lease_id': 'l1'})
        # Host states share the host manager's aggregate objects.
        states = []
        for aggregates in ([az], [az, freepool], [leased, az], [az]):
            state = host_state()
            state.aggregates = aggregates
            states.append(state)
        passed = self.filter._ordinary(view((1, 0, 0)), spec(), states)
        self.assertEqual([states[0], states[3]], passed)
        passed = self.filter._preemptible(view((1, 0, 0)), spec(), states)
        self.assertEqual([states[0], states[3]], passed)


class _Client:
    """Placement's answer to the usage read: `summaries` as given."""

    def __init__(self, summaries: dict) -> None:
        self.summaries = summaries

    def get(self, url: str, version: str):
        client = self

        class Response:
            status_code = 200
            url = ''

            def json(self):
                return {'provider_summaries': client.summaries}
        # Every class summarised, every provider of a tree.
        assert version == placement_usage.SUMMARIES_VERSION, version
        return Response()


def summary(vcpus, memory_mb, disk_gb, used=(0, 0, 0)) -> dict:
    return {'resources': {
        rc: {'capacity': cap, 'used': u} for rc, cap, u in zip(
            ('VCPU', 'MEMORY_MB', 'DISK_GB'), (vcpus, memory_mb, disk_gb),
            used)}}


class PlacementUsageTest(testtools.TestCase):
    """What Placement counts and Nova's host state does not (a claim of a
    boot whose conductor failed after it) keeps an ordinary boot off a
    promised node too.
    """
    UUID = 'c0ffee00-0000-4000-8000-000000000001'

    def setUp(self) -> None:
        super().setUp()
        self.client = _Client({})
        self.usage = placement_usage.Usage(lambda: self.client)
        self.filter = filters.ReservationFilter(
            ledger=object(), clock=lambda: NOW, usage=self.usage)

    def placed(self, *used) -> None:
        self.client.summaries = {self.UUID: summary(8, 16384, 100, used)}
        self.usage.refresh()

    passes = RoomTest.passes

    def test_a_claim_no_compute_knows_counts(self):
        ledger = view((4, 8192, 10))
        state = host_state()
        self.assertTrue(self.passes(ledger, state))
        self.placed(4, 8192, 10)
        self.assertFalse(self.passes(ledger, state))
        self.placed(3, 1024, 10)
        self.assertTrue(self.passes(ledger, state))

    def test_the_lease_servers_placement_counts_are_the_ledgers(self):
        # A lease server of 4 vCPUs runs on the node: Placement counts it,
        # and so does the ledger's peak.
        ledger = view((4, 8192, 10))
        server = 'c0ffee00-0000-4000-8000-0000000000s1'.replace('s', 'a')
        ledger.bound[server] = capacity.Resources(4, 8192, 10)
        state = host_state(vcpus_used=4, memory_mb_used=8192,
                           local_gb_used=10)
        flavor = objects.Flavor(vcpus=4, memory_mb=8192, root_gb=10,
                                ephemeral_gb=0, swap=0)
        state.instances = {server: objects.Instance(uuid=server,
                                                    flavor=flavor)}
        self.placed(4, 8192, 10)
        self.assertTrue(self.passes(ledger, state))
        # One more vCPU claimed for a server no compute has: still room
        # for one (8 - 4 - 1 - 1), not for four.
        self.placed(5, 8192, 10)
        self.assertTrue(self.passes(ledger, state))
        self.assertFalse(self.passes(ledger, state, spec(vcpus=4)))

    def test_a_node_placement_does_not_list_is_nova_s_alone(self):
        # A node with no vCPU left is no allocation candidate: Nova's host
        # state decides alone (and Placement refuses its claims).
        self.client.summaries = {
            'another': summary(8, 16384, 100, (8, 0, 0)),
            'no-vcpu': {'resources': {'DISK_GB': {'capacity': 1,
                                                  'used': 0}}}}
        self.usage.refresh()
        self.assertEqual(['another'], list(self.usage.snapshot.used))
        self.assertTrue(self.passes(view((4, 8192, 10)), host_state()))
