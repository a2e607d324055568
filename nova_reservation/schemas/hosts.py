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

"""Reservable hosts (os-hosts): enrolment and extra capabilities."""

from nova_reservation.schemas import common

# Names of a host's own fields, which no extra capability may take.
NOT_CAPABILITIES = (
    'id', 'hypervisor_hostname', 'service_name', 'hypervisor_type',
    'hypervisor_version', 'vcpus', 'memory_mb', 'local_gb', 'cpu_info',
    'reservable', 'created_at', 'updated_at', 'trust_id', 'name', 'values')
CAPABILITY = {'type': ['string', 'number', 'boolean', 'null'],
              'maxLength': 255, 'pattern': common.NO_CONTROL,
              'description': 'a string or a number'}
CAPABILITY_NAME = {'maxLength': 64, 'minLength': 1,
                   'pattern': common.NO_CONTROL,
                   'not': {'enum': list(NOT_CAPABILITIES)}}

CREATE = {'type': 'object', 'required': ['name'],
          'properties': {'name': dict(
              common.NAME, description="a compute node's name (its "
              "hypervisor hostname) or UUID")},
          'propertyNames': {'anyOf': [{'const': 'name'}, CAPABILITY_NAME]},
          'additionalProperties': CAPABILITY, 'maxProperties': 64}

_VALUES = {'type': 'object', 'minProperties': 1, 'maxProperties': 64,
           'propertyNames': CAPABILITY_NAME,
           'additionalProperties': CAPABILITY}
# Blazar's clients send {"values": {...}}; the flat form is accepted too.
UPDATE_VALUES = common.strict({'values': _VALUES}, required=('values',))
UPDATE_FLAT = _VALUES
UPDATE = {'anyOf': [UPDATE_VALUES, UPDATE_FLAT]}

# Blazar's resource properties: an extra capability made private or not.
PROPERTY_NAME = dict(CAPABILITY_NAME, type='string')
PROPERTY_CHANGE = common.strict({'private': {'type': 'boolean'}},
                                required=('private',))
