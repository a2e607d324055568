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

"""Validation of lease API bodies (pure: Nova look-ups are passed in).

The shapes are the schemas of `nova_reservation.schemas.leases`; this
module adds what depends on the values (dates against the clock, sharing)
and asks each reservation's kind for its own fields (ranges, flavors,
addresses: `lease.kinds`).  Each problem is an `InvalidParam` naming the
field, e.g. ``reservations[0].min: must be a whole number of at least 1``.
"""

import datetime
from typing import Callable, Optional

from nova_reservation.exception import InvalidParam
from nova_reservation.lease import kinds
from nova_reservation.lease.kinds import checks
from nova_reservation.lease import maintenance
from nova_reservation.lease import request as plan_request
from nova_reservation.lease import shares
from nova_reservation.schemas import availability as search_schemas
from nova_reservation.schemas import leases as schemas
from nova_reservation.schemas import ledger as ledger_schemas
from nova_reservation import validation


def shared_with(field: str, value, owner: Optional[str]) -> tuple:
    """The projects a reservation is shared with (its schema checked):
    never its own project `owner`.
    """
    found = tuple(sorted(set(value or ())))
    if owner is not None and owner in found:
        raise InvalidParam(field, 'names the lease\'s own project %s; list '
                           'only the other projects that may boot into '
                           'it' % owner)
    return found


def shares_named(reservations: list,
                 already: Callable = lambda value: shares.NO_ONE) -> list:
    """(field, project id) of each project that the `reservations` of a
    create's or a change's body are shared with, but for those
    `already(reservation)` gives (the projects it is shared with now).
    """
    return [('reservations[%d].shared_with[%d]' % (i, j), project)
            for i, value in enumerate(reservations)
            for j, project in enumerate(value.get('shared_with') or ())
            if project not in already(value)]


def sharing(prefix: str, kind: str, value: dict,
            owner: Optional[str]) -> dict:
    """The ``shared_with`` and ``matching`` of a reservation of `kind`
    that `value` gives, as ReservationRequest fields.
    """
    found = {}
    if 'shared_with' in value:
        found['shared_with'] = shared_with(prefix + 'shared_with',
                                           value['shared_with'], owner)
    if 'matching' in value:
        if value['matching'] == shares.OPEN and \
                kind not in kinds.WITH_FLAVOR:
            raise InvalidParam(prefix + 'matching', 'open is for '
                               'flavor:instance and virtual:instance '
                               'reservations (an ordinary boot takes one '
                               'of their slots); boot into a host '
                               'reservation with its id')
        found['matching'] = value['matching']
    return found


def reservation(index: Optional[int], value: dict, flavor_need: Callable,
                registered: Callable = lambda network_id: (),
                owner: Optional[str] = None
                ) -> plan_request.ReservationRequest:
    """One reservation of a lease body (the `index`th; None: the query of
    an availability search), checked against its schema; `flavor_need`,
    `registered`: as the kind's `request_fields` takes them; `owner`: the
    lease's project.
    """
    prefix = '' if index is None else 'reservations[%d].' % index
    kind = value['resource_type']
    return plan_request.ReservationRequest(
        **kinds.of(kind).request_fields(prefix, value, flavor_need,
                                        registered),
        **sharing(prefix, kind, value, owner))


