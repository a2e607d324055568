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

"""The costliest input of each field of each request, for the tests that
show that no request costs nova-api more than a moment (unit, functional
and integration).

A string's worst input is the longest run of a character its pattern
accepts, then one it refuses: a pattern that backtracks tries every split
of the run.  Its size is the largest the body limit (nova-api's
``max_request_body_size``, the lease API's own) leaves it.
"""

import copy
import json
import re
from typing import Iterator, Optional

from nova_reservation.api import openapi
from nova_reservation.api import wsgi
from nova_reservation.schemas import leases as lease_schemas

# Seconds of CPU that nova-api may spend on one request at most.
BUDGET = 0.1
BODY_LIMIT = wsgi.MAX_BODY_LENGTH
# A request line a WSGI server takes (gunicorn's limit_request_line, the
# smallest of the servers Nova runs under).
URL_LIMIT = 4094
# A property name in a path: the name of an extra capability.
KEY = object()
REFUSED = '\x00'
CANDIDATES = 'a0 1.:-'


def strings(schema: dict, path: tuple = (), kind: Optional[str] = None
            ) -> Iterator[tuple]:
    """(path, schema, reservation kind or None) of each string a body of
    `schema` may hold; an item of a list is at index 0, an extra property
    at "capability", a property's name at `KEY`.
    """
    types = schema.get('type', [])
    types = types if isinstance(types, list) else [types]
    if ('string' in types or 'pattern' in schema or (
            'enum' in schema and any(isinstance(v, str)
                                     for v in schema['enum']))) and \
            'anyOf' not in schema:
        yield path, schema, kind
    for name, sub in schema.get('properties', {}).items():
        yield from strings(sub, path + (name,), kind)
    if isinstance(schema.get('additionalProperties'), dict):
        yield from strings(schema['additionalProperties'],
                           path + ('capability',), kind)
    if 'propertyNames' in schema:
        yield from strings(schema['propertyNames'], path + (KEY,), kind)
    if isinstance(schema.get('items'), dict):
        yield from strings(schema['items'], path + (0,), kind)
    for sub in schema.get('allOf', []) + schema.get('anyOf', []):
        if 'then' in sub:
            wanted = sub['if']['properties']['resource_type']['const']
            yield from strings(sub['then'], path, wanted)
        else:
            yield from strings(sub, path, kind)


def body_strings(schema: dict) -> list:
    """`strings` of a body, each path once (the fields every reservation
    kind shares under the first kind that has them).
    """
    seen, found = set(), []
    for path, leaf, kind in strings(schema):
        if path and path not in seen:
            seen.add(path)
            found.append((path, leaf, kind))
    return found


def run_character(schema: dict) -> str:
    """A character that the field's pattern (or enum) accepts a run of."""
    if 'enum' in schema:
        return next(str(v)[0] for v in schema['enum']
                    if isinstance(v, str) and v)
    pattern = schema.get('pattern')
    if pattern is None:
        return 'a'
    # Without its end anchor, the pattern tells which runs it starts with.
    start = re.compile(pattern[:-1] if pattern.endswith('$') else pattern)
    for c in CANDIDATES:
        if start.match(c * 64):
            return c
    raise AssertionError('no run of %r accepted by %s' % (CANDIDATES,
                                                          pattern))


def worst(schema: dict, size: int) -> str:
    """The costliest string of `size` characters for the field."""
    return run_character(schema) * (size - 1) + REFUSED


def field_name(path: tuple) -> str:
    """A path as the API names a field: ``reservations[0].name``."""
    name = ''
    for part in path:
        if isinstance(part, int):
            name += '[%d]' % part
        elif part is not KEY:
            name += ('.' if name else '') + part
    return name


def with_value(body: dict, path: tuple, value, containers: dict = None
               ) -> dict:
    """A copy of `body` with `value` at `path` (an object made on the way
    from `containers` by its path, else empty); at a `KEY` the value is a
    property's name.
    """
    body = copy.deepcopy(body)
    containers = containers or {}
    parent = body
    for i, part in enumerate(path[:-1]):
        if path[i + 1] is KEY:
            break
        if isinstance(part, int):
            while len(parent) <= part:
                parent.append(copy.deepcopy(containers.get(path[:i + 1],
                                                           {})))
        elif part not in parent or not isinstance(parent[part],
                                                  (dict, list)):
            parent[part] = copy.deepcopy(containers.get(
                path[:i + 1], [] if isinstance(path[i + 1], int) else {}))
        parent = parent[part]
    if path[-1] is KEY:
        parent[value] = 'x'
    else:
        parent[path[-1]] = value
    return body


def largest(body: dict, path: tuple, schema: dict, limit: int = BODY_LIMIT,
            containers: dict = None) -> bytes:
    """`body` with the worst input at `path`, as large as `limit` lets
    the whole body be.
    """
    room = limit - len(json.dumps(with_value(body, path, '', containers)))
    # The refused character is sent escaped (six characters).
    value = worst(schema, room - 5)
    text = json.dumps(with_value(body, path, value, containers)).encode()
    assert len(text) <= limit, (len(text), limit)
    return text


def bodies() -> Iterator[tuple]:
    """(method, route template, body schema) of each operation that takes
    a body.
    """
    for (method, route), (_, schema, _) in sorted(
            openapi.OPERATIONS.items()):
        if schema is not None:
            yield method, route, schema


def queries() -> Iterator[tuple]:
    """(route template, {field: schema}) of each operation that takes a
    query.
    """
    for (method, route), fields in sorted(openapi.QUERIES.items()):
        yield route, fields


def list_fields(schema: dict, path: tuple = ()) -> Iterator[tuple]:
    """(path, schema) of each list a body of `schema` may hold."""
    types = schema.get('type', [])
    types = types if isinstance(types, list) else [types]
    if 'array' in types and schema.get('maxItems'):
        yield path, schema
    for name, sub in schema.get('properties', {}).items():
        yield from list_fields(sub, path + (name,))
    if isinstance(schema.get('items'), dict):
        yield from list_fields(schema['items'], path + (0,))
    for sub in schema.get('allOf', []):
        yield from list_fields(sub.get('then', sub), path)


LEASE_PARAMS = lease_schemas.LEASE_PARAMS
