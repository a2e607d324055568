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

"""Leases: the lease_params hint of a boot, and the lease API's bodies."""

from nova_reservation.schemas import common

# extend_if_free: at the end, extended by its own length where its
# capacity is still free (at most max_extensions times), else deleted.
EXTEND_IF_FREE = 'extend_if_free'
ON_END_ACTIONS = ('delete', 'shelve', 'snapshot', 'none', EXTEND_IF_FREE)
ON_END = {'type': 'string', 'enum': list(ON_END_ACTIONS)}
MAX_EXTENSIONS = {'type': 'integer', 'minimum': 1, 'maximum': 100,
                  'description': 'how many times extend_if_free extends'}

# A retried create with the same token (per project) gives the same lease.
CLIENT_TOKEN = {'type': 'string', 'minLength': 1, 'maxLength': 64,
                'pattern': common.NO_CONTROL,
                'description': 'a token of the client\'s choosing: a '
                               'create retried with it returns the same '
                               'lease'}

# A lease that does not fit: refused (409), or waiting for room. A
# waiting lease is placed at its start, or with flexible_start at the
# earliest start that fits up to start_before; with retries, it is tried
# that many times, retry_interval minutes apart, then refused.
IF_BUSY_ACTIONS = ('refuse', 'wait')
WAITING_FIELDS = {
    'if_busy': {'type': 'string', 'enum': list(IF_BUSY_ACTIONS)},
    'flexible_start': {'type': 'boolean'},
    'start_before': common.DATE,
    'retries': {'type': 'integer', 'minimum': 1, 'maximum': 1000,
                'description': 'how many times a waiting lease is tried'},
    'retry_interval': {'type': 'integer', 'minimum': 1, 'maximum': 10080,
                       'description': 'minutes between two tries'},
}

# A recurring lease: the same interval every day or week, `count` times
# or until a date (the last occurrence starts on or before it).
RECURRENCE = common.strict({
    'every': {'type': 'string', 'enum': ['day', 'week']},
    'count': {'type': 'integer', 'minimum': 1, 'maximum': 100,
              'description': 'how many occurrences (1 to 100)'},
    'until': common.DATE,
}, required=('every',))

LEASE_PARAMS = common.strict({
    'name': common.NAME,
    'start': common.START,
    'end': common.DATE,
    'on_end': ON_END,
    'max_extensions': MAX_EXTENSIONS,
    'before_end': {'type': 'integer', 'minimum': 1, 'maximum': 10 ** 7,
                   'description': 'minutes before the end'},
    'client_token': CLIENT_TOKEN,
    'recurrence': RECURRENCE,
    **WAITING_FIELDS,
}, required=('name', 'start', 'end'))

# The other projects that may boot into a capacity or host reservation,
# and whether ordinary boots use it unasked (`nova_reservation.lease.shares`).
PROJECT_ID = {'type': 'string', 'minLength': 1, 'maxLength': 64,
              'pattern': '^[0-9A-Za-z_.-]+$',
              'description': 'a Keystone project id'}
SHARED_WITH = {'type': 'array', 'maxItems': 100, 'uniqueItems': True,
               'items': PROJECT_ID,
               'description': 'the other projects that may boot into it'}
MATCHING = {'type': 'string', 'enum': ['targeted', 'open'],
            'description': 'targeted: only boots that name it; open: '
                           'also the ordinary boots that fit it'}
SHARING = {'shared_with': SHARED_WITH, 'matching': MATCHING}

RESERVATION_FIELDS = {
    'physical:host': {
        'min': common.WHOLE, 'max': common.WHOLE,
        'hypervisor_properties': common.REQUIREMENTS,
        'resource_properties': common.REQUIREMENTS,
        'before_end': {'type': ['string', 'null'],
                       'enum': ['default', 'snapshot', '', None]},
        **SHARING,
    },
    'flavor:instance': {
        'flavor_id': {'type': ['string', 'integer'], 'minLength': 1,
                      'maxLength': 255, 'pattern': common.NO_CONTROL,
                      'description': 'a flavor id'},
        'amount': common.WHOLE, 'affinity': common.AFFINITY,
        'resource_properties': common.REQUIREMENTS,
        **SHARING,
    },
    'virtual:instance': {
        'vcpus': common.WHOLE, 'memory_mb': common.WHOLE,
        'disk_gb': common.WHOLE, 'amount': common.WHOLE,
        'affinity': common.AFFINITY,
        'resource_properties': common.REQUIREMENTS,
        **SHARING,
    },
}
# Blazar's floating IP reservation: `amount` addresses of an external
# network, the `required_floatingips` among them.
ADDRESS = {'type': 'string', 'minLength': 2, 'maxLength': 45,
           'pattern': '^[0-9a-fA-F.:]+$',
           'description': 'an IPv4 or IPv6 address'}
