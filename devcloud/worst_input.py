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
from typing import Iterator, NamedTuple, Optional
import urllib.parse

from nova_reservation.api import openapi
from nova_reservation.api import wsgi
from nova_reservation.hooks import params as hook_params
from nova_reservation.schemas import leases as lease_schemas

# Seconds of CPU that nova-api may spend on one request at most.
BUDGET = 0.1
# How many times a request over the budget is sent: its cost is the least
# of them, as a collection of the whole process's garbage (a tenth of a
# second in nova-api) may fall in any request.
TRIES = 3
BODY_LIMIT = wsgi.MAX_BODY_LENGTH
# The lease_params hint's own limit, as text or as an object.
LEASE_PARAMS_LIMIT = hook_params.MAX_PARAMS_LENGTH
# A request line as long as a WSGI server takes by default (eventlet's,
# Apache's), for the queries.
URL_LIMIT = 8190
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
    elif isinstance(path[-1], int):
        parent[path[-1]:] = [value]
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
# Objects a worst input's path makes on its way, where empty is refused.
CONTAINERS = {('recurrence',): {'every': 'day'}}


class Request(NamedTuple):
    """A request with a worst input: who sends it (``member`` or
    ``admin``), and the field its refusal names.
    """
    method: str
    path: str           # below the lease API's /v1, or Nova's
    data: bytes
    sender: str
    field: str
    status: int = 400


class Cloud(NamedTuple):
    """What the requests name: a lease of the member's with its
    reservation, a flavor, an external network with a floating IP
    address of it, a compute node and an enrolled host's id (or None).
    """
    lease_id: str
    reservation_id: str
    flavor_id: str
    network_id: str
    address: str
    node: str
    host_id: Optional[str]

    def reservations(self) -> dict:
        """A reservation of each kind, as a lease's body holds it."""
        return {
            'flavor:instance': {'resource_type': 'flavor:instance',
                                'flavor_id': self.flavor_id, 'amount': 1},
            'physical:host': {'resource_type': 'physical:host', 'min': 1,
                              'max': 1},
            'virtual:instance': {'resource_type': 'virtual:instance',
                                 'vcpus': 1, 'memory_mb': 256,
                                 'disk_gb': 1, 'amount': 1},
            'virtual:floatingip': {'resource_type': 'virtual:floatingip',
                                   'network_id': self.network_id,
                                   'amount': 1},
            'maintenance': {'resource_type': 'maintenance',
                            'hosts': [self.node], 'reason': 'disks'},
        }

    def lease(self, start: str, end: str, kind: Optional[str] = None
              ) -> dict:
        return {'name': 'cost', 'start_date': start, 'end_date': end,
                'reservations': [self.reservations()[
                    kind or 'flavor:instance']]}

    def bases(self) -> dict:
        """{(method, route): (path, sender, base body)} of each operation
        with a body but a lease's creation.
        """
        lease = '/leases/' + self.lease_id
        found = {
            ('PUT', '/v1/leases/{id}'): (
                lease, 'member', {'name': 'x', 'reservations': [
                    {'id': self.reservation_id}]}),
            ('POST', '/v1/leases/{id}/split'): (
                lease + '/split', 'member', {
                    'reservation_id': self.reservation_id, 'amount': 1}),
            ('POST', '/v1/leases/{id}/approve'): (
                lease + '/approve', 'admin', {}),
            ('POST', '/v1/leases/{id}/reject'): (
                lease + '/reject', 'admin', {}),
            ('POST', '/v1/os-hosts'): (
                '/os-hosts', 'admin', {'name': self.node}),
            ('POST', '/v1/floatingips'): (
                '/floatingips', 'admin', {
                    'floating_network_id': self.network_id,
                    'floating_ip_address': self.address}),
        }
        if self.host_id is not None:
            found[('PUT', '/v1/os-hosts/{id}')] = (
                '/os-hosts/' + self.host_id, 'admin',
                {'values': {'gpu': 'x'}})
        return found


def _named(path: tuple, data: bytes) -> str:
    """The field a refusal of `data` names: at a `KEY`, the property's
    name, by its first characters.
    """
    if path[-1] is not KEY:
        return field_name(path)
    text = data.decode()
    start = text.index('"' + 'a' * 64)
    return text[start + 1:start + 65]


def body_requests(cloud: Cloud, start: str, end: str) -> Iterator[Request]:
    """The worst input of every string field of every body, each in a
    request of its own as large as the body limit allows.
    """
    bases = cloud.bases()
    for method, route, schema in bodies():
        for path, leaf, kind in body_strings(schema):
            if (method, route) == ('POST', '/v1/leases'):
                where, sender = '/leases', ('admin' if kind == 'maintenance'
                                            else 'member')
                body = cloud.lease(start, end, kind)
            elif (method, route) in bases:
                where, sender, body = bases[(method, route)]
            else:
                continue
            data = largest(body, path, leaf, containers=CONTAINERS)
            yield Request(method, where, data, sender, _named(path, data))


def query_requests(cloud: Cloud) -> Iterator[Request]:
    """The worst input of every field of every query, each in a request
    line as long as a server takes.
    """
    kinds = {'flavor:instance': {'flavor_id': cloud.flavor_id},
             'physical:host': {'min': '1'},
             'virtual:floatingip': {'network_id': cloud.network_id},
             'virtual:instance': {'vcpus': '1', 'memory_mb': '256'}}
    for route, fields in queries():
        for name, leaf in fields.items():
            query = {}
            if route == '/v1/availability':
                # A search for a reservation of a kind that has the field.
                kind = next((k for k in kinds if name in
                             lease_schemas.RESERVATION_FIELDS[k]),
                            'flavor:instance')
                query = dict(kinds[kind], duration='60')
                query.pop(name, None)
            start = len('GET /reservation%s?%s&%s= HTTP/1.1' % (
                route, urllib.parse.urlencode(query), name))
            # The refused character is sent as %00.
            query[name] = worst(leaf, URL_LIMIT - start - 2)
            path = route[len('/v1'):] + '?' + urllib.parse.urlencode(query)
            yield Request('GET', path, b'', 'admin', name)


