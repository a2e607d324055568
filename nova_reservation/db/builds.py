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

"""Nova's build requests: the boots that Nova is scheduling now.

nova-api writes a boot's build request before it asks for the boot to be
scheduled, and the conductor removes it once the scheduler has claimed the
boot's resources in Placement.  So a boot has either no build request yet
(its scheduling, and the ledger it reads, are still to come), or one, or
its claim is in Placement.  The table is Nova's, in the API database that
holds the store: read only.
"""

import datetime

import sqlalchemy as sa

from nova_reservation.db import api


@api.reader
def in_flight(ctx, since: datetime.datetime) -> set:
    """The servers of the build requests made since `since`."""
    return set(ctx.session.execute(sa.text(
        'SELECT instance_uuid FROM build_requests WHERE created_at >= :since'),
        {'since': since}).scalars())
