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

"""Usage enforcement as Blazar does it: the filters of ``[enforcement]
enabled_filters`` judge each lease when it is created and changed (and
may refuse it), and are told when it ends.

`check_create` and `check_update` raise its errors; the lease service calls
them before it writes anything.  `on_end` never raises: the end of a
lease does not wait on a filter.
"""

from typing import Iterable, Optional

from oslo_log import log as logging

from nova_reservation.clients import trusts
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.enforcement import body
from nova_reservation.enforcement import filters
from nova_reservation import exception

LOG = logging.getLogger(__name__)
CONF = conf.CONF


def enabled() -> list:
    """The enabled filters, read from the options each time (so that a
    change of them needs no restart where the options are reloaded);
    EnforcementMisconfigured for a name that is none of them.
    """
    found = []
    for name in CONF.enforcement.enabled_filters:
        if name not in filters.FILTERS:
            LOG.error('[enforcement] enabled_filters names %r, which is '
                      'not one of %s', name, ', '.join(sorted(
                          filters.FILTERS)))
            raise exception.EnforcementMisconfigured(
                'Usage enforcement is misconfigured (an unknown filter is '
                'enabled); try again later', filter=name)
        found.append(filters.FILTERS[name]())
    return found


def auth_url() -> Optional[str]:
    """The Keystone URL the context names."""
    if CONF.enforcement.auth_url:
        return CONF.enforcement.auth_url
    try:
        return getattr(trusts.auth(), 'auth_url', None)
    except Exception:   # no credentials of a kind that has a URL
        return None


def _context(user_id: str, project_id: str) -> dict:
    return body.context(user_id, project_id, auth_url(),
                        CONF.reservation.region_name)


def check_create(ctx, values: dict, requests: Iterable) -> None:
    """Judge the lease a caller (`ctx`) asks for: its values (columns)
    and its requests; a filter's error.
    """
    found = enabled()
    if not found:
        return
    context = _context(ctx.user_id, ctx.project_id)
    lease = body.new_lease(values, ctx.user_id, ctx.project_id, requests)
    for check in found:
        check.check_create(context, lease)


def _slots(store):
    return lambda reservation_id: db_ledger.slots(store, reservation_id)


def check_update(lease, values: dict, growth: Iterable = ()) -> None:
    """Judge a change of `lease` (its row) to `values` (columns) and the
    reservations' new columns (`growth`: [(request, columns)]); a filter's
    error.
    """
    found = enabled()
    if not found:
        return
    store = db_api.Context()
    reservations = db_leases.reservations(store, lease.id)
    current = body.stored_lease(lease, reservations, _slots(store))
    new = body.changed_lease(lease, values, reservations, list(growth),
                             _slots(store))
    context = _context(lease.user_id, lease.project_id)
    for check in found:
        check.check_update(context, current, new)


def on_end(lease) -> None:
    """Tell the filters that `lease` (its row) ends or is deleted; what
    fails is logged.
    """
    try:
        found = enabled()
        if not found:
            return
        store = db_api.Context()
        context = _context(lease.user_id, lease.project_id)
        values = body.stored_lease(
            lease, db_leases.reservations(store, lease.id),
            lambda rid: db_ledger.slots(store, rid, deleted=True))
    except Exception as e:
        LOG.warning('Lease %s: its end could not be told to the usage '
                    'enforcement filters: %s', lease.id, e)
        return
    for check in found:
        try:
            check.on_end(context, values)
        except Exception as e:
            LOG.warning('Lease %s: usage enforcement filter %s at its end: '
                        '%s', lease.id, type(check).__name__, e)
