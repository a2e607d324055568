"""Validation of the lease hints of a boot request (pure, no I/O).

Every problem is an `InvalidParam` naming the field and what is wrong with
it, so that the API can answer 400 with a message a user can act on.
"""

import dataclasses
import datetime
import json
from typing import Optional

ON_END_ACTIONS = ('delete', 'shelve', 'snapshot', 'none')
LEASE_FIELDS = ('name', 'start', 'end', 'on_end', 'before_end')
MAX_PARAMS_LENGTH = 4096
MAX_NAME_LENGTH = 255


class InvalidParam(ValueError):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__('%s: %s' % (field, problem))
        self.field = field


@dataclasses.dataclass(frozen=True)
class LeaseRequest:
    name: str
    start: datetime.datetime     # naive UTC
    end: datetime.datetime       # naive UTC
    on_end: str = 'delete'
    before_end: Optional[int] = None   # minutes before the end
    immediate: bool = False


def single_hint(hints: dict, key: str):
    """Nova passes a hint given twice as a list; a lease takes one."""
    value = hints.get(key)
    if isinstance(value, list):
        if len(value) != 1:
            raise InvalidParam(key, 'given %d times; give it once'
                               % len(value))
        value = value[0]
    return value


def parse_time(field: str, value) -> datetime.datetime:
    """A UTC date 'YYYY-MM-DD HH:MM' or an ISO 8601 date and time."""
    if not isinstance(value, str):
        raise InvalidParam(field, 'must be a string such as '
                           '"2026-12-01 10:00", not %s'
                           % type(value).__name__)
    text = value.strip()
    if len(text) > 64:
        raise InvalidParam(field, 'is too long to be a date')
    parsed = None
    for fmt in ('%Y-%m-%d %H:%M', '%Y-%m-%d %H:%M:%S'):
        try:
            parsed = datetime.datetime.strptime(text, fmt)
            break
        except ValueError:
            pass
    if parsed is None:
        try:
            parsed = datetime.datetime.fromisoformat(
                text[:-1] + '+00:00' if text.endswith('Z') else text)
        except ValueError:
            raise InvalidParam(field, '"%s" is not a date; use '
                               '"YYYY-MM-DD HH:MM" (UTC) or ISO 8601'
                               % text[:64])
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    return parsed


def interval(start_field: str, start_value, end_field: str, end_value,
             now: datetime.datetime, max_duration: int,
             max_advance: int) -> tuple:
    """A lease's (start, end), naive UTC, checked; start may be "now"."""
    start = now if start_value == 'now' else parse_time(start_field,
                                                        start_value)
    end = parse_time(end_field, end_value)
    if start_value != 'now' and start < now:
        raise InvalidParam(start_field, '%s is in the past (now is %s UTC)'
                           % (start, now.replace(microsecond=0)))
    if start > now + datetime.timedelta(seconds=max_advance):
        raise InvalidParam(start_field, 'is more than %d days ahead'
                           % (max_advance // 86400))
    if end <= start:
        raise InvalidParam(end_field, 'must be after the start (%s)'
                           % start.replace(microsecond=0))
    duration = (end - start).total_seconds()
    if duration > max_duration:
        raise InvalidParam(end_field, 'the lease would last %.1f hours; the '
                           'longest allowed is %.1f hours'
                           % (duration / 3600, max_duration / 3600))
    return start, end


def lease_request(hints: dict, now: datetime.datetime, max_duration: int,
                  max_advance: int) -> Optional[LeaseRequest]:
    """The lease asked for by `hints`, or None for an ordinary boot."""
    reserved = single_hint(hints, 'reserved')
    raw = single_hint(hints, 'lease_params')
    if reserved is not None:
        if str(reserved).lower() != 'true':
            raise InvalidParam('reserved', 'must be True (it asks for a '
                               'lease described by lease_params)')
        if raw is None:
            raise InvalidParam('lease_params', 'is required with '
                               'reserved=True')
    if raw is None:
        return None
    if isinstance(raw, str):
        if len(raw) > MAX_PARAMS_LENGTH:
            raise InvalidParam('lease_params', 'is longer than %d '
                               'characters' % MAX_PARAMS_LENGTH)
        try:
            params = json.loads(raw)
        except ValueError as e:
            raise InvalidParam('lease_params', 'is not valid JSON (%s)' % e)
    else:
        params = raw
    if not isinstance(params, dict):
        raise InvalidParam('lease_params', 'must be a JSON object with '
                           'name, start and end')
    unknown = sorted(set(params) - set(LEASE_FIELDS))
    if unknown:
        raise InvalidParam('lease_params.%s' % unknown[0],
                           'unknown field; the fields are %s'
                           % ', '.join(LEASE_FIELDS))
    for field in ('name', 'start', 'end'):
        if field not in params:
            raise InvalidParam('lease_params.%s' % field, 'is required')

    name = params['name']
    if not isinstance(name, str) or not name.strip():
        raise InvalidParam('lease_params.name', 'must be a non-empty string')
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidParam('lease_params.name', 'is longer than %d '
                           'characters' % MAX_NAME_LENGTH)

    immediate = params['start'] == 'now'
    start, end = interval('lease_params.start', params['start'],
                          'lease_params.end', params['end'], now,
                          max_duration, max_advance)
    duration = (end - start).total_seconds()

    on_end = params.get('on_end', 'delete')
    if on_end not in ON_END_ACTIONS:
        raise InvalidParam('lease_params.on_end', 'must be one of %s'
                           % ', '.join(ON_END_ACTIONS))
    before_end = params.get('before_end')
    if before_end is not None:
        if isinstance(before_end, bool) or not isinstance(before_end, int):
            raise InvalidParam('lease_params.before_end', 'must be a whole '
                               'number of minutes')
        if not 0 < before_end * 60 < duration:
            raise InvalidParam('lease_params.before_end', 'must be between '
                               '1 minute and the length of the lease')
    return LeaseRequest(name=name.strip(), start=start, end=end,
                        on_end=on_end, before_end=before_end,
                        immediate=immediate)


def server_count(body: dict, limit: int) -> int:
    """How many servers the boot makes (Nova's max_count, else min)."""
    counts = {}
    for field in ('min_count', 'max_count'):
        value = body.get(field, counts.get('min_count', 1))
        try:
            if isinstance(value, bool) or isinstance(value, float):
                raise ValueError()
            counts[field] = int(value)
        except (TypeError, ValueError):
            raise InvalidParam(field, 'must be a positive integer')
        if counts[field] < 1:
            raise InvalidParam(field, 'must be a positive integer')
        if counts[field] > limit:
            raise InvalidParam(field, 'a lease holds at most %d servers'
                               % limit)
    if counts['min_count'] > counts['max_count']:
        raise InvalidParam('min_count', 'must not be above max_count')
    return counts['max_count']
