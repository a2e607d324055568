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

"""/v1/availability: when a reservation would fit ("then when?")."""

from nova_reservation.api.handlers import floatingips
from nova_reservation.api import validation
from nova_reservation.api import wsgi
from nova_reservation.clients import flavors
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.lease import write as lease_write
from nova_reservation import policies
from nova_reservation import views

CONF = conf.CONF


def show_availability(ctx, req):
    """The start windows in which a reservation fits, read only."""
    wsgi.authorize(ctx, policies.AVAILABILITY_GET)
    now = db_api.utcnow()
    wanted, after, before, duration, limit = validation.availability(
        wsgi.query(req), now, CONF.reservation.max_lease_duration,
        CONF.reservation.max_advance, CONF.reservation.search_horizon,
        flavors.need_finder(ctx), floatingips.registered)
    found = lease_write.shared().windows(wanted, after, before, duration,
                                         limit)
    return wsgi.json_response(200, {'availability': {
        'request': wanted.describe(),
        'duration_minutes': duration / 60,
        'after': views.date(after), 'before': views.date(before),
        'earliest_start': views.date(found[0][0]) if found else None,
        'windows': [{'earliest': views.date(a), 'latest': views.date(b)}
                    for a, b in found]}})
