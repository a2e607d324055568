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

"""GET /v1/availability: the search's own query parameters.  The rest of
the query is one reservation, as a lease holds it (`leases.RESERVATION`).
"""

from nova_reservation.schemas import common

DURATION = {'type': 'string', 'maxLength': 8,
            'pattern': r'^[1-9][0-9]{0,6}[mhdw]?$',
            'description': 'how long the lease lasts: minutes, or a number '
            'with a unit m, h, d or w (90, 90m, 2h, 1d, 1w)'}
LIMIT = {'type': 'string', 'maxLength': 3, 'pattern': r'^[1-9][0-9]{0,2}$',
         'description': 'at most this many windows (1 to 100)'}

SEARCH = common.strict({
    'duration': DURATION,
    'after': common.START,
    'before': common.DATE,
    'limit': LIMIT,
}, required=('duration',))
FIELDS = tuple(SEARCH['properties'])
