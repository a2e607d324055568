"""Validation of lease API bodies (pure: Nova look-ups are passed in).

Each problem is a `params.InvalidParam` naming the field, e.g.
``reservations[0].min: must be a whole number of at least 1``.
"""

import datetime
import json
from typing import Callable, Optional

from nova_reservation import capacity
from nova_reservation.hooks import params
from nova_reservation import planner
from nova_reservation import properties

Invalid = params.InvalidParam

LEASE_FIELDS = {'name', 'start_date', 'end_date', 'reservations', 'events',
                'before_end_date'}
UPDATE_FIELDS = {'name', 'start_date', 'end_date', 'reservations',
                 'before_end_date'}
RESERVATION_FIELDS = {
    planner.HOST: {'resource_type', 'min', 'max', 'hypervisor_properties',
                   'resource_properties', 'before_end'},
    planner.FLAVOR: {'resource_type', 'flavor_id', 'amount', 'affinity'},
    planner.VIRTUAL: {'resource_type', 'vcpus', 'memory_mb', 'disk_gb',
                      'amount', 'affinity', 'resource_properties'},
}
MAX_AMOUNT = 1000


def _dict(field: str, value) -> dict:
    if not isinstance(value, dict):
        raise Invalid(field, 'must be a JSON object')
    return value


def _unknown(field_prefix: str, value: dict, allowed: set) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise Invalid(field_prefix + unknown[0], 'unknown field; the fields '
                      'are %s' % ', '.join(sorted(allowed)))


def whole(field: str, value, minimum: int = 1,
          maximum: int = MAX_AMOUNT) -> int:
    """An integer (or a string of one, as the CLI sends) in range."""
    if isinstance(value, bool) or isinstance(value, float):
        raise Invalid(field, 'must be a whole number')
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise Invalid(field, 'must be a whole number, not %s'
                      % json.dumps(value)[:40])
    if not minimum <= number <= maximum:
        raise Invalid(field, 'must be between %d and %d'
                      % (minimum, maximum))
    return number


def _affinity(field: str, value) -> Optional[bool]:
    text = str(value).lower()
    if value is None or text in ('none', ''):
        return None
    if text in ('true', 'false'):
        return text == 'true'
    raise Invalid(field, 'must be true, false or none')


def _requirements(field: str, value) -> str:
    if value is None:
        return ''
    if not isinstance(value, str):
        value = json.dumps(value)
    try:
        properties.parse(value)
    except properties.InvalidRequirements as e:
        raise Invalid(field, str(e))
    return value


def name(value, field: str = 'name') -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(field, 'must be a non-empty string')
    if len(value) > params.MAX_NAME_LENGTH:
        raise Invalid(field, 'is longer than %d characters'
                      % params.MAX_NAME_LENGTH)
    return value.strip()


def reservation(index: int, value, flavor_need: Callable
                ) -> planner.ReservationRequest:
    """One reservation of a lease body."""
    prefix = 'reservations[%d].' % index
    value = _dict('reservations[%d]' % index, value)
    kind = value.get('resource_type')
    if kind not in RESERVATION_FIELDS:
        raise Invalid(prefix + 'resource_type', 'must be one of %s'
                      % ', '.join(sorted(RESERVATION_FIELDS)))
    _unknown(prefix, value, RESERVATION_FIELDS[kind])
    if kind == planner.HOST:
        low = whole(prefix + 'min', value.get('min'))
        high = whole(prefix + 'max', value.get('max', low))
        if low > high:
            raise Invalid(prefix + 'min', 'must not be above max')
        before_end = value.get('before_end') or None
        if before_end not in (None, 'default', 'snapshot'):
            raise Invalid(prefix + 'before_end',
                          'must be default or snapshot')
        return planner.ReservationRequest(
            resource_type=kind, count=high, min_count=low,
            hypervisor_properties=_requirements(
                prefix + 'hypervisor_properties',
                value.get('hypervisor_properties')),
            resource_properties=_requirements(
                prefix + 'resource_properties',
                value.get('resource_properties')),
            before_end=before_end)
    amount = whole(prefix + 'amount', value.get('amount'))
    affinity = _affinity(prefix + 'affinity', value.get('affinity'))
    if kind == planner.FLAVOR:
        flavor_id = value.get('flavor_id')
        if isinstance(flavor_id, int) and not isinstance(flavor_id, bool):
            flavor_id = str(flavor_id)   # the CLI sends "3" as 3
        if not isinstance(flavor_id, str) or not flavor_id:
            raise Invalid(prefix + 'flavor_id', 'is required')
        need = flavor_need(flavor_id)
        if need is None:
            raise Invalid(prefix + 'flavor_id', 'flavor %s not found'
                          % flavor_id)
        return planner.ReservationRequest(
            resource_type=kind, count=amount, need=need, affinity=affinity,
            flavor_id=flavor_id)
    if value.get('resource_properties') not in (None, '', '[]'):
        raise Invalid(prefix + 'resource_properties', 'is not supported '
                      'for virtual:instance; leave it empty')
    need = capacity.Resources(
        whole(prefix + 'vcpus', value.get('vcpus'), 1, 4096),
        whole(prefix + 'memory_mb', value.get('memory_mb'), 1, 2 ** 24),
        whole(prefix + 'disk_gb', value.get('disk_gb', 0), 0, 2 ** 20))
    return planner.ReservationRequest(resource_type=kind, count=amount,
                                      need=need, affinity=affinity)


