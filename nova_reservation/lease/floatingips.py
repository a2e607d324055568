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

"""Floating IP addresses on the ledger (pure, no I/O).

Each registered address is a node of the ledger of its own, named
``floatingip:<its id>``, that holds one slot at a time: a reservation of
N addresses takes a slot on N such nodes over its lease, so that the
ledger's writes, checks and searches keep an address from being promised
twice at any instant as they keep a compute node from being overbooked.
A host name holds no colon, and Nova names a node by its host name or,
for Ironic, by a UUID.
"""

import ipaddress
from typing import Iterable
from typing import Optional

from nova_reservation import capacity

PREFIX = 'floatingip:'
# What an address holds, and what a reservation's slot of it takes: one.
UNIT = capacity.Resources(1, 0, 0)


def node_of(floatingip_id: str) -> str:
    return PREFIX + floatingip_id


def is_address(node: str) -> bool:
    return node.startswith(PREFIX)


def units(rows: Iterable) -> list:
    """The ledger's nodes (capacity.Host) of registered addresses (rows of
    the store), in the order of their addresses.
    """
    return [capacity.Host(node_of(r.id), UNIT)
            for r in sorted(rows, key=lambda r: sort_key(
                r.floating_ip_address))]


def sort_key(address: str) -> tuple:
    ip = ipaddress.ip_address(address)
    return ip.version, int(ip)


def canonical(address: str) -> str:
    """An address as it is kept (``ValueError`` if it is none)."""
    return str(ipaddress.ip_address(address))


def subnet_own_address(address: str, cidr: str) -> Optional[str]:
    """Which of subnet `cidr`'s own addresses `address` is, one that Neutron
    never makes a floating IP of, or None.

    As Neutron's IPAM checks an address asked for (``check_subnet_ip``): an
    IPv4 subnet's network address (its first, whatever its prefix) and its
    broadcast address (none in a /31 or /32), an IPv6 subnet's
    subnet-router anycast address (all host bits zero; only a router's
    port may have it).
    """
    ip = ipaddress.ip_address(address)
    net = ipaddress.ip_network(cidr, strict=False)
    if ip == net.network_address:
        return ('the network address' if net.version == 4
                else 'the subnet-router anycast address')
    if net.version == 4 and net.prefixlen <= 30 and \
            ip == net.broadcast_address:
        return 'the broadcast address'
    return None
