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

"""The compute nodes as the ledger sees them, read from Placement."""

import dataclasses
import types
from typing import Callable, Iterable, Mapping, NamedTuple, Optional

from nova_reservation import capacity
from nova_reservation.exception import PlacementUnavailable

PLACEMENT_VERSION = '1.14'
# The trait Nova's resource tracker sets on each compute node's provider:
# what makes a node, whatever it has (an Ironic node has no VCPU).
COMPUTE_NODE = 'COMPUTE_NODE'
# The consumers of a provider that has none, one for all of them.
NO_CONSUMERS: Mapping = types.MappingProxyType({})


def answer(resp) -> dict:
    """The body of Placement's answer `resp`; a domain error if it failed
    (`PlacementUnavailable`: try again).
    """
    if resp.status_code >= 500:
        raise PlacementUnavailable('Placement answered %s to %s; try again'
                                   % (resp.status_code, resp.url))
    if resp.status_code != 200:
        raise RuntimeError('Placement answered %s to %s'
                           % (resp.status_code, resp.url))
    return resp.json()


def allocatable(inventory: dict) -> float:
    """What may be allocated: (total - reserved) x allocation_ratio."""
    return ((inventory['total'] - inventory.get('reserved', 0)) *
            inventory.get('allocation_ratio', 1.0))


def counted_inventories(inventories: dict, consumers: dict) -> dict:
    """A provider's `inventories` as the ledger counts them, given its
    `consumers` ({uuid: allocation}): a class wholly reserved while
    consumers hold some of it has that much of its reserve counted as
    theirs, not as lost.  Ironic's driver reserves a node's unit while a
    server is on it (unless ``[workarounds]
    skip_reserve_in_use_ironic_nodes``): the unit is the server's, which
    the ledger may promise to the lease that runs it.
    """
    used: dict = {}
    for consumer in consumers.values():
        for rc, n in consumer['resources'].items():
            used[rc] = used.get(rc, 0) + n
    found = dict(inventories)
    for rc, inventory in inventories.items():
        reserved = inventory.get('reserved', 0)
        if used.get(rc) and reserved and reserved >= inventory['total']:
            found[rc] = dict(inventory,
                             reserved=max(0, reserved - used[rc]))
    return found


def capacity_of(inventories: dict) -> capacity.Resources:
    """What may be allocated of vCPU, RAM and disk (`allocatable`)."""
    return capacity.counted({rc: allocatable(inventory)
                             for rc, inventory in inventories.items()})


def _extra(inventories: dict, root: bool) -> dict:
    """{class: (what may be allocated, (min_unit, max_unit, step_size))}
    of a provider's classes that a `capacity.Resources` does not hold (a
    child's: all of them).
    """
    return {rc: (allocatable(inventory),
                 (inventory.get('min_unit', 1),
                  inventory.get('max_unit', 2 ** 31 - 1),
                  inventory.get('step_size', 1)))
            for rc, inventory in inventories.items()
            if not (root and rc in capacity.RESOURCE_CLASSES)}


def _units(inventories: dict) -> tuple:
    """(min_unit, max_unit, step_size) of the counted classes, as
    `capacity.Host.units` has them (Placement's defaults where unset).
    """
    return tuple(capacity.counted({
        rc: inventory.get(field, default)
        for rc, inventory in inventories.items()})
        for field, default in (('min_unit', 1),
                               ('max_unit', 2 ** 31 - 1),
                               ('step_size', 1)))


class _Provider(NamedTuple):
    uuid: str
    root: str               # the uuid of its tree's root
    generation: int
    name: str
    compute: bool           # a compute node: a root Nova marks as one
    consumers: dict         # {consumer uuid: its allocation here}
    capacity: capacity.Resources
    used: capacity.Resources   # by every consumer
    traits: frozenset
    # A root's node with all of `used` as its base: what `_hosts` gives
    # for it while none of its servers is a lease's (most of them), made
    # once; None below a root.
    host: Optional[capacity.Host]
    extra: dict             # `_extra` of its inventories
    inventories: dict       # as Placement has them