def before_end_minutes(value, start: datetime.datetime,
                       end: datetime.datetime) -> Optional[int]:
    """Blazar's before_end_date, as minutes before the end."""
    if value in (None, ''):
        return None
    when = validation.parse_time('before_end_date', value)
    if not start <= when < end:
        raise InvalidParam('before_end_date', 'must be between the start and '
                           'the end of the lease')
    return max(1, int((end - when).total_seconds() // 60))


def lease(body, now: datetime.datetime, max_duration: int, max_advance: int,
          flavor_need: Callable,
          registered: Callable = lambda network_id: (),
          owner: Optional[str] = None) -> tuple:
    """(values of the lease row, reservation requests, [(start, end)] of
    each occurrence) of a POST body (`owner`: the project it is for).

    The dates are checked first, as Blazar checks them.
    """
    validation.check(schemas.OBJECT, body, whole='lease')
    for field in ('start_date', 'end_date'):
        if field not in body:
            # Blazar's words, which its clients and tests look for.
            raise InvalidParam(field, 'Missing parameter %s' % field)
    start, end = validation.interval('start_date', body['start_date'],
                                     'end_date', body['end_date'], now,
                                     max_duration, max_advance)
    validation.check(schemas.CREATE, body, whole='lease')
    # The occurrences first: a series too long is refused before its
    # reservations are read.
    intervals = validation.occurrences(
        '', body, start, end, now, max_advance,
        reservations=len(body.get('reservations', [])))
    requests = [reservation(i, r, flavor_need, registered, owner)
                for i, r in enumerate(body.get('reservations', []))]
    maintenance.check_alone(body, requests)
    values = dict(name=validation.lease_name(body['name']), start_at=start,
                  end_at=end, before_end_minutes=before_end_minutes(
                      body.get('before_end_date'), start, end),
                  on_end=body.get('on_end', 'delete'),
                  max_extensions=validation.max_extensions('', body))
    start_now = body['start_date'] == 'now'
    wait = validation.waiting('', body, start, start_now, now, max_advance)
    if wait is not None:
        values.update(wait.columns(start_now))
    return values, requests, intervals


def update(body, lease_row, now: datetime.datetime, max_duration: int,
           max_advance: int, flavor_need: Callable) -> tuple:
    """(changed values, growth requests) of a PUT body."""
    validation.check(schemas.UPDATE, body, whole='lease')
    values = {}
    if 'name' in body:
        values['name'] = validation.lease_name(body['name'])
    started = lease_row.start_at <= now
    start_value = body.get('start_date')
    if start_value is not None and started:
        if validation.parse_time('start_date', start_value) != \
                lease_row.start_at:
            raise InvalidParam('start_date', 'the lease has started; its '
                               'start can not move')
        start_value = None
    if start_value is not None or 'end_date' in body:
        start = (lease_row.start_at if start_value is None
                 else start_value)
        start_text = start if isinstance(start, str) else \
            start.isoformat()
        if start_value is None:
            # The start stays; only the end is checked against now.
            end = validation.parse_time('end_date', body.get(
                'end_date', lease_row.end_at.isoformat()))
            if end <= max(now, lease_row.start_at):
                raise InvalidParam('end_date', 'must be after the start and '
                                   'after now')
            if (end - lease_row.start_at).total_seconds() > max_duration:
                raise InvalidParam('end_date', 'the lease would be longer '
                                   'than %.1f hours' % (max_duration / 3600))
            start = lease_row.start_at
        else:
            start, end = validation.interval(
                'start_date', start_text, 'end_date',
                body.get('end_date', lease_row.end_at.isoformat()), now,
                max_duration, max_advance)
        values['start_at'], values['end_at'] = start, end
    if 'before_end_date' in body:
        values['before_end_minutes'] = before_end_minutes(
            body['before_end_date'], values.get('start_at',
                                                lease_row.start_at),
            values.get('end_at', lease_row.end_at))
    return values, body.get('reservations', [])


def split(body) -> tuple:
    """(reservation id, amount, project id or None, name or None) of a
    split's body.
    """
    validation.check(schemas.SPLIT, body, whole='body')
    name = body.get('name')
    return (body['reservation_id'], checks.whole('amount', body['amount']),
            body.get('project_id'),
            validation.lease_name(name) if name is not None else None)


# ----------------------------------------------------- availability search

UNITS = {'m': 60, 'h': 3600, 'd': 86400, 'w': 7 * 86400}


def _after(query: dict, now: datetime.datetime) -> datetime.datetime:
    """A search's `after`: now if not given, "now" or past."""
    if query.get('after', 'now') == 'now':
        return now
    return max(now, validation.parse_time('after', query['after']))


def availability(query: dict, now: datetime.datetime, max_duration: int,
                 max_advance: int, horizon: int, flavor_need: Callable,
                 registered: Callable = lambda network_id: ()) -> tuple:
    """(reservation request, after, before, duration in seconds, limit)
    of an availability search's query.

    The query is one reservation as a lease holds it (its type guessed
    from its fields when not given; one of amount, or min as max too),
    and the search's own fields: after (default now), before (default
    as far as a lease may start, at most `horizon` after `after`).
    """
    validation.check(search_schemas.SEARCH, {
        k: v for k, v in query.items() if k in search_schemas.FIELDS},
        whole='query')
    wanted = {k: v for k, v in query.items()
              if k not in search_schemas.FIELDS}
    if 'resource_type' not in wanted:
        wanted['resource_type'] = kinds.named_by(set(wanted))
    kind = kinds.KINDS.get(wanted['resource_type'])
    if kind is not None and kind.whole_hosts:
        if 'min' in wanted:
            wanted.setdefault('max', wanted['min'])
    else:
        wanted.setdefault('amount', '1')
    if isinstance(wanted.get('required_floatingips'), str):
        # A query string names them separated by commas.
        wanted['required_floatingips'] = [
            a for a in wanted['required_floatingips'].split(',') if a]
    validation.check(schemas.RESERVATION, wanted, whole='query')
    req = reservation(None, wanted, flavor_need, registered)
    text = query['duration']
    duration = int(text.rstrip('mhdw')) * UNITS.get(text[-1], 60)
    if duration > max_duration:
        raise InvalidParam('duration', 'is longer than the longest lease, '
                           '%.1f hours' % (max_duration / 3600))
    after = _after(query, now)
    # (Not past the calendar's last day.)
    last = after + datetime.timedelta(seconds=min(
        horizon, (datetime.datetime.max - after).total_seconds() // 1))
    if max_advance:
        last = min(last, now + datetime.timedelta(seconds=max_advance))
    before = (validation.parse_time('before', query['before'])
              if 'before' in query else last)
    if before < after:
        raise InvalidParam('before', 'must not be before after (%s UTC)'
                           % after.replace(microsecond=0))
    if before > last:
        raise InvalidParam('before', 'is further ahead than a search goes '
                           '(%s UTC)' % last.replace(microsecond=0))
    return req, after, before, duration, checks.whole('limit', query.get(
        'limit', 10), 1, 100)


def calendar(query: dict, now: datetime.datetime, default: int,
             longest: int) -> tuple:
    """(after, before) of the ledger calendar's query: from `after`
    (default now) for `default` seconds, at most `longest`.
    """
    validation.check(ledger_schemas.QUERY, query, whole='query')
    after = _after(query, now)
    if 'before' not in query:
        return after, after + datetime.timedelta(seconds=default)
    before = validation.parse_time('before', query['before'])
    if before <= after:
        raise InvalidParam('before', 'must be after after (%s UTC)'
                           % after.replace(microsecond=0))
    if (before - after).total_seconds() > longest:
        raise InvalidParam('before', 'is more than %d days after after'
                           % (longest // 86400))
    return after, before
