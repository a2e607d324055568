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

"""The ledger calendar's drawing, from the answer of GET /v1/ledger: pure
functions and values, no Django and no I/O.

Horizontal positions and widths are percentages of the period
[after, before); vertical ones percentages of a node's row.  Times are
naive UTC datetimes, as the lease API writes them.
"""

import bisect
import dataclasses
import datetime
from typing import Optional

API_DATE = '%Y-%m-%dT%H:%M:%S.%f'
HOUR = 3600
DAY = 24 * HOUR
SERVERS = 'server'
# Colour and label of each allocation type, in the legend's order.
TYPES = (
    (SERVERS, 'Servers', '#9e9e9e'),
    ('flavor:instance', 'Flavor reservation', '#1f77b4'),
    ('virtual:instance', 'Instance reservation', '#2ca02c'),
    ('physical:host', 'Host reservation', '#d62728'),
    (None, 'Other', '#ff7f0e'),
)
COLOURS = {kind: colour for kind, _, colour in TYPES}
LABELS = {kind: label for kind, label, _ in TYPES}


def _css(**percentages: float) -> str:
    """An inline style of positions in percent (never localized: a
    template filter would write "12,5" in some languages).
    """
    return ';'.join('%s:%.3f%%' % (k, v) for k, v in percentages.items())


def parse_date(text: Optional[str]) -> Optional[datetime.datetime]:
    """A date of the lease API (naive UTC), or None for None."""
    if text is None:
        return None
    try:
        return datetime.datetime.strptime(text, API_DATE)
    except ValueError:
        # Also "YYYY-MM-DDTHH:MM:SS", with or without a zone.
        parsed = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(datetime.timezone.utc).replace(
                tzinfo=None)
        return parsed


def bucket_seconds(span: float) -> int:
    """A bucket size that cuts a period of `span` seconds into at most
    about thirty cells: the free table stays readable up to 31 days.
    """
    for size in (HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR):
        if span <= 30 * size:
            return size
    return DAY


@dataclasses.dataclass
class Bar:
    """One allocation drawn in its node's row."""
    kind: Optional[str]
    colour: str
    left: float
    width: float
    bottom: float
    height: float
    start: datetime.datetime
    end: Optional[datetime.datetime]    # None: no end (ordinary servers)
    vcpus: int
    memory_mb: int
    disk_gb: int
    lease_id: Optional[str]
    lease_name: Optional[str]
    reservation_id: Optional[str]
    server_id: Optional[str]
    held: bool

    @property
    def style(self) -> str:
        return _css(left=self.left, width=self.width, bottom=self.bottom,
                    height=self.height)

    @property
    def title(self) -> str:
        """The tooltip: what, whose lease, when, how much."""
        what = LABELS.get(self.kind, LABELS[None])
        if self.lease_name or self.lease_id:
            what += ' - lease %s' % (self.lease_name or self.lease_id)
        if self.held:
            what += ' (held)'
        elif self.server_id:
            what += ' - server %s' % self.server_id
        until = self.end.strftime('%Y-%m-%d %H:%M') if self.end else '...'
        return '%s\n%s - %s UTC\n%d vCPU, %d MB RAM, %d GB disk' % (
            what, self.start.strftime('%Y-%m-%d %H:%M'), until, self.vcpus,
            self.memory_mb, self.disk_gb)


@dataclasses.dataclass
class NodeRow:
    name: str
    reservable: Optional[bool]
    capacity: Optional[dict]     # None: not shown to a project
    bars: list


@dataclasses.dataclass
class Cell:
    """A bucket of the free table: `count` servers of the flavor fit for
    the whole of [start, end).
    """
    start: datetime.datetime
    end: datetime.datetime
    count: int
    left: float
    width: float
    link: Optional[str] = None      # where to start a lease; set by a view


@dataclasses.dataclass
class FlavorRow:
    flavor_id: str
    flavor_name: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    cells: list


@dataclasses.dataclass
class Tick:
    """A day's boundary on the time axis."""
    when: datetime.datetime
    left: float

    @property
    def style(self) -> str:
        return _css(left=self.left)


@dataclasses.dataclass
class Calendar:
    after: datetime.datetime
    before: datetime.datetime
    bucket: int
    nodes: list
    free: list
    buckets: list          # (start, end) of the free table's columns
    ticks: list
    legend: list           # (kind, label, colour) of the types drawn


class Period:
    """[after, before), as percentages."""

    def __init__(self, after: datetime.datetime,
                 before: datetime.datetime) -> None:
        if before <= after:
            raise ValueError('the period ends before it starts')
        self.after, self.before = after, before
        self.span = (before - after).total_seconds()

    def clip(self, start: datetime.datetime,
             end: Optional[datetime.datetime]) -> Optional[tuple]:
        """(start, end) within the period, or None if outside it; no end
        means to the end of the period.
        """
        start = max(start, self.after)
        end = self.before if end is None else min(end, self.before)
        return (start, end) if start < end else None

    def percent(self, when: datetime.datetime) -> float:
        return 100.0 * (when - self.after).total_seconds() / self.span


def _stack(spans: list) -> list:
    """Vertical offsets (in vCPUs) of [(start, end, vcpus)]: each sits on
    the lowest place free of those that overlap it in time (first fit).
    """
    placed = []         # (start, end, bottom, top)
    offsets = []
    for start, end, vcpus in spans:
        busy = sorted((b, t) for s, e, b, t in placed
                      if s < end and start < e)
        bottom = 0
        for b, t in busy:
            if bottom + vcpus <= b:
                break
            bottom = max(bottom, t)
        placed.append((start, end, bottom, bottom + vcpus))
        offsets.append(bottom)
    return offsets


