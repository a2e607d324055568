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

"""A lease's schedule: which events it has and when each falls due."""

import datetime
from typing import Any, Callable, Optional

from nova_reservation import conf

CONF = conf.CONF

# The events of a lease's interval, in the order they fall due.
TIMED = ('before_start', 'start', 'before_end', 'end')


def event_time(event_type: str, start_at: datetime.datetime,
               end_at: datetime.datetime,
               before_end_minutes: Optional[int]
               ) -> Optional[datetime.datetime]:
    """When an event of a lease over [start_at, end_at) falls due (None:
    it has no fixed time, or the lease has no such event).
    """
    if event_type == 'start':
        return start_at
    if event_type == 'end':
        return end_at
    if event_type == 'before_end' and before_end_minutes:
        return end_at - datetime.timedelta(minutes=before_end_minutes)
    if event_type == 'before_start' and CONF.reservation.before_start_offset:
        return start_at - datetime.timedelta(
            minutes=CONF.reservation.before_start_offset)
    return None


def getter(lease) -> Callable[[str], Any]:
    """A lease's column by name, from its row or its values as a dict."""
    return lease.get if isinstance(lease, dict) else lease.__getattribute__


def due_times(lease) -> dict:
    """{event type: when} of a lease (a row, or its values as a dict)."""
    get = getter(lease)
    return {t: event_time(t, get('start_at'), get('end_at'),
                          get('before_end_minutes')) for t in TIMED}


def lease_events(lease, now: datetime.datetime) -> list:
    """The events of a new lease, as the store adds them (a `before_start`
    already past is left out).
    """
    found = []
    for event_type, due in due_times(lease).items():
        if due is not None and (event_type != 'before_start' or due > now):
            found.append(dict(event_type=event_type, due_at=due))
    return found
