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

"""The values of a reservation's fields in a lease body, each checked
(pure): a problem is an `InvalidParam` naming the field.  The kinds use
them to read their own fields; the lease API for the rest of a body.
"""

import json
from typing import Optional

from nova_reservation.exception import InvalidParam
from nova_reservation.exception import InvalidRequirements
from nova_reservation.lease import floatingips
from nova_reservation.lease import properties
from nova_reservation.schemas import common as schema_common

MAX_AMOUNT = 1000
MAX_REQUIREMENTS_LENGTH = schema_common.REQUIREMENTS['maxLength']


# The range of each size of a virtual:instance slot.
SLOT_LIMITS = {'vcpus': (1, 4096), 'memory_mb': (1, 2 ** 24),
               'disk_gb': (0, 2 ** 20)}


def whole(field: str, value, minimum: int = 1,
          maximum: int = MAX_AMOUNT) -> int:
    """An integer (or a string of one, as the CLI sends) in range."""
    if isinstance(value, bool) or isinstance(value, float):
        raise InvalidParam(field, 'must be a whole number')
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InvalidParam(field, 'must be a whole number, not %s'
                           % json.dumps(value)[:40])
    if not minimum <= number <= maximum:
        raise InvalidParam(field, 'must be between %d and %d'
                           % (minimum, maximum))
    return number


def parse_affinity(field: str, value) -> Optional[bool]:
    text = str(value).lower()
    if value is None or text in ('none', ''):
        return None
    if text in ('true', 'false'):
        return text == 'true'
    raise InvalidParam(field, 'must be true, false or none')


def parse_requirements(field: str, value,
                       names: Optional[tuple] = None) -> str:
    if value is None:
        return ''
    if not isinstance(value, str):
        value = json.dumps(value)
    # Given as a list, held to the length of its text as well: it is kept
    # as text and read again for each plan.
    if len(value) > MAX_REQUIREMENTS_LENGTH:
        raise InvalidParam(field, 'is longer than %d characters as JSON text'
                           % MAX_REQUIREMENTS_LENGTH)
    try:
        properties.parse(value, names)
    except InvalidRequirements as e:
        raise InvalidParam(field, str(e))
    return value


def addresses(field: str, value: list) -> tuple:
    """Floating IP addresses as they are kept, each once."""
    found = []
    for i, text in enumerate(value):
        try:
            address = floatingips.canonical(text)
        except ValueError:
            raise InvalidParam('%s[%d]' % (field, i), '%s is not an IP address'
                               % json.dumps(text)[:64])
        if address in found:
            raise InvalidParam('%s[%d]' % (field, i), '%s is given twice'
                               % address)
        found.append(address)
    return tuple(found)
