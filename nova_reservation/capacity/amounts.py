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

"""The values of the capacity math: what a server asks for and what a
node has (amounts of the classes a slot holds, traits, unit bounds), a
slot, a node; pure, no I/O.
"""

import dataclasses
from typing import Iterable, Mapping, NamedTuple, Optional
from typing import Sequence

from nova_reservation.exception import Uncounted

# An open-ended interval (an ordinary server has no end) runs to here.
FOREVER = float(2 ** 40)
# The ledger's resolution (its times are to the microsecond): a start
# just after another.
INSTANT = 1e-6
# The Placement resource classes a slot holds, in the order of `Resources`.
RESOURCE_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB')


class Resources(NamedTuple):
    vcpus: float = 0
    memory_mb: float = 0
    disk_gb: float = 0

    def __add__(self, other: 'Resources') -> 'Resources':  # type: ignore
        return Resources(self.vcpus + other.vcpus,
                         self.memory_mb + other.memory_mb,
                         self.disk_gb + other.disk_gb)

    def __sub__(self, other: 'Resources') -> 'Resources':
        return Resources(self.vcpus - other.vcpus,
                         self.memory_mb - other.memory_mb,
                         self.disk_gb - other.disk_gb)

    def scaled(self, factor: float) -> 'Resources':
        return Resources(self.vcpus * factor, self.memory_mb * factor,
                         self.disk_gb * factor)

    def fits_in(self, limit: 'Resources') -> bool:
        return (self.vcpus <= limit.vcpus and
                self.memory_mb <= limit.memory_mb and
                self.disk_gb <= limit.disk_gb)

    def describe(self) -> str:
        return '%g vCPU, %g MB RAM, %g GB disk' % self


ZERO = Resources()

# What a slot holds beyond `Resources` (its extras): a sorted tuple of
# ((provider, resource class), amount) pairs, provider '' being the
# node's root provider and a child's its uuid. Nearly every slot has none
# (the empty tuple), so the hot loops keep running on `Resources` alone.
NO_EXTRAS: tuple = ()
# One shared tuple per distinct value: a ledger holds a million slots of
# a few flavors.
_EXTRAS: dict = {}


def extras(amounts: Mapping[tuple, float]) -> tuple:
    """The extras of {(provider, resource class): amount}, zeros left
    out.
    """
    value = tuple(sorted((key, n) for key, n in amounts.items() if n))
    return _EXTRAS.setdefault(value, value) if value else NO_EXTRAS


def extras_sum(*values: tuple) -> tuple:
    """The extras of every one of `values` together."""
    total: dict = {}
    for value in values:
        for key, n in value:
            total[key] = total.get(key, 0) + n
    return extras(total)


def extras_scaled(value: tuple, factor: float) -> tuple:
    """The extras of `factor` slots of `value`."""
    return extras({key: n * factor for key, n in value})


def extras_within(need: tuple, held: tuple) -> bool:
    """Whether a slot holding extras `held` has all of `need`."""
    have = dict(held)
    return all(n <= have.get(key, 0) for key, n in need)


def extras_text(value: tuple) -> str:
    """Extras as a refusal names them ("CUSTOM_GPU_A100:2, ...")."""
    return ', '.join('%s:%g' % (rc if not provider else
                                '%s of %s' % (rc, provider), n)
                     for (provider, rc), n in value)


def absent(hosts: Iterable['Host'], need: tuple) -> str:
    """What a refusal adds of the classes of extras `need` that none of
    `hosts` has ('' if each has some).
    """
    found = sorted(rc for key, rc in (k for k, _ in need)
                   if not any(dict(h.extra_capacity).get((key, rc))
                              for h in hosts))
    if not found:
        return ''
    return '; no node that may hold it has %s' % ', '.join(found)


@dataclasses.dataclass(frozen=True, slots=True)
class Slot:
    """One row of the ledger: a slot promised on a node over [start, end)."""
    id: int
    reservation_id: str
    node: str
    start: float
    end: float
    resources: Resources
    instance_uuid: Optional[str] = None
    extras: tuple = NO_EXTRAS


# Slots: a process holds one for each node of the cloud.
@dataclasses.dataclass(frozen=True, slots=True)
class Host:
    """A node as the ledger sees it.

    `capacity` is what may be promised at all ((total - reserved) x
    allocation ratio); `base` is what servers outside the ledger use now,
    taken to stay for good since an ordinary server has no end.
    """
    node: str
    capacity: Resources
    base: Resources = ZERO
    # Its traits in Placement (its root provider's).
    traits: frozenset = frozenset()
    # Placement's bounds on one allocation of each class: (min_unit,
    # max_unit, step_size), each a Resources; None: none.
    units: Optional[tuple] = None
    # The rest of its provider tree, as extras: what may be promised of
    # each (provider, class) beyond `capacity` (the root's are provider
    # ''), and what servers outside the ledger use of them.
    extra_capacity: tuple = NO_EXTRAS
    extra_base: tuple = NO_EXTRAS
    # (((provider, class), (min_unit, max_unit, step_size)), ...).
    extra_units: tuple = ()
    # ((child provider uuid, its traits), ...): the traits of the
    # providers below the root.
    child_traits: tuple = ()


