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

"""Placing one server on a node's provider tree as Placement would grant
it, pure: each numbered request group from one provider that has all of
its classes, room, unit bounds and traits (with ``group_policy=isolate``,
each group from a provider of its own); each class of the unnumbered
group from any provider of the tree that has it, the group's traits
checked against the providers it takes from together.

A backtracking search, the biggest group first; providers that look the
same (room, traits, bounds, whether a group took them) are tried once, so
that a node of eight identical GPUs costs about what a node of one does.
"""

from typing import Iterator, Mapping, NamedTuple, Optional, Sequence


class Provider(NamedTuple):
    """One provider of a node's tree, as room is left on it."""
    key: str                        # '' the root; a child's uuid
    room: Mapping[str, float]       # {class: what may still be allocated}
    traits: frozenset = frozenset()
    # {class: (min_unit, max_unit, step_size)}; a class not named has
    # Placement's defaults (any whole amount).
    units: Mapping[str, tuple] = {}


class Group(NamedTuple):
    """One request group of a server, as Nova's ``ResourceRequest`` makes
    it: its amounts, and its required and forbidden traits.
    """
    amounts: Mapping[str, float]
    required: frozenset = frozenset()
    forbidden: frozenset = frozenset()


def _takes(provider: Provider, rc: str, amount: float, used: dict) -> bool:
    """Whether `provider` has `amount` of `rc` beside `used` of it, in one
    allocation its unit bounds allow.
    """
    if provider.room.get(rc, 0) - used.get((provider.key, rc), 0) < amount:
        return False
    low, high, step = provider.units.get(rc, (1, float('inf'), 1))
    return low <= amount <= high and amount % step == 0


def _signature(provider: Provider, used: dict, taken: set) -> tuple:
    return (tuple(sorted((rc, n - used.get((provider.key, rc), 0))
                         for rc, n in provider.room.items())),
            provider.traits, tuple(sorted(provider.units.items())),
            provider.key in taken, provider.key == '')


def _distinct(providers: Sequence[Provider], used: dict,
              taken: set) -> Iterator[Provider]:
    """`providers`, each look (`_signature`) once."""
    seen = set()
    for p in providers:
        signature = _signature(p, used, taken)
        if signature not in seen:
            seen.add(signature)
            yield p


def place(providers: Sequence[Provider], unnumbered: Group,
          numbered: Sequence[Group] = (),
          isolate: bool = False) -> Optional[dict]:
    """{(provider key, class): amount} of one server on the tree of
    `providers`, or None where Placement would not grant it.
    """
    order = sorted(numbered, key=lambda g: -sum(g.amounts.values()))
    return _numbered(providers, order, unnumbered, isolate, {}, set())


def _numbered(providers, groups, unnumbered, isolate, used, taken):
    if not groups:
        return _unnumbered(providers, unnumbered, used)
    group, rest = groups[0], groups[1:]
    for p in _distinct(providers, used, taken):
        if isolate and p.key in taken:
            continue
        if not group.required <= p.traits or group.forbidden & p.traits:
            continue
        if not all(_takes(p, rc, n, used)
                   for rc, n in group.amounts.items() if n):
            continue
        more = dict(used)
        for rc, n in group.amounts.items():
            if n:
                more[(p.key, rc)] = more.get((p.key, rc), 0) + n
        found = _numbered(providers, rest, unnumbered, isolate, more,
                          taken | {p.key})
        if found is not None:
            return found
    return None


def _unnumbered(providers, group, used):
    """Each class of `group` from one provider; the group's traits over
    the providers it takes from together.
    """
    classes = sorted((rc, n) for rc, n in group.amounts.items() if n)
    return _classes(providers, classes, group, used, frozenset())


def _classes(providers, classes, group, used, sources):
    if not classes:
        # Nothing taken from the tree: its root's traits are the group's.
        traits = frozenset().union(*(p.traits for p in providers
                                     if p.key in sources or
                                     (not sources and p.key == '')))
        if not group.required <= traits or traits & group.forbidden:
            return None
        return used
    (rc, n), rest = classes[0], classes[1:]
    for p in _distinct(providers, used, sources):
        if not _takes(p, rc, n, used):
            continue
        more = dict(used)
        more[(p.key, rc)] = more.get((p.key, rc), 0) + n
        found = _classes(providers, rest, group, more, sources | {p.key})
        if found is not None:
            return found
    return None
