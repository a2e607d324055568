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

from typing import FrozenSet


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

    def fields(self, res, servers: list) -> dict:
        """The fields of a reservation (its row) that the lease API shows
        for this kind, as Blazar shows them; `servers`: those the viewer
        may see.
        """
        return {}

    def changeable(self) -> FrozenSet[str]:
        """The fields of a reservation that a lease's change may give."""
        return frozenset(self.sizes + self.shapes + (
            ('shared_with', 'matching') if self.shareable else ()))


def servers_fields(res, servers: list) -> dict:
    """What the lease API shows of a reservation of servers on the shared
    pool.
    """
    return dict(amount=res.amount, flavor_id=res.flavor_id,
                resource_id=res.flavor_id, servers=servers)


class Instance(Kind):
    """Blazar's instance reservations: capacity on the shared pool with a
    private flavor, shared, split and matched openly.
    """

    shareable = True
    shared_pool = True
    private_flavor = True

    def fields(self, res, servers: list) -> dict:
        return dict(servers_fields(res, servers), affinity=res.affinity,
                    vcpus=res.vcpus, memory_mb=res.memory_mb,
                    disk_gb=res.disk_gb,
                    resource_properties=res.resource_properties or '',
                    aggregate_id=None, server_group_id=res.server_group_id)
