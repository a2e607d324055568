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

"""The bodies the usage enforcement filters judge, in Blazar's shape: a
``context`` (who asks, and where their Keystone is) and a ``lease`` (its
values, its reservations, each with its ``allocations``); dates are
datetimes (UTC), sent in ISO 8601.  Pure: the callers read the rows.
"""

import types
from typing import Iterable, Optional

from nova_reservation.lease import kinds
from nova_reservation.lease import schedule
from nova_reservation.lease import shares
from nova_reservation import views

# The columns of a lease its body gives.
LEASE_COLUMNS = ('id', 'name', 'user_id', 'project_id', 'start_at', 'end_at',
                 'before_end_minutes', 'on_end', 'trust_id')


def context(user_id: str, project_id: str, auth_url: Optional[str],
            region_name: Optional[str]) -> dict:
    return {'user_id': user_id, 'project_id': project_id,
            'auth_url': auth_url, 'region_name': region_name}


def _lease(values: dict, reservations: list) -> dict:
    before_end = schedule.event_time(
        'before_end', values['start_at'], values['end_at'],
        values.get('before_end_minutes'))
    return {'id': values.get('id'), 'name': values.get('name'),
            'user_id': values.get('user_id'),
            'project_id': values.get('project_id'),
            'start_date': values['start_at'],
            'end_date': values['end_at'],
            'before_end_date': before_end,
            'on_end': values.get('on_end'),
            'trust_id': values.get('trust_id'),
            'reservations': reservations}


def requested(req) -> dict:
    """A reservation asked for (a `ReservationRequest`), not yet placed:
    no allocations.
    """
    kind = kinds.of(req.resource_type)
    found = {'id': req.id, 'resource_type': req.resource_type,
             'allocations': []}
    found.update(kind.requested(req))
    if kind.shareable:
        found.update(shared_with=list(req.shared_with),
                     matching=shares.matching(req.matching))
    return found


def new_lease(values: dict, user_id: str, project_id: str,
              requests: Iterable) -> dict:
    """The lease of a create: its values and its requests."""
    return _lease(dict(values, user_id=user_id, project_id=project_id),
                  [requested(r) for r in requests])


def allocations(slots: Iterable) -> list:
    """The hosts a reservation holds (its slots), one entry each, with
    how many of its slots are there.
    """
    found: dict = {}
    for slot in slots:
        entry = found.setdefault(slot.node, {
            'id': slot.node, 'hypervisor_hostname': slot.node,
            'service_name': slot.host, 'slots': 0})
        entry['slots'] += 1
    return sorted(found.values(), key=lambda e: e['id'])


def stored_lease(lease, reservations: Iterable, slots_of) -> dict:
    """A written lease (its row, its reservation rows; `slots_of(id)`:
    a reservation's slots).
    """
    found = []
    for res in reservations:
        view = views.reservation(res, [], lease.status)
        for dropped in ('created_at', 'updated_at', 'missing_resources',
                        'resources_changed', 'servers', 'slots_by_project'):
            view.pop(dropped, None)
        view['allocations'] = allocations(slots_of(res.id))
        found.append(view)
    values = {c: getattr(lease, c) for c in LEASE_COLUMNS}
    return _lease(values, found)


def changed(row, columns: dict):
    """A copy of `row` (a lease or a reservation) with `columns` as a
    change writes them; the row itself is left as it is.
    """
    copy = types.SimpleNamespace(**{
        c.name: getattr(row, c.name) for c in row.__table__.columns})
    for column, value in columns.items():
        if hasattr(copy, column):
            setattr(copy, column, value)
    return copy


def changed_lease(lease, values: dict, reservations: Iterable,
                  growth: Iterable, slots_of) -> dict:
    """The lease as a change would leave it: its row with the new
    `values`, each grown or reshaped reservation with its new columns
    (`growth`: [(request, columns)]); the allocations are those it holds
    now (what a change adds is placed after the check).
    """
    columns = {req.id: cols for req, cols in growth}
    return stored_lease(changed(lease, values), [
        changed(r, columns.get(r.id, {})) for r in reservations], slots_of)
