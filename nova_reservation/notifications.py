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

"""Notifications of leases and their events, through oslo.messaging on
Nova's transport, with Blazar's event types and payload.

``lease.create``, ``lease.update`` and ``lease.delete`` come from the API
and the boot hook; ``lease.event.<event>`` from the engine, once an event
is done (never for an action that did not happen).  An event's notification
is stored with its outcome, in one transaction, and dropped once sent.
"""

import socket
from typing import Optional

import oslo_messaging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation import views

CONF = conf.CONF

# Engine events that are told, as Blazar names them.
TOLD = ('start', 'end', 'before_end', 'before_start')


def lease_payload(lease_id: str, details=None) -> dict:
    """Blazar's notification payload of a lease (`details`: as the store's
    `leases.details` gives them, read now if not given).
    """
    details = details or db_leases.details(db_api.Context(),
                                           [lease_id])[lease_id]
    lease = details.lease
    view = views.lease(details)
    payload = {k: view[k] for k in (
        'user_id', 'project_id', 'trust_id', 'start_date', 'end_date',
        'status', 'status_reason', 'reservations', 'events', 'name',
        'created_at', 'updated_at', 'degraded', 'idle_since')}
    payload['lease_id'] = lease.id
    return payload


class Notifier:

    def __init__(self, transport=None, publisher: str = 'engine') -> None:
        transport = transport or oslo_messaging.get_notification_transport(
            CONF)
        self._notifier = oslo_messaging.Notifier(
            transport, publisher_id='reservation.%s.%s'
            % (publisher, socket.gethostname()))

    def lease(self, action: str, lease_id: str, details=None,
              changed: Optional[list] = None) -> None:
        """lease.create, lease.update or lease.delete (`details`: the
        lease's, if the caller has read them; `changed`: the fields a
        change changed, given in the payload's ``changed``).
        """
        payload = lease_payload(lease_id, details)
        if changed is not None:
            payload['changed'] = changed
        self._notifier.info({}, 'lease.%s' % action, payload)

    def send(self, event_type: str, payload: dict) -> None:
        self._notifier.info({}, event_type, payload)


def event_notice(event, lease, details) -> Optional[dict]:
    """The notification of a done event, as the store keeps it until it is
    sent (None for an event that is not told).
    """
    if event.event_type not in TOLD:
        return None
    return dict(id=uuidutils.generate_uuid(), lease_id=lease.id,
                event_type='lease.event.%s' % views.EVENT_NAMES[
                    event.event_type],
                payload=jsonutils.dumps(lease_payload(lease.id, details)))


_API_NOTIFIERS: dict = {}


def api_notifier() -> Notifier:
    """The notifier of nova-api (the lease API and the boot hook), one per
    notification configuration.
    """
    key = (tuple(CONF.oslo_messaging_notifications.driver),
           CONF.oslo_messaging_notifications.transport_url,
           CONF.transport_url)
    if key not in _API_NOTIFIERS:
        _API_NOTIFIERS[key] = Notifier(publisher='api')
    return _API_NOTIFIERS[key]