def hint_requests(server: dict, start: str, end: str) -> Iterator[Request]:
    """Boots of `server` (a body's ``server``) whose lease hints hold
    the worst input of each field: lease_params as large as it may be (as
    an object; the field is named), and as large as the body may be (as
    an object and as text), and every other hint.
    """
    params = {'name': 'l1', 'start': start, 'end': end}
    prefix = ('os:scheduler_hints', 'lease_params')

    def boot(hints: dict) -> dict:
        return {'server': server, 'os:scheduler_hints': hints}

    def as_text(path, leaf) -> bytes:
        def body(value):
            text = json.dumps(with_value(params, path, value, CONTAINERS))
            return json.dumps(boot({'lease_params': text})).encode()
        # The refused character, escaped twice, takes seven characters.
        return body(worst(leaf, BODY_LIMIT - len(body('')) - 6))

    for path, leaf, _ in body_strings(LEASE_PARAMS):
        value = json.loads(largest(params, path, leaf, containers=CONTAINERS,
                                   limit=LEASE_PARAMS_LIMIT))
        yield Request('POST', '/servers', json.dumps(boot({
            'lease_params': value})).encode(), 'member',
            'lease_params.' + field_name(path))
        yield Request('POST', '/servers', largest(
            boot({'lease_params': params}), prefix + path, leaf,
            containers={prefix + k: v for k, v in CONTAINERS.items()}),
            'member', 'lease_params')
        yield Request('POST', '/servers', as_text(path, leaf), 'member',
                      'lease_params')
    for hint in ('reservation', 'reservation_fallback', 'reserved',
                 'preemptible', 'on_preempt'):
        yield Request('POST', '/servers', largest(
            boot({}), ('os:scheduler_hints', hint), {}), 'member', hint)


def list_requests(cloud: Cloud, start: str, end: str) -> Iterator[Request]:
    """Every list of a lease's body at its most, each in a request that
    is refused (a 400 naming the list's first item, or a 409): the
    costliest work a body may ask for.
    """
    kinds = cloud.reservations()

    def lease(status, field, *reservations, sender='member', **extra):
        body = dict(cloud.lease(start, end), reservations=list(
            reservations), **extra)
        return Request('POST', '/leases', json.dumps(body).encode(), sender,
                       field, status)
    # Ten reservations, each shared with a hundred projects Keystone does
    # not know.
    shared = dict(kinds['flavor:instance'], shared_with=[
        'no-such-project-%03d' % i for i in range(100)])
    yield lease(400, 'reservations[0].shared_with[0]', *[shared] * 10)
    # A series of them, a hundred times: refused by what it would write.
    yield lease(400, 'recurrence.count', *[shared] * 10,
                recurrence={'every': 'day', 'count': 100})
    # The longest series of the most slots there are: refused on the
    # ledger.
    yield lease(409, None, dict(kinds['flavor:instance'], amount=1000),
                recurrence={'every': 'day', 'count': 100})
    yield lease(400, 'reservations[0].hosts[0]', dict(
        kinds['maintenance'], hosts=['no-such-node-%03d' % i
                                     for i in range(100)]), sender='admin')
    yield lease(400, 'reservations[0]', dict(
        kinds['virtual:floatingip'], amount=100, required_floatingips=[
            '192.0.2.%d' % i for i in range(100)]))
    # Ten host reservations of the most hosts, each with 64 requirements.
    yield lease(409, None, *[dict(
        kinds['physical:host'], max=1000, hypervisor_properties=[
            'and'] + [['>=', '$vcpus', str(i)] for i in range(63)])] * 10)
    # Lists of the most items, each as deep and large as the body lets it
    # be: items that are compared with each other, requirements read
    # again for each plan.
    deep = [[[]] * 250 + [i] for i in range(100)]
    yield lease(400, 'reservations[0].shared_with', dict(
        kinds['flavor:instance'], shared_with=deep))
    yield lease(400, 'reservations[0].hypervisor_properties', dict(
        kinds['physical:host'], hypervisor_properties=['and'] + [
            ['and'] + [['>=', '$vcpus', str(i)]] * 60 for i in range(63)]))


def path_requests(cloud: Cloud) -> Iterator[Request]:
    """Every operation with a parameter in its path, the parameter as
    long as a request line takes: each answered 4xx (`status` 0).
    """
    for (method, route), (_, schema, _) in sorted(
            openapi.OPERATIONS.items()):
        if '{' not in route:
            continue
        # A run the parameter's pattern takes, then a NUL (%00).
        value = 'a' * (URL_LIMIT - len(route) - 64) + '%00'
        path = re.sub(r'\{[a-z_]+\}', value, route)[len('/v1'):]
        sender = 'member' if method == 'GET' else 'admin'
        yield Request(method, path, b'{}' if schema else b'', sender, None,
                      0)


def refusal(text: str) -> str:
    """A refusal's message, of the lease API or of Nova."""
    body = json.loads(text)
    if 'error_message' in body:
        return body['error_message']
    return list(body.values())[0]['message']


def names(message: str, field: str) -> bool:
    """Whether a refusal's message names `field` (or an item or a field
    of it) first.
    """
    return re.match('%s[:.[]' % re.escape(field), message) is not None
