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

"""The kinds of reservation (`base.Kind`), one module each, registered
here: adding a kind adds a module and a line below.
"""

from typing import Iterable

from nova_reservation.lease.kinds import base
from nova_reservation.lease.kinds import flavor
from nova_reservation.lease.kinds import floatingip
from nova_reservation.lease.kinds import host
from nova_reservation.lease.kinds import maintenance
from nova_reservation.lease.kinds import server
from nova_reservation.lease.kinds import virtual
from nova_reservation.lease import resource_types

KINDS = {kind.name: kind for kind in (
    server.Server(), flavor.Flavor(), virtual.Virtual(), host.Host(),
    floatingip.FloatingIP(), maintenance.Maintenance())}
# The kinds whose slots are capacity on the shared pool's compute nodes.
SHARED_POOL = tuple(k.name for k in KINDS.values() if k.shared_pool)
# The kinds with a private flavor named by the reservation's id.
WITH_FLAVOR = tuple(k.name for k in KINDS.values() if k.private_flavor)
# The kinds shared with other projects, split and matched openly.
SHAREABLE = tuple(k.name for k in KINDS.values() if k.shareable)
# {kind the quotas count: the hosts each of its slots counts}.
COUNTED = {k.name: int(k.whole_hosts) for k in KINDS.values() if k.counted}


def named_by(fields: set) -> str:
    """The kind of reservation that an availability search's `fields`
    name when they name none: a network's addresses, hosts by count,
    servers of a size, or else of a flavor.
    """
    if 'network_id' in fields:
        return resource_types.FLOATINGIP
    if {'min', 'max'} & fields:
        return resource_types.HOST
    return resource_types.VIRTUAL if 'vcpus' in fields else \
        resource_types.FLAVOR


def of(resource_type: str) -> base.Kind:
    """The kind of a reservation of `resource_type`."""
    return KINDS[resource_type]


def in_phases(reservations: Iterable) -> list:
    """A lease's reservations (rows) in the order their kinds' start and
    end act in Nova (`base.Kind.phase`).
    """
    return sorted(reservations, key=lambda r: of(r.resource_type).phase)
