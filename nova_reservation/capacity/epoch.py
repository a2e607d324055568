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

"""Instants as the capacity math counts them: seconds since the epoch, UTC.

The store keeps naive UTC datetimes; timelines, plans and the ledger copy
count in these seconds.
"""

import calendar
import datetime


def to_epoch(value: datetime.datetime) -> float:
    """Seconds since the epoch of a naive UTC datetime."""
    return calendar.timegm(value.timetuple()) + value.microsecond / 1e6


def from_epoch(value: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(
        value, datetime.timezone.utc).replace(tzinfo=None)


def when_text(value: float) -> str:
    """An instant in seconds since the epoch as messages show it (UTC, to
    the second).
    """
    return str(from_epoch(value).replace(microsecond=0))