class Need(NamedTuple):
    """What one server of a reservation asks for: the resources of its
    slot, `traits` in Placement's syntax (``X`` its node must have, ``!X``
    it must not), and its `extras`.
    """
    resources: Resources
    traits: tuple = ()
    extras: tuple = NO_EXTRAS


class Placed(NamedTuple):
    """Where a plan puts one slot: its node, and what it holds there."""
    node: str
    resources: Resources
    extras: tuple = NO_EXTRAS


def extra_room(host: Host, peak: Mapping[tuple, float],
               keys: Optional[frozenset] = None) -> dict:
    """{(provider, class): what is left} of `host`'s extras (of `keys`
    only, if given) beside its base and `peak` (a timeline's
    `peak_extras`).
    """
    base = dict(host.extra_base)
    return {key: n - base.get(key, 0) - peak.get(key, 0)
            for key, n in host.extra_capacity
            if keys is None or key in keys}


def extra_count(room: Mapping[tuple, float], need: tuple) -> float:
    """How many slots of extras `need` `room` holds (inf: no extras)."""
    return min((room.get(key, 0) // n for key, n in need if n),
               default=float('inf'))


def has_traits(host: Host, traits: Iterable[str]) -> bool:
    """Whether Placement would give `host` to a request of `traits`."""
    return all((t[1:] not in host.traits) if t.startswith('!')
               else (t in host.traits) for t in traits)


def takes(host: Host, need: Resources) -> bool:
    """Whether Placement would allocate `need` (one server's) from `host`
    in one piece, room aside: each class asked for at least its min_unit,
    at most its max_unit, a whole number of its step_size.
    """
    if host.units is None:
        return True
    return all(not n or (low <= n <= high and n % step == 0)
               for n, low, high, step in zip(need, *host.units))


def may_hold(host: Host, need: Need) -> bool:
    """Whether `host` may hold slots of `need`, room aside."""
    if not (has_traits(host, need.traits) and
            takes(host, need.resources)):
        return False
    if not need.extras:
        return True
    # Its extras may come from any provider of the tree, and a provider
    # with a forbidden trait gives none: a node with one is left alone.
    forbidden = {t[1:] for t in need.traits if t.startswith('!')}
    if forbidden and any(forbidden & traits
                         for _, traits in host.child_traits):
        return False
    bounds = dict(host.extra_units)
    for key, n in need.extras:
        low, high, step = bounds.get(key, (1, 2 ** 31 - 1, 1))
        if not (low <= n <= high and n % step == 0):
            return False
    return True


def assures(held: Iterable[str], asked: Iterable[str]) -> bool:
    """Whether every node of a reservation placed for traits `held` has
    what a server asking for traits `asked` needs.
    """
    return set(asked) <= set(held)


def used_share(reserved: float, used: float) -> float:
    """The share of what is reserved that is used (1: nothing reserved)."""
    return min(used / reserved, 1.0) if reserved > 0 else 1.0


def counted(asked: Mapping[str, float]) -> Resources:
    """What a server takes of the classes the ledger counts, from what it
    asks Placement for ({resource class: amount}).
    """
    return Resources(*(asked.get(rc, 0) for rc in RESOURCE_CLASSES))


def need_of(asked: Mapping[str, float],
            conditions: Sequence[str] = ()) -> tuple:
    """(Resources, extras) of what a server takes, its classes beyond
    `Resources` from its node's own provider (provider ''), or `Uncounted`
    naming the `conditions` the ledger does not check when it places a
    slot (devices, classes of numbered request groups, providers other
    than the node's).
    """
    if conditions:
        raise Uncounted('asks for %s, which a lease cannot hold (a slot '
                        'holds classes of its node\'s provider tree, asked '
                        'for outside of numbered request groups)'
                        % ', '.join(conditions))
    return counted(asked), root_extras(asked)


def root_extras(asked: Mapping[str, float]) -> tuple:
    """The extras of what a server asks Placement for ({resource class:
    amount}) beyond `Resources`, on its node's own provider.
    """
    return extras({('', rc): n for rc, n in asked.items()
                   if rc not in RESOURCE_CLASSES})
