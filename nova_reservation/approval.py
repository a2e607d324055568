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

"""Which leases wait for an admin's approval (``[reservation]
approval_*``): the rule, pure (the lease service applies it to every new
lease, from the lease API and from a boot alike: `lease.approval`).

A lease needs approval when it reserves more vCPUs, more units of a
class (GPUs, bare-metal nodes by flavor), or more whole hosts than an
operator's threshold, when it is longer than one, or when its project
carries the approval tag in Keystone.  It is then written as any
lease (its slots held) but PENDING_APPROVAL, until an admin approves or
rejects it, or it expires (`lease.approval`).
"""

import datetime
from typing import Iterable, List, NamedTuple

from nova_reservation import conf
from nova_reservation import resource_types

CONF = conf.CONF
# The status reason of a lease that waits for approval begins with it.
REASON = 'waiting for approval: '


class Thresholds(NamedTuple):
    """Above which a lease needs approval (0: no threshold)."""
    vcpus: int = 0
    hosts: int = 0
    seconds: int = 0
    tag: str = ''
    # ((class, units), ...) beyond vCPU, RAM and disk.
    classes: tuple = ()


def thresholds() -> Thresholds:
    """The thresholds the operator set."""
    options = CONF.reservation
    return Thresholds(options.approval_vcpus, options.approval_hosts,
                      options.approval_duration, options.approval_tag,
                      tuple(sorted(options.approval_classes.items())))


def units(requests: Iterable, rc: str) -> float:
    """The units of class `rc` that a lease's requests reserve in all
    (servers and capacity of the shared pool).
    """
    return sum(r.count * n for r in requests
               if r.resource_type in resource_types.SHARED_POOL
               for (_, name), n in r.extras if name == rc)


def vcpus(requests: Iterable) -> int:
    """The vCPUs a lease's requests reserve in all (servers and capacity
    of the shared pool).
    """
    return sum(r.count * r.need.vcpus for r in requests
               if r.resource_type in resource_types.SHARED_POOL and r.need)


def hosts(requests: Iterable) -> int:
    """The most whole hosts a lease's requests reserve in all."""
    return sum(r.count for r in requests
               if r.resource_type == resource_types.HOST)


def reasons(requests: list, start: datetime.datetime,
            end: datetime.datetime, tags: Iterable[str],
            limits: Thresholds) -> List[str]:
    """Why a lease of `requests` from `start` to `end`, of a project with
    `tags`, needs approval under `limits` (none: it does not).
    """
    found = []
    total = vcpus(requests)
    if limits.vcpus and total > limits.vcpus:
        found.append('it reserves %d vCPUs, more than %d (approval_vcpus)'
                     % (total, limits.vcpus))
    for rc, limit in limits.classes:
        total_units = units(requests, rc)
        if limit and total_units > limit:
            found.append('it reserves %g %s, more than %d '
                         '(approval_classes)' % (total_units, rc, limit))
    whole = hosts(requests)
    if limits.hosts and whole > limits.hosts:
        found.append('it reserves up to %d hosts, more than %d '
                     '(approval_hosts)' % (whole, limits.hosts))
    seconds = (end - start).total_seconds()
    if limits.seconds and seconds > limits.seconds:
        found.append('it lasts %d s, longer than %d s (approval_duration)'
                     % (seconds, limits.seconds))
    if limits.tag and limits.tag in tags:
        found.append('its project is tagged %s (approval_tag)' % limits.tag)
    return found


def status_reason(found: List[str]) -> str:
    return (REASON + '; '.join(found))[:255]


def awaited(lease) -> bool:
    """Whether a lease (its row) was written waiting for approval: a boot's
    lease still CREATING carries the reason already.
    """
    return (lease.status_reason or '').startswith(REASON)


def hold() -> int:
    """Seconds a lease waits for approval at most."""
    return CONF.reservation.approval_hold


def expires(created_at: datetime.datetime,
            start_at: datetime.datetime) -> datetime.datetime:
    """When a lease made at `created_at` stops waiting for approval: the
    hold's end, or its start if that comes first.
    """
    return min(start_at, created_at + datetime.timedelta(seconds=hold()))
