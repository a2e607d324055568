"""The compute nodes as the ledger sees them, read from Placement."""

from typing import Iterable

from nova_reservation import capacity
from nova_reservation.db import api as db_api

PLACEMENT_VERSION = '1.14'
RESOURCE_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


def _json(resp) -> dict:
    if resp.status_code != 200:
        raise RuntimeError('Placement answered %s to %s'
                           % (resp.status_code, resp.url))
    return resp.json()


def _limit(inventory: dict) -> float:
    """What may be allocated: (total - reserved) x allocation_ratio."""
    return ((inventory['total'] - inventory.get('reserved', 0)) *
            inventory.get('allocation_ratio', 1.0))


def compute_hosts(client) -> list:
    """A `capacity.Host` per compute node provider.

    `client` is Nova's Placement report client.  A node's base usage is
    what its consumers use there, less the servers of leases: the ledger
    holds their capacity for the lease, and they hold none outside it.
    """
    providers = _json(client.get('/resource_providers',
                                 version=PLACEMENT_VERSION))
    hosts = []
    for rp in providers['resource_providers']:
        inventories = _json(client.get(
            '/resource_providers/%s/inventories' % rp['uuid'],
            version=PLACEMENT_VERSION))['inventories']
        if 'VCPU' not in inventories:
            continue
        consumers = _json(client.get(
            '/resource_providers/%s/allocations' % rp['uuid'],
            version=PLACEMENT_VERSION))['allocations']
        leased = db_api.lease_servers(consumers)
        used = _sum(capacity.Resources(*(c['resources'].get(rc, 0)
                                         for rc in RESOURCE_CLASSES))
                    for uuid, c in consumers.items() if uuid not in leased)
        cap = capacity.Resources(*(_limit(inventories[rc])
                                   if rc in inventories else 0
                                   for rc in RESOURCE_CLASSES))
        hosts.append(capacity.Host(node=rp['name'], capacity=cap,
                                   base=used))
    return hosts


def _sum(items: Iterable[capacity.Resources]) -> capacity.Resources:
    total = capacity.ZERO
    for r in items:
        total = total + r
    return total