ADDRESSES = {'type': 'array', 'maxItems': 100, 'items': ADDRESS}
RESERVATION_FIELDS['virtual:floatingip'] = {
    'network_id': dict(common.UUID, description='the id of an external '
                       'network'),
    'amount': common.WHOLE,
    'required_floatingips': ADDRESSES,
}
# An admin's maintenance window: the compute nodes it holds whole, and
# why (the reason their compute services are disabled with).
NODE_NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
             'pattern': '^[0-9A-Za-z_.:@-]+$',
             'description': 'a compute node (hypervisor) or host name'}
RESERVATION_FIELDS['maintenance'] = {
    'hosts': {'type': 'array', 'minItems': 1, 'maxItems': 100,
              'uniqueItems': True, 'items': NODE_NAME,
              'description': 'the compute nodes the window holds whole'},
    'reason': dict(common.NAME, description='why (1 to 255 characters): '
                   'the compute services are disabled with it'),
}
RESOURCE_TYPE = {'type': 'string', 'enum': sorted(RESERVATION_FIELDS)}
REQUIRED = {'physical:host': ['min', 'max'],
            'flavor:instance': ['flavor_id', 'amount'],
            'virtual:instance': ['vcpus', 'memory_mb', 'amount'],
            'virtual:floatingip': ['network_id', 'amount'],
            'maintenance': ['hosts', 'reason']}

RESERVATION = {
    'type': 'object',
    'required': ['resource_type'],
    'properties': {'resource_type': RESOURCE_TYPE},
    # One set of fields per type.
    'allOf': [{
        'if': {'properties': {'resource_type': {'const': kind}},
               'required': ['resource_type']},
        'then': common.strict(dict(fields, resource_type=RESOURCE_TYPE),
                              required=REQUIRED[kind]),
    } for kind, fields in sorted(RESERVATION_FIELDS.items())],
}

# Any body, before its dates are read (they are checked first).
OBJECT = {'type': 'object'}

# The lease's own fields, in a creation and in a change.
LEASE_FIELDS = {
    'name': common.NAME,
    'start_date': common.START,
    'end_date': common.DATE,
    'before_end_date': {'anyOf': [common.DATE, {'type': 'null'},
                                  {'const': ''}]},
}

CREATE = common.strict(dict(
    LEASE_FIELDS,
    # None at all, as Blazar allows: a lease that holds nothing (yet).
    reservations={'type': 'array', 'maxItems': 10, 'items': RESERVATION},
    events={'type': 'array', 'maxItems': 0},
    client_token=CLIENT_TOKEN,
    on_end=ON_END,
    max_extensions=MAX_EXTENSIONS,
    recurrence=RECURRENCE,
    **WAITING_FIELDS,
), required=('name', 'start_date', 'end_date'))

# A change of a reservation: which one, its new size and, before the
# start, its new shape.
RESERVATION_CHANGE = common.strict({
    'id': common.UUID,
    'resource_type': RESOURCE_TYPE,
    'amount': common.WHOLE, 'min': common.WHOLE, 'max': common.WHOLE,
    'vcpus': common.WHOLE, 'memory_mb': common.WHOLE,
    'disk_gb': common.WHOLE, 'affinity': common.AFFINITY,
    'hypervisor_properties': common.REQUIREMENTS,
    'resource_properties': common.REQUIREMENTS,
    'network_id': common.UUID, 'required_floatingips': ADDRESSES,
    **SHARING,
}, required=('id',))

UPDATE = common.strict(dict(
    LEASE_FIELDS,
    reservations={'type': 'array', 'maxItems': 10,
                  'items': RESERVATION_CHANGE},
), minProperties=1)

# A split: `amount` slots (or hosts) of one of the lease's reservations
# handed on to a new lease, of another project for an admin.
SPLIT = common.strict({
    'reservation_id': common.UUID,
    'amount': common.WHOLE,
    'project_id': PROJECT_ID,
    'name': common.NAME,
}, required=('reservation_id', 'amount'))
