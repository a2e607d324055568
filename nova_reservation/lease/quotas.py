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

"""A project's reservation quota: its limits, from the API's overrides,
its Keystone tags (``[reservation] quota_tag``) and the cloud's defaults
(``[reservation] quota_*``); what it holds on the ledger; and whether a
write takes it past one of its limits (the rule pure: pieces of time in,
figures out).

Four limits: the most vCPUs, MB of RAM and whole hosts the project holds
reserved at any instant, and the most vCPU-hours it holds reserved in any
calendar month (UTC); and two for each resource class beyond vCPU, RAM and
disk that an operator limits (a GPU): the most units held at any instant
(named as the class, ``CUSTOM_GPU_A100``) and the most unit-hours in a
month (``CUSTOM_GPU_A100_hours_per_month``).  A whole host counts with all
of its vCPUs, RAM and devices.
A write is refused only where it makes a figure both above its limit and
larger than it was, so that a shrink, a delete or a rename always goes
through, even for a project above a limit an admin has just lowered.

A checked write (`guarded`) takes the ledger's row lock before it reads
the project's use, so that two writes of one project take turns: of two
leases racing for the last of a quota, the second reads what the first
wrote, and is refused.
"""

import dataclasses
import datetime
import re
from typing import Callable, Iterable, NamedTuple, Optional

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.clients import project_tags
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import quotas as db_quotas
from nova_reservation.exception import OverQuota
from nova_reservation.lease import kinds

CONF = conf.CONF
# The limits, each with what it counts (the words of a refusal).
AT_ANY_INSTANT = {'vcpus': 'vCPUs', 'memory_mb': 'MB of RAM',
                  'hosts': 'hosts'}
PER_MONTH = 'vcpu_hours_per_month'
LIMITS = tuple(AT_ANY_INSTANT) + (PER_MONTH,)
# No limit.
UNLIMITED = -1
# vCPU-hours are compared with this much slack (float sums).
EPSILON = 1e-6
# A class's limit per month: its name, then this.
HOURS = '_hours_per_month'
# A resource class's name, as Placement has them.
CLASS = re.compile(r'[A-Z][A-Z0-9_]*')
LONGEST_NAME = 255


def class_limit(name: str) -> Optional[tuple]:
    """(resource class, whether per month) of the limit `name` of a class
    beyond vCPU, RAM and disk, or None if it is no such limit.
    """
    per_month = name.endswith(HOURS)
    rc = name[:-len(HOURS)] if per_month else name
    if (len(name) <= LONGEST_NAME and CLASS.fullmatch(rc) and
            rc not in capacity.RESOURCE_CLASSES):
        return rc, per_month
    return None


def is_limit(name) -> bool:
    """Whether `name` names a limit (a project may have)."""
    return isinstance(name, str) and (name in LIMITS or
                                      class_limit(name) is not None)


class Piece(NamedTuple):
    """Capacity a project holds over [start, end), in seconds since the
    epoch: `hosts` is 1 for a whole host, else 0.
    """
    start: float
    end: float
    vcpus: int
    memory_mb: int
    hosts: int
    # What it holds beyond vCPU, RAM and disk (`capacity.extras`).
    extras: tuple = capacity.NO_EXTRAS

    def amounts(self) -> dict:
        """{limit at any instant: what it holds of it}."""
        found = {'vcpus': self.vcpus, 'memory_mb': self.memory_mb,
                 'hosts': self.hosts}
        for (_, rc), n in self.extras:
            found[rc] = found.get(rc, 0) + n
        return found


@dataclasses.dataclass(frozen=True)
class Usage:
    """A project's figures: {limit: (peak, first instant of it or None)}
    for the limits at any instant (each class it holds too), {"YYYY-MM":
    vCPU-hours}, and {class: {"YYYY-MM": unit-hours}}.
    """
    peaks: dict
    months: dict
    class_months: dict = dataclasses.field(default_factory=dict)

    def month(self, key: str) -> float:
        return self.months.get(key, 0.0)


class Quota(NamedTuple):
    """The limits of a project's reservations: {limit: most, or
    UNLIMITED}.
    """
    project_id: str
    limits: dict

    def enforced(self) -> bool:
        return any(most > UNLIMITED for most in self.limits.values())


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
        rc, per_month = class_limit(self.limit) or (
            'vCPU', self.limit == PER_MONTH)
        if per_month:
            counted = '%s-hours reserved in month %s' % (rc, self.when)
        else:
            counted = '%s reserved at %s UTC' % (
                AT_ANY_INSTANT.get(self.limit, rc), self.when)
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
        for name, n in p.amounts().items():
            held[name] = held.get(name, 0) + sign * n
            if starts and held[name] > best.get(name, (0,))[0]:
                best[name] = (held[name], when)
    return best


def month_of(seconds: float) -> str:
    return epoch.from_epoch(seconds).strftime('%Y-%m')


def _next_month(day: datetime.datetime) -> datetime.datetime:
    first = day.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (first + datetime.timedelta(days=32)).replace(day=1)


def monthly(pieces: Iterable[Piece],
            amount: Callable[[Piece], float] = lambda p: p.vcpus) -> dict:
    """{"YYYY-MM": hours of `amount` (vCPUs)} of `pieces`, each cut at the
    months' boundaries (UTC).
    """
    found: dict = {}
    for p in pieces:
        start, held = p.start, amount(p)
        while start < p.end and held:
            cut = min(p.end, epoch.to_epoch(_next_month(
                epoch.from_epoch(start))))
            key = month_of(start)
            found[key] = found.get(key, 0.0) + held * (cut - start) / 3600
            start = cut
    return found