def before_end_minutes(value, start: datetime.datetime,
                       end: datetime.datetime) -> Optional[int]:
    """Blazar's before_end_date, as minutes before the end."""
    if value in (None, ''):
        return None
    when = params.parse_time('before_end_date', value)
    if not start <= when < end:
        raise Invalid('before_end_date', 'must be between the start and the '
                      'end of the lease')
    return max(1, int((end - when).total_seconds() // 60))


def lease(body, now: datetime.datetime, max_duration: int, max_advance: int,
          flavor_need: Callable) -> tuple:
    """(values of the lease row, reservation requests) of a POST body."""
    body = _dict('lease', body)
    _unknown('', body, LEASE_FIELDS)
    for field in ('name', 'start_date', 'end_date', 'reservations'):
        if field not in body:
            raise Invalid(field, 'is required')
    if body.get('events') not in (None, []):
        raise Invalid('events', 'must be empty: the lease\'s events are '
                      'made from its dates')
    start, end = params.interval('start_date', body['start_date'],
                                 'end_date', body['end_date'], now,
                                 max_duration, max_advance)
    reservations = body['reservations']
    if not isinstance(reservations, list) or not reservations:
        raise Invalid('reservations', 'must be a non-empty list')
    if len(reservations) > 10:
        raise Invalid('reservations', 'a lease holds at most 10')
    requests = [reservation(i, r, flavor_need)
                for i, r in enumerate(reservations)]
    values = dict(name=name(body['name']), start_at=start, end_at=end,
                  before_end_minutes=before_end_minutes(
                      body.get('before_end_date'), start, end))
    return values, requests


def update(body, lease_row, now: datetime.datetime, max_duration: int,
           max_advance: int, flavor_need: Callable) -> tuple:
    """(changed values, growth requests) of a PUT body."""
    body = _dict('lease', body)
    _unknown('', body, UPDATE_FIELDS)
    if not body:
        raise Invalid('lease', 'nothing to change')
    values = {}
    if 'name' in body:
        values['name'] = name(body['name'])
    started = lease_row.start_at <= now
    start_value = body.get('start_date')
    if start_value is not None and started:
        if params.parse_time('start_date', start_value) != \
                lease_row.start_at:
            raise Invalid('start_date', 'the lease has started; its start '
                          'can not move')
        start_value = None
    if start_value is not None or 'end_date' in body:
        start = (lease_row.start_at if start_value is None
                 else start_value)
        start_text = start if isinstance(start, str) else \
            start.isoformat()
        if start_value is None:
            # The start stays; only the end is checked against now.
            end = params.parse_time('end_date', body.get(
                'end_date', lease_row.end_at.isoformat()))
            if end <= max(now, lease_row.start_at):
                raise Invalid('end_date', 'must be after the start and '
                              'after now')
            if (end - lease_row.start_at).total_seconds() > max_duration:
                raise Invalid('end_date', 'the lease would be longer than '
                              '%.1f hours' % (max_duration / 3600))
            start = lease_row.start_at
        else:
            start, end = params.interval(
                'start_date', start_text, 'end_date',
                body.get('end_date', lease_row.end_at.isoformat()), now,
                max_duration, max_advance)
        values['start_at'], values['end_at'] = start, end
    if 'before_end_date' in body:
        values['before_end_minutes'] = before_end_minutes(
            body['before_end_date'], values.get('start_at',
                                                lease_row.start_at),
            values.get('end_at', lease_row.end_at))
    growth = body.get('reservations') or []
    if not isinstance(growth, list):
        raise Invalid('reservations', 'must be a list')
    return values, growth
