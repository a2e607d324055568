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

"""A project's reservation quota (PUT /v1/quotas/{project_id})."""

from nova_reservation.schemas import common
from nova_reservation.schemas import leases

# A limit: a whole number, -1 for none, null for the tag's or the
# default again.
LIMIT = {'type': ['integer', 'null'], 'minimum': -1, 'maximum': 10 ** 12,
         'description': 'the most (a whole number), -1 for no limit, or '
                        'null for the project\'s tag or the cloud\'s '
                        'default again'}
# A resource class's limits (not those of vCPU, RAM and disk, which the
# fields above are): its units at any instant (the class's name) and its
# unit-hours per month (`quotas.class_limit`).
# (jsonschema searches: \Z, as $ would match before a final newline.)
CLASS_LIMIT = (r'^(?!(VCPU|MEMORY_MB|DISK_GB)(_hours_per_month)?\Z)'
               r'([A-Z][A-Z0-9_]{0,254}|[A-Z][A-Z0-9_]{0,238}'
               r'_hours_per_month)\Z')
_LIMITS = common.strict({
    'vcpus': LIMIT,
    'memory_mb': LIMIT,
    'hosts': LIMIT,
    'vcpu_hours_per_month': LIMIT,
}, minProperties=1, maxProperties=64,
    patternProperties={CLASS_LIMIT: LIMIT})
UPDATE = common.strict({'quota': _LIMITS}, required=('quota',))
PROJECT_ID = leases.PROJECT_ID
