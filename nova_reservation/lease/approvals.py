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

"""Approval: which leases wait for an admin's approval (``[reservation]
approval_*``), and the decisions on a lease that waits.

The rule (`reasons`) is pure.  A lease needs approval when it reserves
more vCPUs, more units of a class (GPUs, bare-metal nodes by flavor), or
more whole hosts than an operator's threshold, when it is longer than
one, or when its project carries the approval tag in Keystone.  It is
then written as any lease (its slots held) but PENDING_APPROVAL, until an
admin approves or rejects it, or it expires.

The lease service applies it (`gate`) on the one road by which leases are
made, from the lease API and from a boot alike; the decisions on a lease
that waits (approved, rejected, expired) are each told to its owner.

Each decision is one conditional write (`db.approvals`) with its
notification stored in the same transaction (``lease.approval.<step>``,
the lease's payload and the ``reason``): an engine sends it (`engine
.outbox`), so that a broker away loses none.
"""

import datetime
from typing import Callable, Iterable, List, NamedTuple, Optional

from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_reservation.clients import project_tags
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import approvals as db_approvals
from nova_reservation.db import leases as db_leases
from nova_reservation.db import notices as db_notices
from nova_reservation import exception
from nova_reservation.lease import kinds
from nova_reservation import notifications
from nova_reservation import status

CONF = conf.CONF
LOG = logging.getLogger(__name__)
# The steps told to the owner, as notification event types.
REQUESTED, APPROVED, REJECTED, EXPIRED = (
    'lease.approval.requested', 'lease.approval.approved',
    'lease.approval.rejected', 'lease.approval.expired')
AT_START = 'its start came before an admin approved it'
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
               if r.resource_type in kinds.SHARED_POOL
               for (_, name), n in r.extras if name == rc)


def vcpus(requests: Iterable) -> int:
    """The vCPUs a lease's requests reserve in all (servers and capacity
    of the shared pool).
    """
    return sum(r.count * r.need.vcpus for r in requests
               if r.resource_type in kinds.SHARED_POOL and r.need)


def hosts(requests: Iterable) -> int:
    """The most whole hosts a lease's requests reserve in all."""
    return sum(r.count for r in requests
               if kinds.of(r.resource_type).whole_hosts)


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


def gate(ctx, values: dict, requests: list, servers: bool) -> bool:
    """Whether a new lease (its row's `values`, its `requests`) of the
    caller of `ctx` waits for approval; if so, `values` say it (the status,
    or for a boot's lease `servers`, which stays CREATING until they are
    bound, the reason only).  ApprovalRequired when it needs approval but can
    not wait for it: it starts now, or it would wait for room instead.
    """
    limits = thresholds()
    if not any(limits):
        return False
    found = reasons(
        requests, values['start_at'], values['end_at'],
        project_tags.tags(ctx) if limits.tag else (), limits)
    if not found:
        return False
    why = '; '.join(found)
    if values['start_at'] <= db_api.utcnow():
        raise exception.ApprovalRequired(
            'the lease needs an admin\'s approval (%s): ask for a start in '
            'the future; it waits for approval until then' % why)
    if values.get('if_busy') == 'wait':
        raise exception.ApprovalRequired(
            'the lease needs an admin\'s approval (%s): it can not also wait '
            'for room (if_busy: wait)' % why)
    values['status_reason'] = status_reason(found)
    if not servers:
        values['status'] = status.PENDING_APPROVAL
    return True


def series_of(lease) -> List[str]:
    """The ids a decision on `lease` covers: a series' first occurrence
    stands for the whole series.
    """
    if lease.series_id != lease.id:
        return [lease.id]
    return [lease.id] + db_leases.later_occurrences(db_api.Context(),
                                                    lease.id)