class _Alike:
    """One object for each value that providers repeat (inventories,
    traits, capacities, bounds): on a cloud of like nodes, a few values
    held once, where each of thousands of providers held its own copy.
    Values are never changed once made.
    """

    # Kept values, at most: a new table once they are more (the values
    # already given out stay with their providers).
    LIMIT = 4096

    def __init__(self) -> None:
        self._known: dict = {}

    def __call__(self, value, key=None):
        """The one object equal to `value` (by `key`, if `value` can not
        be hashed).
        """
        key = value if key is None else key
        found = self._known.get(key)
        if found is None:
            if len(self._known) >= self.LIMIT:
                self._known = {}
            found = self._known[key] = value
        return found


def _inventories_key(inventories: dict) -> tuple:
    return tuple(sorted((rc, tuple(sorted(inventory.items())))
                        for rc, inventory in inventories.items()))


class HostView:
    """The compute nodes as `capacity.Host` objects, read from Placement.

    One listing of the providers per call; a provider's inventories and
    consumers are read again only when its generation (which Placement
    bumps on every inventory or allocation change) has moved, so that a
    lease on a cloud of thousands of nodes costs one request, not thousands.
    A node's base usage is what its consumers use there, less the servers
    of leases: the ledger holds their capacity for the lease, and they hold
    none outside it: `leased(uuids)` tells which of the servers those are.
    """

    def __init__(self, leased: Callable[[Iterable[str]], set]) -> None:
        self.leased = leased
        self._providers: dict = {}   # {uuid: _Provider}
        # {root uuid: [uuids of the providers below it]}, as last listed.
        self._below: dict = {}
        # {root uuid: (its tree's providers, its Host)}: a node with a tree
        # and no lease server in it is the same Host while none of its
        # providers was read again.
        self._trees: dict = {}
        # What the providers give, made again only once one of them was
        # read again: a lease on a cloud of thousands of nodes finds them
        # as they were (`_shape`, `_plain`).
        self._shape_now: Optional[tuple] = None
        self._plain_hosts: Optional[tuple] = None
        self._alike = _Alike()

    def hosts(self, client, fresh: bool = False,
              evictable: Optional[Callable] = None) -> list:
        """`client`: Nova's Placement report client; `evictable(uuids)`:
        those of the servers that leave for a lease (preemptible), left
        out of the base usage like the servers of leases.

        Placement does not move a provider's generation when a consumer's
        allocations are deleted: the cached view may count a server that is
        gone (never one that is new).  It only errs on the side of less
        room, and `fresh` reads every provider's consumers again (its
        inventories and traits too where its generation moved).
        """
        providers = answer(client.get('/resource_providers',
                                      version=PLACEMENT_VERSION))
        known = self._providers
        seen = {}
        moved = len(providers['resource_providers']) != len(known)
        for rp in providers['resource_providers']:
            old = known.get(rp['uuid'])
            now = seen[rp['uuid']] = self._current(client, rp, old, fresh)
            moved = moved or now is not old
        if moved:
            self._providers = seen
            below: dict = {}
            for p in seen.values():
                if p.uuid != p.root:
                    below.setdefault(p.root, []).append(p.uuid)
            self._below = below
            self._trees = {uuid: known for uuid, known in
                           self._trees.items() if uuid in seen}
            self._shape_now = None
        nodes, _ = self._shape()
        return self._hosts(nodes, evictable)

    def hosts_of(self, client, nodes: Iterable[str],
                 evictable: Optional[Callable] = None) -> dict:
        """{node: capacity.Host} of those of `nodes` that the view knows,
        as Placement has them now: each provider's generation read again
        (one small request a node), its inventories and consumers only
        where it moved.  (A claim moves it.)
        """
        by_name = {p.name: uuid for uuid, p in self._providers.items()
                   if p.uuid == p.root}
        _, below = self._shape()
        current = []
        for node in sorted(set(nodes)):
            uuid = by_name.get(node)
            if uuid is None:
                continue
            # A claim of a child's class moves the child's generation.
            for tree_uuid in [uuid] + [c.uuid for c in below.get(uuid, ())]:
                rp = answer(client.get(
                    '/resource_providers/%s' % tree_uuid,
                    version=PLACEMENT_VERSION))
                old = self._providers.get(tree_uuid)
                now = self._current(client, rp, old)
                if now is not old:
                    self._providers[tree_uuid] = now
                    self._shape_now = None
            if self._providers[uuid].compute:
                current.append(self._providers[uuid])
        return {h.node: h for h in self._hosts(current, evictable)}

    def uses(self, uuids: Iterable[str]) -> dict:
        """{node: {server uuid: capacity.Resources}} of those of the
        servers that the last read found on a node.
        """
        wanted = set(uuids)
        found: dict = {}
        for p in self._providers.values():
            for uuid in wanted.intersection(p.consumers):
                found.setdefault(p.name, {})[uuid] = _use(p.consumers[uuid])
        return found

    def _current(self, client, rp: dict, known,
                 consumers_too: bool = False) -> _Provider:
        """The provider `rp` (as Placement lists it), read again if its
        generation moved since `known`; its consumers read again anyway
        if `consumers_too` (deleted allocations leave the generation as
        it is).
        """
        root = rp.get('root_provider_uuid') or rp['uuid']
        if known is None or known.generation != rp['generation']:
            return self._provider(rp, root, *self._read(
                client, rp['uuid'], root == rp['uuid']))
        if not consumers_too or not self._has_consumers(
                known.traits, root == rp['uuid']):
            return known
        consumers = self._consumers(client, rp['uuid'])
        if consumers == known.consumers:
            return known
        return self._provider(rp, root, known.inventories, consumers,
                              known.traits)

    def _provider(self, rp: dict, root: str, inventories: dict,
                  consumers: dict, traits: frozenset) -> _Provider:
        alike = self._alike
        counted = counted_inventories(inventories, consumers)
        total = alike(capacity_of(counted))
        used = _sum(_use(c) for c in consumers.values())
        is_root = root == rp['uuid']
        extra = _extra(counted, is_root)
        return _Provider(rp['uuid'], root, rp['generation'], rp['name'],
                         is_root and COMPUTE_NODE in traits,
                         consumers or NO_CONSUMERS, total, used, traits,
                         capacity.Host(node=rp['name'], capacity=total,
                                       base=used, traits=traits,
                                       units=alike(_units(counted)))
                         if is_root else None,
                         alike(extra, tuple(sorted(extra.items()))),
                         inventories)

    def _shape(self) -> tuple:
        """([the compute nodes' root providers], {root uuid: [the
        providers below it]}) of the view as it is now (`hosts_of` may
        have just read some again).
        """
        if self._shape_now is None:
            providers = self._providers
            self._shape_now = (
                [p for p in providers.values()
                 if p.compute and p.uuid == p.root],
                {root: [providers[uuid] for uuid in uuids]
                 for root, uuids in self._below.items()})
        return self._shape_now

    def _hosts(self, providers: list,
               evictable: Optional[Callable] = None) -> list:
        _, below = self._shape()
        uuids = [uuid for p in providers for uuid in p.consumers]
        uuids += [uuid for p in providers for c in below.get(p.uuid, ())
                  for uuid in c.consumers]
        leased = self.leased(uuids)
        if evictable is not None:
            leased = leased | evictable(uuids)
        # Every node as its providers give it, no server left out: the
        # same list until one of them is read again.
        whole = not leased and providers is self._shape()[0]
        plain = self._plain_hosts
        if whole and plain is not None and plain[0] is providers:
            return list(plain[1])
        hosts = []
        for p in providers:
            # Its servers that the base leaves out: lease servers (the
            # ledger holds them), and those that leave for a lease.
            apart = leased.intersection(p.consumers) if leased else ()
            host = p.host
            if apart:
                used = p.used
                for uuid in apart:
                    used = used - _use(p.consumers[uuid])
                host = dataclasses.replace(host, base=used)
            children = below.get(p.uuid, ())
            if p.extra or children:
                host = self._tree_host(p, host, children, leased)
            hosts.append(host)
        if whole:
            self._plain_hosts = (providers, tuple(hosts))
        return hosts

    def _tree_host(self, root: _Provider, host: capacity.Host,
                   children: list, leased: set) -> capacity.Host:
        """`host` with what its tree beyond the root's counted classes
        gives (`_tree`), kept while its providers are those of the last
        call and hold no lease server.
        """
        tree = (root, *children)
        if leased and any(leased.intersection(p.consumers) for p in tree):
            return dataclasses.replace(host, **_tree(root, children, leased))
        known = self._trees.get(root.uuid)
        if known is not None and len(known[0]) == len(tree) and all(
                a is b for a, b in zip(known[0], tree)):
            return known[1]
        fields = _tree(root, children, leased)
        # Like nodes have like trees: one of each.
        for name in ('extra_capacity', 'extra_units'):
            fields[name] = self._alike(fields[name])
        found = dataclasses.replace(host, **fields)
        self._trees[root.uuid] = (tree, found)
        return found

    def _read(self, client, uuid: str, root: bool) -> tuple:
        inventories = answer(client.get(
            '/resource_providers/%s/inventories' % uuid,
            version=PLACEMENT_VERSION))['inventories']
        # Setting traits moves the generation too.
        traits = self._alike(frozenset(answer(client.get(
            '/resource_providers/%s/traits' % uuid,
            version=PLACEMENT_VERSION))['traits']))
        consumers = NO_CONSUMERS
        if self._has_consumers(traits, root):
            consumers = self._consumers(client, uuid)
        return (self._alike(inventories, _inventories_key(inventories)),
                consumers, traits)

    @staticmethod
    def _has_consumers(traits: frozenset, root: bool) -> bool:
        """Are a provider's consumers counted: a node's, or a child's?"""
        return COMPUTE_NODE in traits or not root

    @staticmethod
    def _consumers(client, uuid: str) -> dict:
        return answer(client.get(
            '/resource_providers/%s/allocations' % uuid,
            version=PLACEMENT_VERSION))['allocations']


