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

"""Input checks shared by the boot hook and the lease API (pure, no I/O).

Shapes (types, sizes, formats, unknown fields) are declared as JSON Schema
in `nova_reservation.schemas`; this module applies them and turns the first
problem into an `InvalidParam` that names the field, e.g.
``reservations[0].min: must be a whole number``.  What a schema can not
say (dates against the clock, an interval's length) is checked here too.
"""

import dataclasses
import datetime
import json
import math
import re
from typing import Any, Optional

import jsonschema
from jsonschema import exceptions as jsonschema_exceptions

from nova_reservation.exception import InvalidParam
from nova_reservation.schemas import leases as schemas

# Deeper input is refused before anything walks it recursively: no body
# of this API nests more than a few levels.
MAX_DEPTH = 32
# Dates are digits and separators; anything else (a NUL, a newline, a
# letter) is refused before parsing.
DATE_CHARACTERS = re.compile(r'^[0-9][0-9T:.+ Zz-]*$')


def _reject_constant(name: str):
    raise ValueError('%s is not a number JSON allows' % name)


def load_json(field: str, text) -> Any:
    """JSON text as Python values; bad, too deep or unstorable text is an
    InvalidParam on `field`.
    """
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise InvalidParam(field, 'is nested more than %d levels deep'
                           % MAX_DEPTH)
    except ValueError as e:   # includes bad UTF-8
        raise InvalidParam(field, 'is not valid JSON (%s)' % str(e)[:200])
    check_tree(field, value)
    return value


def check_tree(field: str, value: Any) -> None:
    """Depth, strings and numbers that every stored value must satisfy.

    Iterative (no input can exhaust the stack), a level at a time.
    """
    level, depth = [value], 1
    while level:
        if depth > MAX_DEPTH:
            raise InvalidParam(field, 'is nested more than %d levels deep'
                               % MAX_DEPTH)
        below: list = []
        for item in level:
            if isinstance(item, list):
                below += item
            elif isinstance(item, dict):
                below += item
                below += item.values()
            elif isinstance(item, str):
                try:
                    item.encode('utf-8')
                except UnicodeEncodeError:
                    raise InvalidParam(field, 'holds a string that is not '
                                       'valid Unicode (a lone surrogate)')
            elif isinstance(item, float) and not math.isfinite(item):
                raise InvalidParam(field, 'holds a number JSON does not allow')
        level, depth = below, depth + 1


# ------------------------------------------------------------ schemas

_VALIDATORS, _PATTERNS = {}, {}
_DRAFT = jsonschema.Draft202012Validator
# jsonschema applies every keyword, even after a size limit failed: one
# that walks a value is applied only within the size its schema allows, so
# that a request's cost is bounded by the schema, not by the body.
_SIZE_FIRST = {
    'maxLength': ('pattern',),
    'maxItems': ('items', 'prefixItems', 'contains', 'uniqueItems'),
    'maxProperties': ('properties', 'patternProperties',
                      'additionalProperties', 'propertyNames'),
}


def _within_size(keyword: str, size: str, apply):
    def within(validator, value, instance, schema):
        if size not in schema or not isinstance(instance, (
                str, list, dict)) or len(instance) <= schema[size]:
            yield from apply(validator, value, instance, schema) or ()
    return within


def _pattern(validator, pattern: str, instance, schema):
    # As JSON Schema's (ECMA 262), a final $ ends the string; Python's
    # also matches before a last newline.
    if pattern not in _PATTERNS:
        _PATTERNS[pattern] = re.compile(pattern[:-1] + r'\Z' if (
            pattern.endswith('$') and not pattern.endswith('\\$'))
            else pattern)
    if validator.is_type(instance, 'string') and \
            not _PATTERNS[pattern].search(instance):
        yield jsonschema_exceptions.ValidationError('does not match')


def _unique_items(validator, unique, instance, schema):
    # Only of strings and numbers: jsonschema compares other items pair by
    # pair, deeply (and their own schema refuses them).
    if isinstance(instance, list) and all(
            isinstance(v, (str, int, float)) for v in instance):
        yield from _DRAFT.VALIDATORS['uniqueItems'](
            validator, unique, instance, schema)