def _node_row(node: dict, period: Period) -> NodeRow:
    shown = []
    for a in node.get('allocations') or []:
        clipped = period.clip(parse_date(a['start']), parse_date(a.get('end')))
        if clipped:
            shown.append((clipped, a))
    # Ordinary servers at the bottom, then by start: a stable picture.
    shown.sort(key=lambda x: (x[1].get('type') != SERVERS, x[0][0]))
    # An allocation with no vCPU (a bare-metal node's, a GPU's) is drawn
    # as one: a node with no vCPU is drawn by its allocations alone.
    spans = [(s, e, a.get('vcpus') or 1) for (s, e), a in shown]
    offsets = _stack(spans)
    tops = [b + v for b, (_, _, v) in zip(offsets, spans)]
    capacity = node.get('capacity') or {}
    # A project does not see the capacity: its own peak fills the row.
    # First fit may stack above the capacity where bars fragment it: the
    # row then grows so that nothing is drawn outside it.
    scale = max([capacity.get('vcpus') or 0] + tops) or 1
    bars = []
    for ((start, end), a), bottom in zip(shown, offsets):
        left = period.percent(start)
        kind = a.get('type')
        bars.append(Bar(
            kind=kind, colour=COLOURS.get(kind, COLOURS[None]),
            left=left, width=period.percent(end) - left,
            bottom=100.0 * bottom / scale,
            height=100.0 * (a.get('vcpus') or 1) / scale,
            start=parse_date(a['start']), end=parse_date(a.get('end')),
            vcpus=a.get('vcpus') or 0, memory_mb=a.get('memory_mb') or 0,
            disk_gb=a.get('disk_gb') or 0, lease_id=a.get('lease_id'),
            lease_name=a.get('lease_name'),
            reservation_id=a.get('reservation_id'),
            server_id=a.get('server_id'), held=bool(a.get('held'))))
    return NodeRow(name=node['name'], reservable=node.get('reservable'),
                   capacity=node.get('capacity'), bars=bars)


def buckets(after: datetime.datetime, before: datetime.datetime,
            size: int) -> list:
    """[(start, end)] covering [after, before), cut at the multiples of
    `size` seconds since midnight UTC: the first and last may be shorter.
    """
    midnight = after.replace(hour=0, minute=0, second=0, microsecond=0)
    step = datetime.timedelta(seconds=size)
    edge = midnight + step * (
        int((after - midnight).total_seconds() // size) + 1)
    found, start = [], after
    while start < before:
        end = min(edge, before)
        found.append((start, end))
        start, edge = end, edge + step
    return found


def min_count(steps: list, start: datetime.datetime,
              end: datetime.datetime) -> int:
    """The fewest servers that fit at any time of [start, end), from
    [(start, count)] sorted by start; before the first step nothing is
    known, so nothing fits.
    """
    starts = [s for s, _ in steps]
    i = bisect.bisect_right(starts, start) - 1
    counts = [steps[i][1] if i >= 0 else 0]
    j = i + 1
    while j < len(steps) and steps[j][0] < end:
        counts.append(steps[j][1])
        j += 1
    return max(0, min(counts))


def _flavor_row(flavor: dict, columns: list, period: Period) -> FlavorRow:
    steps = sorted((parse_date(s['start']), int(s['count']))
                   for s in flavor.get('steps') or [])
    cells = []
    for start, end in columns:
        left = period.percent(start)
        cells.append(Cell(start=start, end=end,
                          count=min_count(steps, start, end), left=left,
                          width=period.percent(end) - left))
    return FlavorRow(flavor_id=str(flavor['flavor_id']),
                     flavor_name=flavor.get('flavor_name') or str(
                         flavor['flavor_id']),
                     vcpus=flavor.get('vcpus') or 0,
                     memory_mb=flavor.get('memory_mb') or 0,
                     disk_gb=flavor.get('disk_gb') or 0, cells=cells)


def ticks(period: Period) -> list:
    """Every midnight UTC within the period."""
    day = period.after.replace(hour=0, minute=0, second=0, microsecond=0)
    found = []
    while True:
        day += datetime.timedelta(days=1)
        if day >= period.before:
            return found
        found.append(Tick(when=day, left=period.percent(day)))


def own(ledger: dict, project_id: str) -> dict:
    """The ledger with only `project_id`'s allocations, on the nodes that
    hold some: what a project is shown (an admin's answer holds every
    project's).
    """
    nodes = []
    for node in ledger.get('nodes') or []:
        mine = [a for a in node.get('allocations') or []
                if a.get('project_id') == project_id]
        if mine:
            nodes.append(dict(node, allocations=mine))
    return dict(ledger, nodes=nodes)


def calendar(ledger: dict, bucket: Optional[int] = None) -> Calendar:
    """The calendar drawn from the `ledger` object of GET /v1/ledger's
    answer, its free table cut in buckets of `bucket` seconds (by default
    as `bucket_seconds` chooses for the period).
    """
    period = Period(parse_date(ledger['after']), parse_date(ledger['before']))
    size = bucket or bucket_seconds(period.span)
    columns = buckets(period.after, period.before, size)
    nodes = [_node_row(n, period) for n in ledger.get('nodes') or []]
    drawn = {bar.kind for node in nodes for bar in node.bars}
    known = {kind for kind, _, _ in TYPES}
    legend = [(kind, label, colour) for kind, label, colour in TYPES
              if kind in drawn or (kind is None and drawn - known)]
    return Calendar(
        after=period.after, before=period.before, bucket=size, nodes=nodes,
        free=[_flavor_row(f, columns, period)
              for f in ledger.get('free') or []],
        buckets=columns, ticks=ticks(period), legend=legend)
