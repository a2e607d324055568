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

"""What Placement counts as used on the compute nodes, as a scheduler's
filter reads it: every node at once in a thread of its own, or one node
now.
"""

import time
from typing import Callable, Iterable, NamedTuple

from nova_reservation import capacity
from nova_reservation.clients import placement
from nova_reservation.ledger import refresher

# Provider summaries of every resource class (1.27), and of every
# provider of each candidate's tree, with its root (1.29).
SUMMARIES_VERSION = '1.29'


class Snapshot(NamedTuple):
    """One read of every node's usage; never changed once made."""
    read_at: float      # when the read began (time.time()); 0: no read
    # {root provider uuid: (capacity, used)} of vCPU, RAM and disk, as
    # capacity.Resources.
    used: dict
    # {root provider uuid: {class: (capacity, used)}}: the classes of its
    # tree beyond those, summed over its providers; used by every
    # consumer, lease servers too.
    extras: dict


NO_READ = Snapshot(0.0, {}, {})


def tree_counts(summaries: dict) -> tuple:
    """(used, extras) of a `Snapshot` from the provider summaries of
    ``GET /allocation_candidates`` at `SUMMARIES_VERSION`.

    A tree in which some class's capacity is below its use is left out
    of `extras`: a unit wholly reserved while a server holds it (Ironic's)
    is the server's, which only the inventories and consumers say
    (`placement.counted_inventories`, `Usage.extras_now`).
    """
    used: dict = {}
    extras: dict = {}
    odd = set()
    for uuid, summary in summaries.items():
        root = summary.get('root_provider_uuid') or uuid
        resources = summary['resources']
        if root == uuid and 'VCPU' in resources:
            used[uuid] = tuple(capacity.counted({
                rc: amounts[field] for rc, amounts in resources.items()})
                for field in ('capacity', 'used'))
        tree = extras.setdefault(root, {})
        for rc, amounts in resources.items():
            if root == uuid and rc in capacity.RESOURCE_CLASSES:
                continue
            if amounts['capacity'] < amounts['used']:
                odd.add(root)
            total, before = tree.get(rc, (0, 0))
            tree[rc] = (total + amounts['capacity'],
                        before + amounts['used'])
    return used, {root: tree for root, tree in extras.items()
                  if root not in odd}


class Usage:
    """What Placement counts as used on each compute node that has room
    for one vCPU, as of at most one interval ago: one read of its
    allocation candidates' summaries, in a thread of its own
    (`keep_fresh`), so that the scheduler's filter asks no service.

    Nova's host states count the servers their computes know; Placement
    also counts what was claimed for a server that no compute has (yet):
    a boot whose conductor failed after its claim leaves such an
    allocation, which nothing deletes.  The filter counts it on the nodes
    that hold promises.  And host states know no class beyond vCPU, RAM
    and disk: the same read gives the filter each node's GPUs.
    """

    def __init__(self, client: Callable) -> None:
        self._client = client
        # A new Snapshot at each read, so that one look at it gives a
        # read and its time.
        self.snapshot: Snapshot = NO_READ
        # The classes whose candidates are read too (`read_also`).
        self.classes: frozenset = frozenset()
        self._refresher = refresher.Refresher(self.refresh,
                                              'placement-usage')

    def refresh(self) -> None:
        began = time.time()
        found: dict = {}
        for rc in ('VCPU', *sorted(self.classes)):
            found.update(placement.answer(self._client().get(
                '/allocation_candidates?resources=%s:1' % rc,
                version=SUMMARIES_VERSION))['provider_summaries'])
        self.snapshot = Snapshot(began, *tree_counts(found))

    def read_also(self, classes: Iterable[str]) -> None:
        """From the next read on, also the nodes with a unit free of each
        of `classes`: those a boot asks for where no vCPU is asked (an
        Ironic node's class), which the read of vCPU candidates lacks.
        """
        self.classes = self.classes.union(classes)

    def node(self, uuid: str) -> tuple:
        """(capacity, used) of the provider `uuid` now (two requests)."""
        client = self._client()
        inventories = placement.answer(client.get(
            '/resource_providers/%s/inventories' % uuid,
            version=placement.PLACEMENT_VERSION))['inventories']
        usages = placement.answer(client.get(
            '/resource_providers/%s/usages' % uuid,
            version=placement.PLACEMENT_VERSION))['usages']
        return placement.capacity_of(inventories), capacity.counted(usages)

    def extras_now(self, uuid: str, leased) -> dict:
        """{class: (capacity, used)} of the classes beyond vCPU, RAM and
        disk of the node `uuid`'s provider tree (as `placement.HostView`
        counts them), now, used by consumers other than the servers
        `leased` (which the ledger's promises hold): a listing of the
        tree, then two requests a provider.
        """
        client = self._client()
        version = placement.PLACEMENT_VERSION
        tree = placement.answer(client.get(
            '/resource_providers?in_tree=%s' % uuid, version=version))
        found: dict = {}
        for rp in tree['resource_providers']:
            inventories = placement.answer(client.get(
                '/resource_providers/%s/inventories' % rp['uuid'],
                version=version))['inventories']
            consumers = placement.answer(client.get(
                '/resource_providers/%s/allocations' % rp['uuid'],
                version=version))['allocations']
            inventories = placement.counted_inventories(inventories,
                                                        consumers)
            root = rp['uuid'] == uuid
            for rc, inventory in inventories.items():
                if root and rc in capacity.RESOURCE_CLASSES:
                    continue
                used = sum(allocation['resources'].get(rc, 0)
                           for consumer, allocation in consumers.items()
                           if consumer not in leased)
                total, before = found.get(rc, (0, 0))
                found[rc] = (total + placement.allocatable(inventory),
                             before + used)
        return found

    def claims(self, consumer: str) -> set:
        """The providers on which `consumer` holds an allocation now."""
        return set(placement.answer(self._client().get(
            '/allocations/%s' % consumer,
            version=placement.PLACEMENT_VERSION))['allocations'])

    def keep_fresh(self, interval: float) -> None:
        """Read every `interval` seconds in a thread (once per view);
        while Placement is away, the last read serves.
        """
        self._refresher.start(interval)

    def close(self) -> None:
        """Stop the thread of `keep_fresh` and forget what was read."""
        self._refresher.stop()
        self.snapshot = NO_READ
        self.classes = frozenset()