_KEYWORDS = dict(_DRAFT.VALIDATORS, pattern=_pattern,
                 uniqueItems=_unique_items)
Validator = jsonschema.validators.extend(_DRAFT, {
    keyword: _within_size(keyword, size, _KEYWORDS[keyword])
    for size, keywords in _SIZE_FIRST.items() for keyword in keywords})


def validator(schema: dict) -> jsonschema.protocols.Validator:
    """The validator of `schema` (checked once, kept per schema)."""
    key = id(schema)
    if key not in _VALIDATORS:
        Validator.check_schema(schema)
        _VALIDATORS[key] = Validator(schema)
    return _VALIDATORS[key]


def _name(prefix: str, path, whole: str) -> str:
    name = prefix
    for part in path:
        if isinstance(part, int):
            name += '[%d]' % part
        else:
            name += ('.' if name else '') + str(part)
    return name or whole


def _kind(types) -> str:
    words = {'string': 'a string', 'integer': 'a whole number',
             'number': 'a number', 'boolean': 'true or false',
             'object': 'a JSON object', 'array': 'a list', 'null': 'null'}
    types = types if isinstance(types, list) else [types]
    return ' or '.join(words.get(t, t) for t in types)


def _problem(error) -> tuple:
    """(extra path, problem) of a schema error, in the project's words."""
    schema, kind, rule = error.schema, error.validator, error.validator_value
    if kind == 'required':
        missing = [f for f in rule if f not in error.instance]
        return [missing[0]], 'is required'
    if kind == 'additionalProperties':
        known = sorted(schema.get('properties', {}))
        unknown = sorted(set(error.instance) - set(known))
        # (A name is not echoed whole: it may be as long as the body.)
        return [unknown[0][:64]], ('unknown field; the fields are %s'
                                   % ', '.join(known) if known else
                                   'unknown field')
    if kind == 'type':
        return [], 'must be %s, not %s' % (_kind(rule), _json_type(
            error.instance))
    if kind in ('enum', 'const'):
        values = rule if kind == 'enum' else [rule]
        return [], 'must be one of %s' % ', '.join(
            json.dumps(v) for v in values)
    if kind == 'maxLength':
        return [], 'is longer than %d characters' % rule
    if kind == 'minLength':
        return [], 'must not be empty'
    if kind == 'maxItems':
        return [], 'holds at most %d items' % rule
    if kind == 'minItems':
        return [], 'must hold at least %d item(s)' % rule
    if kind == 'minProperties':
        # Blazar's words, which its clients and tests look for.
        return [], 'No data to update'
    if kind == 'maxProperties':
        return [], 'holds at most %d fields' % rule
    if kind == 'minimum':
        return [], 'must be at least %s' % rule
    if kind == 'maximum':
        return [], 'must be at most %s' % rule
    if 'description' in schema:
        return [], 'must be %s' % schema['description']
    return [], error.message[:200]


def _json_type(value) -> str:
    return {dict: 'an object', list: 'a list', str: 'a string',
            bool: 'a boolean', int: 'a number', float: 'a number',
            type(None): 'null'}.get(type(value), type(value).__name__)


def check(schema: dict, value: Any, field: str = '',
          whole: str = 'body') -> Any:
    """`value` if it satisfies `schema`, else InvalidParam naming the field
    under `field` (`whole` when the problem is the value itself).
    """
    check_tree(field or whole, value)
    error = jsonschema_exceptions.best_match(
        validator(schema).iter_errors(value))
    if error is None:
        return value
    if 'propertyNames' in error.absolute_schema_path:
        # The path of a bad key is its parent; name the key.
        key = str(error.instance)
        extra, problem = [key[:64]], (
            # Blazar's words, which its clients and tests look for.
            'Extra capability key too long (at most 64 characters)'
            if len(key) > 64 else 'can not be an extra capability: a host '
            'field, or with control characters')
    else:
        extra, problem = _problem(error)
    raise InvalidParam(_name(field, list(error.absolute_path) + extra,
                             whole), problem)


# -------------------------------------------------------------- dates

