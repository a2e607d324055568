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

"""Floating IP addresses on the ledger: the choice of addresses against
brute force, and the addresses' names and order.
"""

import unittest

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from nova_reservation import capacity
from nova_reservation.capacity import timeline as timeline_mod
from nova_reservation.lease import floatingips

intervals = st.tuples(st.integers(0, 100), st.integers(1, 30)).map(
    lambda p: (p[0], p[0] + p[1]))


def alloc(i, start, end, node):
    return capacity.Slot(id=i, reservation_id='r%d' % i, node=node,
                         start=start, end=end, resources=floatingips.UNIT)


class PlanUnitsTest(unittest.TestCase):
    """Floating IP addresses: nodes that hold one slot at a time."""

    UNIT = floatingips.UNIT
    NODES = ['a0', 'a1', 'a2', 'a3']

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(NODES), intervals),
                    max_size=12),
           intervals, st.lists(st.sampled_from(NODES), max_size=2,
                               unique=True), st.integers(1, 4))
    def test_against_brute_force(self, taken, wanted, required, count):
        nodes: dict = {}
        for i, (node, (a, b)) in enumerate(taken):
            nodes.setdefault(node, []).append(alloc(i, a, b, node))
        tls = {n: timeline_mod.Timeline(x) for n, x in nodes.items()}
        units = [capacity.Host(n, self.UNIT) for n in self.NODES]
        start, end = wanted
        free = [n for n in self.NODES if not any(
            a.start < end and start < a.end for a in nodes.get(n, []))]
        chosen = capacity.plan_units(units, tls, start, end, required,
                                     count)
        possible = set(required) <= set(free) and len(free) >= count and \
            len(required) <= count
        if not possible:
            self.assertIsNone(chosen)
            return
        self.assertEqual(count, len(chosen))
        self.assertEqual(len(chosen), len(set(chosen)))
        self.assertTrue(set(chosen) <= set(free))
        self.assertTrue(set(required) <= set(chosen))


class AddressesTest(unittest.TestCase):

    def test_canonical_and_order(self):
        self.assertEqual('2001:db8::1', floatingips.canonical('2001:DB8::1'))
        self.assertRaises(ValueError, floatingips.canonical, '10.0.0.256')
        self.assertEqual(['9.0.0.1', '10.0.0.2', '::1'], sorted(
            ['::1', '10.0.0.2', '9.0.0.1'], key=floatingips.sort_key))

    def test_nodes(self):
        node = floatingips.node_of('abc')
        self.assertTrue(floatingips.is_address(node))
        self.assertFalse(floatingips.is_address('compute1'))

    def test_subnet_own_addresses_neutron_never_gives(self):
        own = floatingips.subnet_own_address
        self.assertEqual('the network address',
                         own('172.24.4.0', '172.24.4.0/24'))
        self.assertEqual('the broadcast address',
                         own('172.24.4.255', '172.24.4.0/24'))
        self.assertEqual('the broadcast address',
                         own('10.0.0.3', '10.0.0.0/30'))
        for address in ('172.24.4.1', '172.24.4.200', '172.24.4.254'):
            self.assertIsNone(own(address, '172.24.4.0/24'), address)
        # A /31 has no broadcast address (RFC 3021), but Neutron still
        # refuses its first address, as it does a /32's only one.
        self.assertEqual('the network address', own('10.0.0.0', '10.0.0.0/31'))
        self.assertIsNone(own('10.0.0.1', '10.0.0.0/31'))
        self.assertEqual('the network address', own('10.0.0.7', '10.0.0.7/32'))
        self.assertEqual('the subnet-router anycast address',
                         own('2001:db8::', '2001:db8::/64'))
        # IPv6 has no broadcast address.
        for address in ('2001:db8::1', '2001:db8::ffff:ffff:ffff:ffff'):
            self.assertIsNone(own(address, '2001:db8::/64'), address)
