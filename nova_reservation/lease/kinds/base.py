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

"""What differs between the kinds of reservation, said once per kind.

Each kind is a small class of its own module (`kinds.host`,
`kinds.flavor`, ...), registered in `nova_reservation.lease.kinds`; the
rest of the code asks a kind (`kinds.of(resource_type)`) rather than
branching on its name.
"""

from typing import Callable, FrozenSet, Optional

from nova_reservation import capacity
from nova_reservation.exception import InvalidParam
from nova_reservation.lease.kinds import checks
from nova_reservation.lease import properties


class Kind:
    """A kind of reservation, as Blazar names it (`name`)."""

    name = ''
    # What a change may grow at any time; the first is the reservation's
    # count.
    sizes: tuple = ('amount',)
    # What a change may give it before the lease starts (as in Blazar).
    shapes: tuple = ()
    # What a change may name only as it is (as in Blazar).
    kept: tuple = ()
    # Shared with other projects, split, and taken by ordinary boots
    # (`matching: open`).
    shareable = False
    # Its slots are capacity on the shared pool's compute nodes.
    shared_pool = False
    # It has a private flavor whose id is the reservation's, which the
    # project gets at the start (Blazar's `--flavor <reservation id>`).
    private_flavor = False
    # Counted by the projects' reservation quotas.
    counted = True
    # Its slots are whole reservable hosts, which the lease gets in an
    # aggregate of its own; its servers hold no slot of their own.
    whole_hosts = False
    # Its slots are addresses, not vCPUs: the idle measure leaves them out.
    holds_addresses = False
    # Made by a boot with lease_params: each of its servers holds a slot of
    # its own, and goes on to the next occurrence of a recurring lease.
    made_by_boot = False
    # A maintenance window: its nodes held whole, alone in its lease.
    window = False
    # Its private flavor is a copy of the flavor it names (else it is made
    # to the reservation's size, and again when the size changes).
    copies_flavor = False
    # When its start and end act in Nova among its lease's kinds: hosts
    # and flavors first, then floating IPs, then a window's services.
    phase = 0
    # The policy a lease that asks for it needs, beside the create's.
    policy: Optional[str] = None
    # The names a requirement on its nodes (resource_properties) may
    # use: a shared-pool node's; None: a reservable host's (any).
    requirement_names: Optional[tuple] = properties.NODE_NAMES

    def refuses_boots(self, res) -> Optional[str]:
        """Why a boot into reservation `res` (its row) is refused, or None:
        servers boot into it (``--hint reservation=<id>``).
        """
        return None

    def requested(self, req) -> dict:
        """What usage enforcement is told of a request of this kind,
        beside its id and type (Blazar's fields).
        """
        return {}

    def request_fields(self, prefix: str, value: dict,
                       flavor_need: Callable, registered: Callable) -> dict:
        """The `lease.request.ReservationRequest` fields of a lease body's
        reservation of this kind: `value` (its schema checked), whose
        fields `prefix` names; `flavor_need(flavor id)`: what a server of
        the flavor takes; `registered(network id)`: the addresses leases
        may take there.
        """
        raise InvalidParam(prefix + 'resource_type', 'a lease body can not '
                           'ask for %s' % self.name)

    def describe(self, req) -> str:
        """`req` in the words of a refusal."""
        raise NotImplementedError

    def place(self, planner, req, eligible: tuple,
              timelines: dict, start: float, end: float) -> Optional[list]:
        """[capacity.Placed] of `req`'s slots over [start, end) on the
        nodes `eligible` ((shared pool, reservable hosts with their rows),
        as `plan.pools_for` gives them), or None: they do not fit.
        `planner`: the `plan.Planner` asking.
        """
        raise NotImplementedError

    def start(self, nova, lease, res, writes) -> None:
        """What the lease's start does in Nova for its reservation `res`
        (its row), before its servers start.  `nova`: the engine's client
        of Nova; `writes`: where it asks for its store writes, made with
        the event's outcome (`lease.outcomes.Writes`).  Run again until
        the start is done: it does no harm twice.
        """

    def end(self, nova, lease, res, writes) -> None:
        """What the lease's end (or a recurring lease's pass to its next
        occurrence) undoes in Nova for `res`, after its servers; as
        `start`.
        """

    def fields(self, res, servers: list) -> dict:
        """The fields of a reservation (its row) that the lease API shows
        for this kind, as Blazar shows them; `servers`: those the viewer
        may see.
        """
        return {}

    def reshaped(self, prefix: str, res, entry: dict) -> dict:
        """The shape columns of reservation `res` (its row) that a
        change's `entry` gives other values, checked.
        """
        shape = {}
        for field in self.shapes:
            if field not in entry:
                continue
            value = entry[field]
            if field == 'affinity':
                value = checks.parse_affinity(prefix + field, value)
            elif field.endswith('_properties'):
                value = checks.parse_requirements(
                    prefix + field, value, self.requirement_names) or None
            else:
                value = checks.whole(prefix + field, value,
                                     *checks.SLOT_LIMITS[field])
            if value != getattr(res, field):
                shape[field] = value
        return shape

    def grown(self, prefix: str, res, entry: dict) -> tuple:
        """(count now, count asked, fewest asked or None, size columns)
        of a change's `entry` to reservation `res`: a count may grow,
        never shrink.
        """
        old = res.amount
        new = growing(prefix + 'amount', old, entry.get('amount', old))
        return old, new, None, {'amount': new}

    def keeps(self, prefix: str, res, entry: dict) -> None:
        """A change's `entry` may name what the reservation keeps
        (`kept`) only as it is.
        """
        for field in self.kept:
            if field in entry and entry[field] != getattr(res, field):
                raise InvalidParam(prefix + field, 'can not change')

    def changeable(self) -> FrozenSet[str]:
        """The fields of a reservation that a lease's change may give."""
        return frozenset(self.sizes + self.shapes + (
            ('shared_with', 'matching') if self.shareable else ()))