@dataclasses.dataclass(frozen=True)
class Waiting:
    """How a lease that does not fit waits for room (``if_busy: wait``)."""
    flexible_start: bool = False
    # The latest start taken (None: no limit but retries and max_advance).
    start_before: Optional[datetime.datetime] = None
    retries: Optional[int] = None
    retry_interval: Optional[int] = None   # minutes

    def columns(self, start_now: bool) -> dict:
        """The lease row's columns of it."""
        return dict(if_busy='wait', flexible_start=self.flexible_start,
                    start_now=start_now, start_before=self.start_before,
                    retries=self.retries, retry_interval=self.retry_interval,
                    tries=0)


# How a waiting lease waits: its schema's fields but if_busy itself.
WAITING_KEYS = tuple(k for k in schemas.WAITING_FIELDS if k != 'if_busy')


def waiting(prefix: str, body: dict, start: datetime.datetime,
            start_now: bool, now: datetime.datetime,
            max_advance: int) -> Optional[Waiting]:
    """The waiting asked for by `body` (checked by its schema), or None
    for a lease that is refused when it does not fit.
    """
    if body.get('if_busy', 'refuse') != 'wait':
        for key in WAITING_KEYS:
            if key in body:
                raise InvalidParam(prefix + key, 'is for a waiting lease '
                                   '(if_busy: wait)')
        return None
    flexible = body.get('flexible_start', False)
    start_before = None
    if 'start_before' in body:
        field = prefix + 'start_before'
        if not (flexible or start_now):
            raise InvalidParam(field, 'is for flexible_start or a start of '
                               'now: a waiting lease with a fixed start is '
                               'placed at that start or not at all')
        start_before = parse_time(field, body['start_before'])
        if start_before <= start:
            raise InvalidParam(field, 'must be later than the start (%s '
                               'UTC)' % start.replace(microsecond=0))
        if max_advance and start_before > now + datetime.timedelta(
                seconds=max_advance):
            raise InvalidParam(field, 'is more than %d days ahead'
                               % (max_advance // 86400))
    elif flexible:
        raise InvalidParam(prefix + 'start_before', 'is required with '
                           'flexible_start: the latest start to take')
    return Waiting(flexible_start=flexible, start_before=start_before,
                   retries=body.get('retries'),
                   retry_interval=body.get('retry_interval'))


PERIODS = {'day': datetime.timedelta(days=1),
           'week': datetime.timedelta(weeks=1)}
# Each occurrence is a lease of its own, whose reservations are planned
# and get their private flavors at once: the reservations of a series
# are bounded in all, so that one request writes a bounded amount.
MAX_OCCURRENCES = 100


def occurrences(prefix: str, body: dict, start: datetime.datetime,
                end: datetime.datetime, now: datetime.datetime,
                max_advance: int, reservations: int = 1) -> list:
    """[(start, end)] of each occurrence of a lease (`body` checked by its
    schema) of `reservations` reservations: its own interval, or with
    ``recurrence`` the same interval every day or week, `count` times or
    until a date (at most `MAX_OCCURRENCES` reservations in all).
    """
    recurrence = body.get('recurrence')
    if recurrence is None:
        return [(start, end)]
    field = prefix + 'recurrence'
    if body.get('if_busy') == 'wait':
        raise InvalidParam(field, 'can not be given with if_busy wait: '
                           'every occurrence is placed at creation, or none')
    if body.get('on_end') == 'extend_if_free':
        raise InvalidParam(field, 'can not be given with on_end '
                           'extend_if_free: an extension would run into the '
                           'next occurrence')
    if ('count' in recurrence) == ('until' in recurrence):
        raise InvalidParam(field, 'takes either count or until')
    period = PERIODS[recurrence['every']]
    if end - start >= period:
        raise InvalidParam(field + '.every', 'each occurrence lasts %s, '
                           'not less than a %s: they would overlap'
                           % (end - start, recurrence['every']))
    if 'until' in recurrence:
        last = field + '.until'
        until = parse_time(last, recurrence['until'])
        if until < start:
            raise InvalidParam(last, 'is before the start (%s UTC)'
                               % start.replace(microsecond=0))
        count = (until - start) // period + 1
    else:
        last, count = field + '.count', recurrence['count']
    per = max(1, reservations)
    if count * per > MAX_OCCURRENCES:
        raise InvalidParam(last, 'makes %d occurrences; at most %d%s'
                           % (count, MAX_OCCURRENCES // per,
                              ' of a lease of %d reservations (%d '
                              'reservations in all)' % (per, MAX_OCCURRENCES)
                              if per > 1 else ''))
    found = [(start + k * period, end + k * period) for k in range(count)]
    if max_advance and found[-1][0] > now + datetime.timedelta(
            seconds=max_advance):
        raise InvalidParam(last, 'the last occurrence would start more than '
                           '%d days ahead' % (max_advance // 86400))
    return found


def max_extensions(prefix: str, body: dict) -> Optional[int]:
    """How many times a soft end may extend the lease (`body` checked by
    its schema): 1 by default with ``on_end: extend_if_free``, and only
    with it.
    """
    if body.get('on_end') != 'extend_if_free':
        if 'max_extensions' in body:
            raise InvalidParam(prefix + 'max_extensions', 'is for on_end '
                               'extend_if_free only')
        return None
    return body.get('max_extensions', 1)


def lease_name(value: str) -> str:
    """A lease's name as it is kept (its schema checked it): without the
    spaces around it.
    """
    return value.strip()


def parse_time(field: str, value) -> datetime.datetime:
    """A UTC date 'YYYY-MM-DD HH:MM' or an ISO 8601 date and time, as naive
    UTC.
    """
    if not isinstance(value, str):
        raise InvalidParam(field, 'must be a string such as '
                           '"2026-12-01 10:00", not %s' % _json_type(value))
    text = value.strip(' ')
    if len(text) > 64:
        raise InvalidParam(field, 'is too long to be a date')
    if not DATE_CHARACTERS.match(text) or text.endswith('\n'):
        raise InvalidParam(field, _not_a_date(text))
    parsed = None
    for fmt in ('%Y-%m-%d %H:%M', '%Y-%m-%d %H:%M:%S'):
        try:
            parsed = datetime.datetime.strptime(text, fmt)
            break
        except ValueError:
            pass
    try:
        if parsed is None:
            parsed = datetime.datetime.fromisoformat(
                text[:-1] + '+00:00' if text[-1] in 'Zz' else text)
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(datetime.timezone.utc).replace(
                tzinfo=None)
    except ValueError:
        raise InvalidParam(field, _not_a_date(text))
    except OverflowError:
        raise InvalidParam(field, '%s is outside the calendar once in UTC'
                           % json.dumps(text[:64]))
    return parsed


def _not_a_date(text: str) -> str:
    # Blazar's words, which its clients and tests look for.
    return ('%s is an invalid date. Required format: %%Y-%%m-%%d %%H:%%M '
            '(UTC), or ISO 8601' % json.dumps(text[:64])[1:-1])


def interval(start_field: str, start_value, end_field: str, end_value,
             now: datetime.datetime, max_duration: int,
             max_advance: int) -> tuple:
    """A lease's (start, end), naive UTC, checked; start may be "now"."""
    start = now if start_value == 'now' else parse_time(start_field,
                                                        start_value)
    end = parse_time(end_field, end_value)
    if start_value != 'now' and start < now:
        # The current minute is now, as in Blazar: clients that send dates
        # to the minute (its dashboard's form) mean it so.
        if start < now.replace(second=0, microsecond=0):
            raise InvalidParam(start_field, '%s is in the past (now is %s '
                               'UTC)' % (start, now.replace(microsecond=0)))
        start = now
    if max_advance and start > now + datetime.timedelta(
            seconds=max_advance):
        raise InvalidParam(start_field, 'is more than %d days ahead'
                           % (max_advance // 86400))
    if end <= start:
        # Blazar's words, which its clients and tests look for.
        raise InvalidParam(end_field, 'End date must be later than start '
                           'date. (The start is %s UTC.)'
                           % start.replace(microsecond=0))
    duration = (end - start).total_seconds()
    if duration > max_duration:
        raise InvalidParam(end_field, 'the lease would last %.1f hours; the '
                           'longest allowed is %.1f hours'
                           % (duration / 3600, max_duration / 3600))
    return start, end
