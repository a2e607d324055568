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

"""A lease's soft end (``on_end: extend_if_free``): at its end event, the
lease is extended by its own length where its capacity is still free.
"""

import datetime
from typing import Optional

from oslo_log import log as logging

from nova_reservation import exception
from nova_reservation.lease import service as lease_service

LOG = logging.getLogger(__name__)


def extended(lease, now: datetime.datetime,
             outbox) -> Optional[datetime.datetime]:
    """The lease extended by its own length where its capacity is still
    free, at most `max_extensions` times (the update told through
    `outbox`); its new end, or None: it ends.
    """
    if now < lease.end_at:
        return lease.end_at   # extended already (by an engine that died)
    done = lease.extensions or 0
    if done >= (lease.max_extensions or 1):
        return None
    length = (lease.end_at - lease.start_at) / (done + 1)
    told: list = []
    try:
        lease_service.change(
            None, lease,
            {'end_at': lease.end_at + length, 'extensions': done + 1},
            also=lambda ctx: outbox.store_update(ctx, lease.id, told))
    except exception.ReservationError as e:
        LOG.info('Lease %s ends: it could not be extended: %s', lease.id, e)
        return None
    LOG.info('Lease %s extended to %s (soft end)', lease.id,
             lease.end_at + length)
    if told:
        try:
            outbox.send(told)
        except Exception as e:
            # Stored with the extension: sent by a later pass.
            LOG.warning('lease.update of %s could not be sent yet: %s',
                        lease.id, e)
    return lease.end_at + length