def store_notice(ctx, lease_id: str, event_type: str,
                 reason: Optional[str]) -> None:
    """Store the notification of a step in `ctx`'s transaction, to be sent
    by the first engine that looks (it is nobody's claim yet).
    """
    details = db_leases.details(ctx, [lease_id])[lease_id]
    payload = dict(notifications.lease_payload(lease_id, details),
                   reason=reason)
    now = db_api.utcnow()
    db_notices.add(ctx, [dict(
        id=uuidutils.generate_uuid(), lease_id=lease_id,
        event_type=event_type, payload=jsonutils.dumps(payload),
        claimed_by=None, claim_expires=now)], now)


def requested(lease_id: str) -> None:
    """Tell the owner that their new lease waits for approval (the lease
    is made whether or not this can be stored).
    """
    try:
        lease = db_leases.get(db_api.Context(), lease_id)
        store_notice(db_api.Context(), lease_id, REQUESTED,
                     lease.status_reason)
    except Exception as e:   # the lease stays; its wait is listed
        LOG.warning('Lease %s: %s could not be stored: %s', lease_id,
                    REQUESTED, e)
        return
    LOG.info('Lease %s waits for approval (%s)', lease_id,
             lease.status_reason)


def _also(lease_id: str, event_type: str, reason: Optional[str],
          more: Optional[Callable] = None) -> Callable:
    def also(ctx) -> None:
        store_notice(ctx, lease_id, event_type, reason)
        if more:
            more(ctx)
    return also


def approve(lease, by: str, reason: Optional[str] = None) -> None:
    """An admin (`by`: their user id) approves `lease` (its row):
    PENDING, like any lease.  Conflict if it does not wait for
    approval (any more).
    """
    text = 'approved by %s%s' % (by, ': %s' % reason if reason else '')
    if not db_approvals.approve(db_api.Context(), series_of(lease), text,
                                _also(lease.id, APPROVED, reason)):
        raise _not_waiting(lease.id)
    LOG.info('Lease %s %s', lease.id, text)


def reject(lease, by: str, reason: Optional[str] = None) -> None:
    """An admin (`by`) rejects `lease`: nothing of it is left (the engine
    removes what was made for it).  Conflict if it does not wait for
    approval (any more).
    """
    text = 'rejected by %s%s' % (by, ': %s' % reason if reason else '')
    if not db_approvals.reject(db_api.Context(), series_of(lease), text,
                               also=_also(lease.id, REJECTED, reason)):
        raise _not_waiting(lease.id)
    LOG.info('Lease %s %s', lease.id, text)


def _not_waiting(lease_id: str) -> exception.Conflict:
    lease = db_leases.get(db_api.Context(), lease_id)
    return exception.Conflict(
        'lease %s is %s: it does not wait for approval' % (
            lease_id, lease.status if lease else status.DELETED))


def expire(now: datetime.datetime) -> list:
    """Reject the leases whose wait for approval is over as of `now`
    (`approval.expires`); the ids of those this call rejected (of two
    engines at once, each lease is rejected by one).
    """
    store = db_api.Context()
    gone = []
    for lease in db_approvals.awaiting(store):
        if expires(lease.created_at, lease.start_at) > now:
            continue
        if lease.series_id not in (None, lease.id):
            continue   # its series' first occurrence decides
        reason = (AT_START if lease.start_at <= now else
                  'not approved within %d s' % hold())
        if db_approvals.reject(store, series_of(lease), 'expired: ' + reason,
                               also=_also(lease.id, EXPIRED, reason)):
            LOG.info('Lease %s expired: %s', lease.id, reason)
            gone.append(lease.id)
    return gone


def at_start(lease, event_id: int) -> Callable:
    """The write (for the start event `event_id` of `lease`, which still
    waits for approval) that rejects it, with the event's outcome.
    """
    def write(ctx) -> None:
        if db_approvals.reject(ctx, series_of(lease), 'expired: ' + AT_START,
                               keep_event=event_id,
                               also=_also(lease.id, EXPIRED, AT_START)):
            LOG.info('Lease %s expired: %s', lease.id, AT_START)
    return write