def growing(field: str, old: int, value) -> int:
    """A count a change asks for (`value`): `old` or more."""
    new = checks.whole(field, value)
    if new < old:
        raise InvalidParam(field, 'can grow but not shrink (now %d)' % old)
    return new


class SharedPool(Kind):
    """Servers' slots of one size on the shared pool's compute nodes."""

    shared_pool = True

    def requested(self, req) -> dict:
        found = dict(amount=req.count, flavor_id=req.flavor_id)
        if req.need is not None:
            found.update(vcpus=req.need.vcpus, memory_mb=req.need.memory_mb,
                         disk_gb=req.need.disk_gb)
        return found

    def describe(self, req) -> str:
        return '%d x %s (%s%s each%s)' % (
            req.count, req.flavor_name or req.flavor_id or
            req.resource_type, req.need.describe(),
            ' and ' + capacity.extras_text(req.extras)
            if req.extras else '',
            ', on nodes with traits %s' % ','.join(req.traits)
            if req.traits else '')

    def place(self, planner, req, eligible: tuple,
              timelines: dict, start: float, end: float) -> Optional[list]:
        nodes = capacity.plan(eligible[0], timelines, req.need, req.count,
                              start, end, affinity=req.affinity,
                              extras=req.extras)
        return nodes and [capacity.Placed(n, req.need, req.extras)
                          for n in nodes]


def servers_fields(res, servers: list) -> dict:
    """What the lease API shows of a reservation of servers on the shared
    pool.
    """
    return dict(amount=res.amount, flavor_id=res.flavor_id,
                resource_id=res.flavor_id, servers=servers)


class Instance(SharedPool):
    """Blazar's instance reservations: capacity on the shared pool with a
    private flavor, shared, split and matched openly.
    """

    shareable = True
    private_flavor = True

    def requested(self, req) -> dict:
        return dict(super().requested(req), affinity=req.affinity,
                    resource_properties=req.resource_properties)

    def request_fields(self, prefix: str, value: dict,
                       flavor_need: Callable, registered: Callable) -> dict:
        return dict(
            resource_type=self.name,
            count=checks.whole(prefix + 'amount', value.get('amount')),
            affinity=checks.parse_affinity(prefix + 'affinity',
                                           value.get('affinity')),
            resource_properties=checks.parse_requirements(
                prefix + 'resource_properties',
                value.get('resource_properties'), self.requirement_names),
            **self.need(prefix, value, flavor_need))

    def need(self, prefix: str, value: dict, flavor_need: Callable) -> dict:
        """What each slot holds, as ReservationRequest fields."""
        raise NotImplementedError

    def start(self, nova, lease, res, writes) -> None:
        """The project may boot with the private flavor from now on."""
        if res.private_flavor_id:
            nova.flavor_access(res.private_flavor_id, lease.project_id)

    def end(self, nova, lease, res, writes) -> None:
        """The private flavor and the server group go."""
        if res.private_flavor_id:
            nova.delete_flavor(res.private_flavor_id)
        if res.server_group_id:
            nova.delete_server_group(res.server_group_id)

    def fields(self, res, servers: list) -> dict:
        return dict(servers_fields(res, servers), affinity=res.affinity,
                    vcpus=res.vcpus, memory_mb=res.memory_mb,
                    disk_gb=res.disk_gb,
                    resource_properties=res.resource_properties or '',
                    aggregate_id=None, server_group_id=res.server_group_id)
