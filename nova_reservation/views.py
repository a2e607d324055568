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

"""Leases in Blazar's shapes: the lease API's views and the payloads of
the lease notifications."""

from typing import Optional

from nova_reservation.lease import kinds
from nova_reservation.lease import schedule
from nova_reservation.lease import shares
from nova_reservation import status

DATE_FORMAT = '%Y-%m-%dT%H:%M:%S.%f'   # what Blazar's clients parse
EVENT_NAMES = {'start': 'start_lease', 'end': 'end_lease',
               'before_end': 'before_end_lease',
               'before_start': 'before_start_lease'}   # others as they are


def date(value) -> str:
    return value.strftime(DATE_FORMAT) if value else None


def reservation(res, bindings: list, lease_status: str,
                viewer: Optional[str] = None) -> dict:
    """A reservation with its servers (`bindings`: those bound to it), as
    an admin sees it or, with `viewer`, as that project does: its own
    servers only (as Nova shows it no other project's) and, if it is not
    the owner, its own share only.
    """
    owner = res.project_id
    shared = viewer is not None and viewer != owner
    servers = [b.instance_uuid for b in bindings
               if viewer is None or (b.project_id or owner) == viewer]
    view = {'id': res.id, 'lease_id': res.lease_id,
            'resource_type': res.resource_type,
            'status': status.RESERVATION_OF_LEASE.get(
                lease_status, res.status),
            'created_at': date(res.created_at),
            'updated_at': date(res.updated_at),
            'missing_resources': False, 'resources_changed': False}
    view.update(kinds.of(res.resource_type).fields(res, servers))
    if res.resource_type in kinds.SHAREABLE:
        shared_with = sorted(shares.projects(res.shared_with))
        slots_by_project: dict = {}
        for b in bindings:
            project = b.project_id or owner
            if b.state != status.ENDED and not (shared and
                                                project != viewer):
                slots_by_project[project] = slots_by_project.get(
                    project, 0) + 1
        view.update(shared_with=[viewer] if shared else shared_with,
                    matching=shares.matching(res.matching),
                    slots_by_project=slots_by_project)
    return view


def lease(details, viewer: Optional[str] = None) -> dict:
    """A lease with its reservations and events (`details`: as the store's
    `leases.details` reads them), as an admin sees it (and a notification
    tells it) or, with `viewer`, as that project does: its own servers
    only and, if the lease is another project's that shares reservations
    with it, those reservations only, marked with the project that shares
    them (`shared_by`), without what is the owner's own (its user, trust
    and status reason, which may name its servers).
    """
    lease, reservations, bindings, events = details
    shared = viewer is not None and viewer != lease.project_id
    if shared:
        reservations = [r for r in reservations
                        if viewer in shares.projects(r.shared_with)]
    before_end = schedule.event_time('before_end', lease.start_at,
                                     lease.end_at, lease.before_end_minutes)
    return {
        'id': lease.id, 'name': lease.name, 'project_id': lease.project_id,
        'user_id': None if shared else lease.user_id,
        'start_date': date(lease.start_at),
        'end_date': date(lease.end_at), 'status': lease.status,
        'status_reason': None if shared else lease.status_reason,
        'degraded': lease.degraded,
        'idle_since': date(lease.idle_since),
        'on_end': lease.on_end, 'max_extensions': lease.max_extensions,
        'extensions': lease.extensions or 0,
        'if_busy': lease.if_busy or 'refuse',
        'flexible_start': bool(lease.flexible_start),
        'start_before': date(lease.start_before),
        'retries': lease.retries, 'retry_interval': lease.retry_interval,
        'tries': lease.tries or 0, 'next_try_date': date(lease.next_try_at),
        'series_id': lease.series_id, 'occurrence': lease.occurrence,
        'trust_id': None if shared else lease.trust_id,
        'shared_by': lease.project_id if shared else None,
        'before_end_date': date(before_end),
        'created_at': date(lease.created_at),
        'updated_at': date(lease.updated_at),
        'reservations': [reservation(r, [
            b for b in bindings if b.reservation_id == r.id],
            lease.status, viewer) for r in reservations],
        'events': [{'id': e.uuid, 'lease_id': lease.id,
                    'event_type': EVENT_NAMES.get(e.event_type,
                                                  e.event_type),
                    'time': date(e.due_at), 'status': e.status,
                    'created_at': date(e.created_at),
                    'updated_at': date(e.updated_at)}
                   for e in events],
    }


def occurrences(series: list) -> list:
    """The occurrences of a recurring lease (`series`: their rows, in
    order), as its view lists them.
    """
    return [{'id': x.id, 'occurrence': x.occurrence,
             'start_date': date(x.start_at), 'end_date': date(x.end_at),
             'status': x.status} for x in series]