def usage(held: Iterable[Piece], spent: Iterable[Piece] = ()) -> Usage:
    """A project's figures: `held`, what it holds on the ledger from now
    on, counts at every instant and in every month; `spent`, what its
    leases held before now, in the months only.
    """
    held = list(held)
    every = held + list(spent)
    classes = {rc for p in every for (_, rc), _ in p.extras}
    return Usage(peaks(held), monthly(every), {
        rc: monthly(every, lambda p, rc=rc: p.amounts().get(rc, 0))
        for rc in classes})


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
                          epoch.when_text(when))
    for name, most in sorted(quota.limits.items()):
        found = class_limit(name) or ((None, True) if name == PER_MONTH
                                      else None)
        if most <= UNLIMITED or found is None:
            continue
        rc, per_month = found
        if not per_month:
            had = before.peaks.get(rc, (0, None))[0]
            would, when = after.peaks.get(rc, (0, None))
            if would > most and would > had:
                return Excess(quota.project_id, name, most, had, would,
                              epoch.when_text(when))
            continue
        was, will = ((before.months, after.months) if rc is None else
                     (before.class_months.get(rc, {}),
                      after.class_months.get(rc, {})))
        for key in sorted(will):
            had, would = was.get(key, 0.0), will[key]
            if would > most + EPSILON and would > had + EPSILON:
                return Excess(quota.project_id, name, most, had, would, key)
    return None


def limits_of(defaults: dict, tagged: dict, overrides: dict) -> tuple:
    """({limit: most}, {limit: where it comes from}) of a project: its
    own limit set through the API, else its Keystone tag's, else the
    cloud's default.
    """
    found, source = {}, {}
    named = {n for given in (defaults, tagged, overrides) for n in given
             if class_limit(n) is not None}
    for name in LIMITS + tuple(sorted(named)):
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
        if sep and is_limit(name) and (value.isdigit() or value == '-1') \
                and len(value) <= 12:
            found[name] = int(value)
    return found


@db_api.reader
def usage_of(ctx, project_id: str,
             now: Optional[datetime.datetime] = None) -> Usage:
    """The project's figures (`usage`), from the slots of its leases
    (`db.quotas.pieces`).
    """
    held, spent = db_quotas.pieces(ctx, project_id, kinds.COUNTED, now)
    return usage([Piece(*p) for p in held], [Piece(*p) for p in spent])


@db_api.writer
def guarded(ctx, quota: Optional[Quota], write: Callable):
    """`write()` (a ledger write of `quota`'s project, in this
    transaction), or OverQuota with nothing written.
    """
    if quota is None or not quota.enforced():
        return write()
    db_ledger.bump(ctx)
    now = db_api.utcnow()
    before = usage_of(ctx, quota.project_id, now)
    result = write()
    ctx.session.flush()
    excess = exceeded(quota, before, usage_of(ctx, quota.project_id, now))
    if excess is not None:
        raise OverQuota(excess)
    return result


# The kind of refusal of a lease that would pass a quota.
OVER_QUOTA = 'QuotaExceeded'


def defaults() -> dict:
    """{limit: most} of the cloud (``[reservation] quota_<limit>``, and
    ``quota_classes``: those of them that name a class's limit).
    """
    found = {name: most for name, most in
             CONF.reservation.quota_classes.items()
             if class_limit(name)}
    found.update({name: getattr(CONF.reservation, 'quota_' + name)
                  for name in LIMITS})
    return found


def limits(ctx, project_id: str) -> tuple:
    """({limit: most}, {limit: where it comes from}) of `project_id`
    (`quotas.limits_of`); the tags are read with `ctx`'s token, or the
    engine's credentials where `ctx` is None.
    """
    tagged = {}
    if CONF.reservation.quota_tag:
        tagged = tagged_limits(project_tags.tags(ctx, project_id),
                               CONF.reservation.quota_tag)
    return limits_of(defaults(), tagged, db_quotas.overrides(
        db_api.Context(), project_id))


def of(ctx, project_id: str) -> Optional[Quota]:
    """The quota a ledger write of `project_id` is checked against, or
    None where none limits it.
    """
    found, _ = limits(ctx, project_id)
    quota = Quota(project_id, found)
    return quota if quota.enforced() else None


def shown(ctx, project_id: str) -> dict:
    """Each limit of `project_id` with its use now, as the API shows it."""
    found, source = limits(ctx, project_id)
    now = db_api.utcnow()
    use = usage_of(db_api.Context(), project_id, now)
    view = {'project_id': project_id}
    for name in AT_ANY_INSTANT:
        peak, when = use.peaks[name]
        view[name] = {'limit': found[name], 'source': source[name],
                      'in_use': peak,
                      'peak_at': when and epoch.when_text(when)}
    month = now.strftime('%Y-%m')
    view[PER_MONTH] = {
        'limit': found[PER_MONTH],
        'source': source[PER_MONTH],
        'in_use': round(use.month(month), 2), 'month': month,
        'months': {k: round(v, 2) for k, v in sorted(use.months.items())}}
    # Each class limited, or held.
    for name in sorted(set(found) - set(LIMITS) | {
            n for rc in use.class_months for n in (rc, rc + HOURS)
            if class_limit(n)}):
        rc, per_month = class_limit(name)
        view[name] = {'limit': found.get(name, UNLIMITED),
                      'source': source.get(name, 'default')}
        if per_month:
            months = use.class_months.get(rc, {})
            view[name].update(
                in_use=round(months.get(month, 0.0), 2), month=month,
                months={k: round(v, 2) for k, v in sorted(months.items())})
        else:
            peak, when = use.peaks.get(rc, (0, None))
            view[name].update(in_use=peak,
                              peak_at=when and epoch.when_text(when))
    return view