def _tree(root: _Provider, children: Iterable[_Provider],
          apart: set) -> dict:
    """The fields of a `capacity.Host` that its tree beyond the root's
    counted classes gives, the consumers `apart` left out of its base.

    A class is counted for the whole tree (provider ''), wherever its
    providers are: Nova can not be told which physical GPU a server's vGPU
    comes from, so a slot promises one of the node's.  Where several
    providers have a class, a server may take one unit of it: one unit is
    on any of them that has room, as the sum says, where more might not
    be on one provider.
    """
    limits: dict = {}
    used: dict = {}
    bounds: dict = {}
    for p in [root, *children]:
        for rc, (limit, units) in p.extra.items():
            limits[('', rc)] = limits.get(('', rc), 0) + limit
            bounds.setdefault(('', rc), []).append(units)
        for uuid, consumer in p.consumers.items():
            if uuid in apart:
                continue
            for rc, n in consumer['resources'].items():
                if rc in p.extra:
                    used[('', rc)] = used.get(('', rc), 0) + n
    return dict(extra_capacity=capacity.extras(limits),
                extra_base=capacity.extras(used),
                extra_units=tuple(sorted(
                    (key, units[0] if len(units) == 1 else
                     (max(low for low, _, _ in units), 1, 1))
                    for key, units in bounds.items())),
                child_traits=tuple((c.uuid, c.traits) for c in children))


def _use(consumer: dict) -> capacity.Resources:
    return capacity.counted(consumer['resources'])


def _sum(items: Iterable[capacity.Resources]) -> capacity.Resources:
    total = capacity.ZERO
    for r in items:
        total = total + r
    return total
