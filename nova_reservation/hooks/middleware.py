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
"""The boot-hint hook: a paste filter in nova-api's /v2.1 pipeline.

It turns ``POST /servers`` with the ``lease_params`` hint into a lease
whose capacity the ledger holds before Nova schedules anything, passes the
reservation to the scheduler as the ``reservation`` hint, and shows each
leased server's reservation in the server views.
"""

import re

from oslo_log import log as logging
import webob

from nova_reservation.db import api as db_api
from nova_reservation import exception
from nova_reservation.hooks import boots
from nova_reservation.hooks import faults
from nova_reservation.hooks import servers

LOG = logging.getLogger(__name__)
SERVERS_PATH = re.compile(r'^(/[^/]+)?/servers/?$')
SERVER_VIEW_PATH = re.compile(r'^(/[^/]+)?/servers/(detail|[0-9a-f-]{36})/?$')
SERVER_CHANGE_PATH = re.compile(r'^(/[^/]+)?/servers/([0-9a-f-]{36})(/[^/]*)?')


# What Nova's fault says of an error it did not expect: its class.
DATABASE_ERRORS = tuple('oslo_db.exception.%s' % cls.__name__
                        for cls in db_api.UNAVAILABLE)
DATABASE_FAULT_MESSAGE = ('the request met a database that could not be '
                          'reached or was too busy; try again')


def database_fault(resp: webob.Response) -> bool:
    """Whether Nova's 500 is that of a database connection cut or a
    deadlock.
    """
    message = faults.message_of(resp) or ''
    return any(name in message for name in DATABASE_ERRORS)


class ReservationHook:
    """Routes the server API's requests that concern leases: boots to
    `boots.Boots`, the changes and views of servers to `servers.Servers`.
    """

    def __init__(self, app) -> None:
        self.app = app
        self.boots = boots.Boots(app)
        self.servers = servers.Servers(app)

    @webob.dec.wsgify
    def __call__(self, req: webob.Request):
        try:
            resp = self._route(req)
        except exception.ReservationError as e:
            # What went wrong, in Nova's fault shape (here, once).
            LOG.warning('%s %s: %s', req.method, req.path_info, e)
            return faults.fault_of(e)
        except Exception as e:
            if not db_api.unavailable(e):
                raise
            LOG.warning('%s %s: %s', req.method, req.path_info, e)
            return faults.fault(503, db_api.UNAVAILABLE_MESSAGE)
        if resp.status_int == 500 and database_fault(resp):
            # Nova answers 500 to a request that met its database failing
            # over; it may be tried again.
            LOG.warning('%s %s: %s', req.method, req.path_info,
                        faults.message_of(resp))
            return faults.fault(503, DATABASE_FAULT_MESSAGE)
        return resp

    def _route(self, req: webob.Request):
        if req.method == 'POST' and SERVERS_PATH.match(req.path_info):
            return self.boots.create(req)
        change = SERVER_CHANGE_PATH.match(req.path_info)
        if change and req.method in ('POST', 'PUT') and \
                (change.group(3) or '').startswith('/metadata'):
            refused = self.servers.own_metadata(req)
            if refused is not None:
                return refused
        if change and req.method not in ('GET', 'HEAD'):
            done = self.servers.while_reserved(req, change.group(2),
                                               change.group(3))
            if done is not None:
                return done
        resp = req.get_response(self.app)
        deleted = SERVER_VIEW_PATH.match(req.path_info)
        if req.method == 'DELETE' and deleted and resp.status_int == 204:
            self.servers.deleted(deleted.group(2))
        if (req.method == 'GET' and SERVER_VIEW_PATH.match(req.path_info)
                and resp.status_int == 200):
            self.servers.decorate(resp)
        return resp


def filter_factory(global_conf, **local_conf):
    """Paste filter factory: ``nova_reservation.hooks:filter_factory``."""
    def _factory(app):
        return ReservationHook(app)
    return _factory
