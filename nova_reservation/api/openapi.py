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

"""The lease API's OpenAPI 3.1 description, made from its route table and
the request schemas, served at ``/v1/openapi.json`` and kept in the
repository as ``doc/openapi.json`` (``python -m nova_reservation.api``).
"""

import json
import re

from nova_reservation.schemas import approvals
from nova_reservation.schemas import availability
from nova_reservation.schemas import floatingips
from nova_reservation.schemas import hosts
from nova_reservation.schemas import leases
from nova_reservation.schemas import ledger
from nova_reservation.schemas import quotas

ERROR = {'type': 'object', 'required': ['error_code', 'error_name',
                                        'error_message'],
         'properties': {'error_code': {'type': 'integer'},
                        'error_name': {'type': 'string'},
                        'error_message': {'type': 'string'}}}
# What each operation takes and answers: (summary, body schema, success
# status).
OPERATIONS = {
    ('GET', '/v1/leases'): ('List leases', None, 200),
    ('POST', '/v1/leases'): ('Create a lease', leases.CREATE, 201),
    ('GET', '/v1/leases/{id}'): ('Show a lease', None, 200),
    ('PUT', '/v1/leases/{id}'): ('Change a lease', leases.UPDATE, 200),
    ('DELETE', '/v1/leases/{id}'): ('Delete a lease', None, 204),
    ('POST', '/v1/leases/{id}/split'): (
        'Hand part of a reservation on to a new lease', leases.SPLIT, 201),
    ('POST', '/v1/leases/{id}/approve'): (
        'Approve a lease that waits for approval (admin)',
        approvals.DECISION, 200),
    ('POST', '/v1/leases/{id}/reject'): (
        'Reject a lease that waits for approval (admin)',
        approvals.DECISION, 200),
    ('POST', '/v1/leases/{id}/events/{event_id}/retry'): (
        'Run a failed event again (admin)', None, 202),
    ('GET', '/v1/availability'): (
        'When a reservation would fit: its start windows', None, 200),
    ('GET', '/v1/ledger'): (
        'The ledger as a calendar: allocations per node, free capacity per '
        'flavor', None, 200),
    ('GET', '/v1/os-hosts'): ('List reservable hosts (admin)', None, 200),
    ('POST', '/v1/os-hosts'): ('Make a compute node reservable (admin)',
                               hosts.CREATE, 201),
    ('GET', '/v1/os-hosts/allocations'): (
        'Allocations of every reservable host (admin)', None, 200),
    ('GET', '/v1/os-hosts/{id}/allocation'): (
        'Allocations of one reservable host (admin)', None, 200),
    ('GET', '/v1/os-hosts/properties'): (
        'Extra capabilities of the reservable hosts (admin)', None, 200),
    ('PATCH', '/v1/os-hosts/properties/{name}'): (
        'Make an extra capability private, or not (admin)',
        hosts.PROPERTY_CHANGE, 200),
    ('GET', '/v1/os-hosts/{id}'): ('Show a reservable host (admin)', None,
                                   200),
    ('PUT', '/v1/os-hosts/{id}'): ('Change extra capabilities (admin)',
                                   hosts.UPDATE, 200),
    ('DELETE', '/v1/os-hosts/{id}'): ('Remove a reservable host (admin)',
                                      None, 204),
    ('GET', '/v1/floatingips'): (
        'List the floating IPs leases may take (admin)', None, 200),
    ('POST', '/v1/floatingips'): (
        'Register a floating IP that leases may take (admin)',
        floatingips.CREATE, 201),
    ('GET', '/v1/floatingips/{id}'): ('Show a registered floating IP '
                                      '(admin)', None, 200),
    ('DELETE', '/v1/floatingips/{id}'): ('Remove a registered floating IP '
                                         '(admin)', None, 204),
    ('GET', '/v1/quotas/{project_id}'): (
        'A project\'s reservation quota and its use', None, 200),
    ('PUT', '/v1/quotas/{project_id}'): (
        'Set a project\'s reservation quota (admin)', quotas.UPDATE, 200),
    ('GET', '/v1/openapi.json'): ('This description', None, 200),
}
# The query parameters an operation takes: the search's own, and one
# reservation's fields, as a lease holds them.
QUERIES = {('GET', '/v1/availability'): dict(
    availability.SEARCH['properties'], **{
        field: {'type': 'string', 'maxLength': 4096}
        for field in ('resource_type', 'flavor_id', 'amount', 'affinity',
                      'vcpus', 'memory_mb', 'disk_gb', 'min', 'max',
                      'hypervisor_properties', 'resource_properties',
                      'network_id', 'required_floatingips')}),
           ('GET', '/v1/ledger'): ledger.QUERY['properties']}
QUERIES[('GET', '/v1/leases')] = {'status': {
    'type': 'string', 'maxLength': 32,
    'description': 'only the leases in this status (PENDING_APPROVAL: '
                   'those waiting for approval)'}}
# The one body that may be left out: a decision's reason.
OPTIONAL_BODY = approvals.DECISION
REQUIRED = {('GET', '/v1/availability'): availability.SEARCH['required']}
REFUSALS = {'400': 'Bad input; the message names the field',
            '401': 'Not authenticated', '403': 'Not allowed by policy',
            '404': 'No such resource', '409': 'Conflict with the state or '
            'the capacity', '413': 'Body too large',
            '415': 'Body not JSON'}


def template(pattern: str) -> str:
    """``/v1/leases/(?P<id>[^/]+)`` as ``/v1/leases/{id}``."""
    return re.sub(r'\(\?P<([a-z_]+)>[^)]*\)', r'{\1}', pattern)


def _operation(method: str, path: str) -> dict:
    summary, body, status = OPERATIONS[(method, path)]
    op = {'summary': summary, 'operationId': '%s %s' % (method, path),
          'responses': {str(status): {'description': 'Done'}}}
    if status != 204:
        op['responses'][str(status)]['content'] = {
            'application/json': {'schema': {'type': 'object'}}}
    for code, text in REFUSALS.items():
        if code in ('413', '415') and body is None:
            continue
        op['responses'][code] = {'description': text, 'content': {
            'application/json': {'schema': {
                '$ref': '#/components/schemas/Error'}}}}
    params = [{'name': p, 'in': 'path', 'required': True,
               'schema': {'type': 'string', 'maxLength': 255}}
              for p in re.findall(r'{([a-z_]+)}', path)]
    query = QUERIES.get((method, path), {})
    params += [{'name': name, 'in': 'query',
                'required': name in REQUIRED.get((method, path), ()),
                'schema': schema} for name, schema in sorted(query.items())]
    if params:
        op['parameters'] = params
    if body is not None:
        op['requestBody'] = {
            'required': body is not OPTIONAL_BODY,
            'content': {'application/json': {'schema': body}}}
    return op


def document(routes) -> dict:
    """The description of the (method, pattern, handler) `routes`."""
    paths = {}
    for method, pattern, _handler in routes:
        path = template(pattern)
        paths.setdefault(path, {})[method.lower()] = _operation(method,
                                                                path)
    return {
        'openapi': '3.1.0',
        'info': {'title': 'nova-reservation lease API (Blazar v1 '
                          'compatible)', 'version': '1.0',
                 'license': {'name': 'Apache-2.0',
                             'identifier': 'Apache-2.0'}},
        'servers': [{'url': '/reservation'}],
        'security': [{'keystone': []}],
        'paths': paths,
        'components': {
            'schemas': {'Error': ERROR},
            'securitySchemes': {'keystone': {
                'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token'}}},
    }


def text(routes) -> str:
    return json.dumps(document(routes), indent=2, sort_keys=True) + '\n'
