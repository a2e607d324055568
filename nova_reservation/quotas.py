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

"""Reservation quotas: what a project holds on the ledger, and whether a
write takes it past one of its limits (pure: pieces of time in, figures
out).

Four limits: the most vCPUs, MB of RAM and whole hosts the project holds
reserved at any instant, and the most vCPU-hours it holds reserved in any
calendar month (UTC).  A whole host counts with all of its vCPUs and RAM.
A write is refused only where it makes a figure both above its limit and
larger than it was, so that a shrink, a delete or a rename always goes
through, even for a project above a limit an admin has just lowered.
"""

import dataclasses
import datetime
from typing import Iterable, NamedTuple, Optional

from nova_reservation import ledger

# The limits, each with what it counts (the words of a refusal).
AT_ANY_INSTANT = {'vcpus': 'vCPUs', 'memory_mb': 'MB of RAM',
                  'hosts': 'hosts'}
PER_MONTH = 'vcpu_hours_per_month'
LIMITS = tuple(AT_ANY_INSTANT) + (PER_MONTH,)
# No limit.
UNLIMITED = -1
# vCPU-hours are compared with this much slack (float sums).
EPSILON = 1e-6


class Piece(NamedTuple):
    """Capacity a project holds over [start, end), in seconds since the
    epoch: `hosts` is 1 for a whole host, else 0.
    """
    start: float
    end: float
    vcpus: int
    memory_mb: int
    hosts: int


@dataclasses.dataclass(frozen=True)
class Usage:
    """A project's figures: {limit: (peak, first instant of it or None)}
    for the limits at any instant, and {"YYYY-MM": vCPU-hours}.
    """
    peaks: dict
    months: dict

    def month(self, key: str) -> float:
        return self.months.get(key, 0.0)


class Quota(NamedTuple):
    """The limits of a project's reservations: {limit: most, or
    UNLIMITED}.
    """
    project_id: str
    limits: dict

    def enforced(self) -> bool:
        return any(self.limits.get(n, UNLIMITED) > UNLIMITED
                   for n in LIMITS)


@dataclasses.dataclass(frozen=True)
class Excess:
    """A limit a write would pass: the project's figure before and after
    it, and when (an instant, or a month "YYYY-MM").
    """
    project_id: str
    limit: str
    most: int
    had: float
    would_have: float
    when: str

    def message(self) -> str:
        what = AT_ANY_INSTANT.get(self.limit)
        if what is None:
            counted = 'vCPU-hours reserved in month %s' % self.when
        else:
            counted = '%s reserved at %s UTC' % (what, self.when)
        return ('Quota exceeded: project %s may reserve at most %d (%s); '
                'it has %s and this asks for %s more, %s in all (%s)' % (
                    self.project_id, self.most, self.limit,
                    _figure(self.had), _figure(self.would_have - self.had),
                    _figure(self.would_have), counted))

    def details(self) -> dict:
        return {'quota': self.limit, 'limit': self.most,
                'in_use': _figure(self.had),
                'requested': _figure(self.would_have - self.had),
                'at': self.when}


def _figure(value: float):
    """A figure as shown: whole where it is, else to the hundredth."""
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def peaks(pieces: Iterable[Piece]) -> dict:
    """{limit: (most held at one instant, the first such instant or None)}
    for the limits at any instant; an end frees at the instant it is, so
    back-to-back pieces do not add up.
    """
    changes = []
    for p in pieces:
        if p.end <= p.start:
            continue
        changes.append((p.start, 1, p))
        changes.append((p.end, 0, p))
    # Ends before starts at one instant.
    changes.sort(key=lambda c: (c[0], c[1]))
    held = dict.fromkeys(AT_ANY_INSTANT, 0)
    best = {name: (0, None) for name in AT_ANY_INSTANT}
    for when, starts, p in changes:
        sign = 1 if starts else -1
        for name in AT_ANY_INSTANT:
            held[name] += sign * getattr(p, name)
            if starts and held[name] > best[name][0]:
                best[name] = (held[name], when)
    return best


def month_of(seconds: float) -> str:
    return ledger.from_epoch(seconds).strftime('%Y-%m')


def _next_month(day: datetime.datetime) -> datetime.datetime:
    first = day.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (first + datetime.timedelta(days=32)).replace(day=1)


def monthly(pieces: Iterable[Piece]) -> dict:
    """{"YYYY-MM": vCPU-hours} of `pieces`, each cut at the months'
    boundaries (UTC).
    """
    found: dict = {}
    for p in pieces:
        start = p.start
        while start < p.end and p.vcpus:
            cut = min(p.end, ledger.to_epoch(_next_month(
                ledger.from_epoch(start))))
            key = month_of(start)
            found[key] = found.get(key, 0.0) + p.vcpus * (cut - start) / 3600
            start = cut
    return found


def usage(held: Iterable[Piece], spent: Iterable[Piece] = ()) -> Usage:
    """A project's figures: `held`, what it holds on the ledger from now
    on, counts at every instant and in every month; `spent`, what its
    leases held before now, in the months only.
    """
    held = list(held)
    return Usage(peaks(held), monthly(held + list(spent)))


def exceeded(quota: Quota, before: Usage, after: Usage) -> Optional[Excess]:
    """The first limit of `quota` that a write takes the project past
    (its figures `before` and `after` it), or None.
    """
    for name in AT_ANY_INSTANT:
        most = quota.limits.get(name, UNLIMITED)
        had, _ = before.peaks[name]
        would, when = after.peaks[name]
        if most > UNLIMITED and would > most and would > had:
            return Excess(quota.project_id, name, most, had, would,
                          ledger.when_text(when))
    most = quota.limits.get(PER_MONTH, UNLIMITED)
    if most > UNLIMITED:
        for key in sorted(after.months):
            had, would = before.month(key), after.month(key)
            if would > most + EPSILON and would > had + EPSILON:
                return Excess(quota.project_id, PER_MONTH, most, had, would,
                              key)
    return None


def limits_of(defaults: dict, tagged: dict, overrides: dict) -> tuple:
    """({limit: most}, {limit: where it comes from}) of a project: its
    own limit set through the API, else its Keystone tag's, else the
    cloud's default.
    """
    found, source = {}, {}
    for name in LIMITS:
        for where, given in (('project', overrides), ('tag', tagged),
                             ('default', defaults)):
            if given.get(name) is not None:
                found[name], source[name] = int(given[name]), where
                break
        else:
            found[name], source[name] = UNLIMITED, 'default'
    return found, source


def tagged_limits(tags: Iterable[str], prefix: str) -> dict:
    """{limit: most} that a project's tags ``<prefix>:<limit>=<N>`` give
    (N a whole number, or -1 for none); others are ignored.
    """
    found = {}
    if not prefix:
        return found
    for tag in tags:
        if not isinstance(tag, str) or not tag.startswith(prefix + ':'):
            continue
        name, sep, value = tag[len(prefix) + 1:].partition('=')
        if sep and name in LIMITS and (value.isdigit() or value == '-1') \
                and len(value) <= 12:
            found[name] = int(value)
    return found
