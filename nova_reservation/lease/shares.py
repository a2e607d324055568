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

"""Who may use a reservation, and which ones an ordinary boot uses
unasked (pure).

A capacity or host reservation is its project's, and also of the projects
it is shared with (its ``shared_with``).  Its ``matching`` is
``targeted`` (only boots that name it) or ``open``: while it runs, an
ordinary boot of any of those projects whose flavor fits its slots goes
into it.
"""

import datetime
import json
from typing import Iterable, NamedTuple, Optional


TARGETED = 'targeted'
OPEN = 'open'
MATCHING = (TARGETED, OPEN)
# The hint value that keeps an ordinary boot out of open reservations.
NONE = 'none'
# The fallback hint's one value: a boot that finds its reservation full
# or not started runs as an ordinary boot.
FALLBACK_ANY = 'any'
NO_ONE = frozenset()


def projects(column: Optional[str]) -> frozenset:
    """The projects of a ``shared_with`` column."""
    return frozenset(json.loads(column)) if column else NO_ONE


def column(shared_with: Iterable[str]) -> Optional[str]:
    """The ``shared_with`` column of those projects (None: none)."""
    found = sorted(set(shared_with))
    return json.dumps(found) if found else None


def may_use(owner: str, shared_with: frozenset, project: str) -> bool:
    """Whether `project` may boot into a reservation of `owner`."""
    return project == owner or project in shared_with


def row_may_use(res, project: str) -> bool:
    """Whether `project` may boot into the reservation row `res`."""
    return may_use(res.project_id, projects(res.shared_with), project)


def matching(value: Optional[str]) -> str:
    """A ``matching`` column as the API shows it."""
    return value or TARGETED


def matching_column(value: Optional[str]) -> Optional[str]:
    """The ``matching`` column of a matching (None: targeted)."""
    return OPEN if value == OPEN else None


class Candidate(NamedTuple):
    """An open reservation an ordinary boot might go into."""
    reservation_id: str
    end_at: datetime.datetime
    created_at: datetime.datetime
    # Whether it is the boot's project's own (else shared with it).
    own: bool


def order(candidates: Iterable[Candidate]) -> list:
    """The order in which an ordinary boot tries the open reservations
    that fit it: the one that ends first (its slots are the first to go
    unused), then the project's own before those shared with it, then
    the oldest, then by id.
    """
    return sorted(candidates, key=lambda c: (
        c.end_at, not c.own, c.created_at or datetime.datetime.min,
        c.reservation_id))
