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

"""A slot goes only where Placement would put its server: on random
compute nodes (inventories with any reserved amount, allocation ratio and
unit bounds, usage, traits, and child providers of their own with vGPUs
and traits, as a node's physical GPUs are) and random requests (amounts,
vGPUs, required and forbidden traits), the planner's choice of nodes that
can hold one slot is exactly the set of nodes that Placement's own ``GET
/allocation_candidates`` offers for the same request; where the planner is
stricter than Placement by design (a server's vGPUs counted over the
node's physical GPUs, so one vGPU a server where the node has several
GPUs; the traits of a vGPU's GPU not looked at but forbidden ones), it
never takes a node that Placement does not offer.
"""

import hypothesis
from hypothesis import strategies as st
from oslo_utils import uuidutils

from nova_reservation import capacity
from nova_reservation.clients import placement
from nova_reservation.lease import request as plan_request
from nova_reservation.lease import resource_types
from nova_reservation.lease import write
from nova_reservation.tests.functional import base

TRAITS = ('CUSTOM_GOLD', 'CUSTOM_FAST')
CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')
# Microversion of allocation candidates over nested providers, with
# forbidden traits (as Nova asks them).
VERSION = '1.36'


@st.composite
def inventory(draw, most: int) -> dict:
    total = draw(st.integers(1, most))
    step = draw(st.sampled_from((1, 1, 2)))
    return dict(total=total, reserved=draw(st.integers(0, total // 4)),
                allocation_ratio=draw(st.sampled_from((1.0, 1.5, 4.0))),
                min_unit=draw(st.sampled_from((1, 1, step))),
                max_unit=draw(st.integers(1, total)), step_size=step)


@st.composite
def node(draw) -> dict:
    inventories = {'VCPU': draw(inventory(16)),
                   'MEMORY_MB': draw(inventory(64)),
                   'DISK_GB': draw(inventory(40))}
    used = {}
    for rc, inv in inventories.items():
        # A usage Placement accepts: a whole number of steps, within the
        # unit bounds and the room.
        room = int((inv['total'] - inv['reserved']) *
                   inv['allocation_ratio'])
        high = min(inv['max_unit'], room)
        amounts = [n for n in range(inv['min_unit'], high + 1)
                   if n % inv['step_size'] == 0]
        if amounts and draw(st.booleans()):
            used[rc] = draw(st.sampled_from(amounts))
    # Physical GPUs: their traits, and the vGPUs (of 4) used on each.
    children = draw(st.lists(st.tuples(st.sets(st.sampled_from(TRAITS)),
                                       st.integers(0, 4)), max_size=2))
    return dict(inventories=inventories, used=used,
                traits=draw(st.sets(st.sampled_from(TRAITS))),
                children=children)


@st.composite
def asks(draw) -> tuple:
    amounts = {rc: draw(st.integers(0, most)) for rc, most in (
        ('VCPU', 12), ('MEMORY_MB', 48), ('DISK_GB', 30))}
    hypothesis.assume(any(amounts.values()))
    amounts['VGPU'] = draw(st.sampled_from((0, 0, 1, 2)))
    required = draw(st.sets(st.sampled_from(TRAITS)))
    forbidden = draw(st.sets(st.sampled_from(TRAITS))) - required
    return amounts, tuple(sorted(required | {'!' + t for t in forbidden}))


class PlacementAgreesTest(base.ReservationTestCase):
    CHECK_INVARIANTS = False

    def setUp(self) -> None:
        super().setUp()
        for trait in TRAITS:
            self.placement.put('/traits/%s' % trait, {}, version='1.6')
        self.children: dict = {}

    def make(self, spec: dict) -> str:
        uuid = uuidutils.generate_uuid()
        self.placement.post('/resource_providers', {
            'uuid': uuid, 'name': 'rp-' + uuid}, version='1.20')
        self.placement.put('/resource_providers/%s/inventories' % uuid, {
            'resource_provider_generation': 0,
            'inventories': spec['inventories']}, version='1.20')
        # A compute node: Nova's trait on it.
        self.placement.put('/resource_providers/%s/traits' % uuid, {
            'resource_provider_generation': 1,
            'traits': sorted({placement.COMPUTE_NODE, *spec['traits']})},
            version='1.20')
        for i, (traits, used) in enumerate(spec['children']):
            # A physical GPU: its traits are not the node's.
            child = uuidutils.generate_uuid()
            self.placement.post('/resource_providers', {
                'uuid': child, 'name': 'rp-%s-gpu%d' % (uuid, i),
                'parent_provider_uuid': uuid}, version='1.20')
            self.placement.put('/resource_providers/%s/inventories' % child,
                               {'resource_provider_generation': 0,
                                'inventories': {'VGPU': {'total': 4}}},
                               version='1.20')
            self.placement.put('/resource_providers/%s/traits' % child, {
                'resource_provider_generation': 1,
                'traits': sorted(traits)}, version='1.20')
            self.children.setdefault(uuid, []).append(child)
            if used:
                self.placement.put('/allocations/%s' % child, {
                    'allocations': {child: {'resources': {'VGPU': used}}},
                    'project_id': 'p', 'user_id': 'u'}, version='1.12')
        if spec['used']:
            self.placement.put('/allocations/%s' % uuid, {
                'allocations': {uuid: {'resources': spec['used']}},
                'project_id': 'p', 'user_id': 'u'}, version='1.12')
        return uuid

    def remove(self, uuid: str) -> None:
        self.placement.delete('/allocations/%s' % uuid)
        for child in self.children.pop(uuid, ()):
            self.placement.delete('/allocations/%s' % child)
            self.placement.delete('/resource_providers/%s' % child)
        self.placement.delete('/resource_providers/%s' % uuid)

    def placement_offers(self, amounts: dict, traits: tuple) -> set:
        query = 'resources=' + ','.join(
            '%s:%d' % (rc, n) for rc, n in sorted(amounts.items()) if n)
        if traits:
            query += '&required=' + ','.join(traits)
        return set(self.placement.get(
            '/allocation_candidates?' + query, version=VERSION).body[
            'provider_summaries'])

    def planner_takes(self, uuids: list, amounts: dict,
                      traits: tuple) -> set:
        planner = write.shared()
        shared, _ = planner.pools(fresh=True)
        by_name = {h.node: h for h in shared}
        req = plan_request.ReservationRequest(
            resource_type=resource_types.FLAVOR, count=1,
            need=capacity.Resources(*(amounts[rc] for rc in CLASSES)),
            traits=traits, extras=capacity.extras(
                {('', 'VGPU'): amounts['VGPU']} if amounts['VGPU'] else {}))
        now = planner.clock()
        return {uuid for uuid in uuids
                if planner.place_one(req, ([by_name['rp-' + uuid]], []), {},
                                     now, now + 3600)}

    @hypothesis.settings(max_examples=60, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.lists(node(), min_size=1, max_size=4), asks())
    def test_the_planner_takes_the_nodes_placement_offers(self, nodes,
                                                          asked):
        amounts, traits = asked
        uuids = [self.make(spec) for spec in nodes]
        try:
            offered = self.placement_offers(amounts, traits) & set(uuids)
            takes = self.planner_takes(uuids, amounts, traits)
            self.assertLessEqual(takes, offered)
            vgpus = amounts['VGPU']
            exact = {uuid for uuid, spec in zip(uuids, nodes)
                     if not vgpus or not traits and (
                         vgpus == 1 or len(spec['children']) <= 1)}
            self.assertEqual(offered & exact, takes & exact)
            # Each node carries its tree: its children's vGPUs (summed)
            # and traits.
            hosts = {h.node: h for h in write.shared().pools()[0]}
            for uuid, spec in zip(uuids, nodes):
                children = self.children.get(uuid, [])
                self.assertEqual(
                    (capacity.extras({('', 'VGPU'): 4 * len(children)}
                                     if children else {}),
                     {c: frozenset(t) for c, (t, _) in zip(
                         children, spec['children'])}),
                    (hosts['rp-' + uuid].extra_capacity,
                     dict(hosts['rp-' + uuid].child_traits)))
        finally:
            for uuid in uuids:
                self.remove(uuid)
