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
"""Boots into capacity and host reservations, as the hook sees them: the
reservation a boot names (its own project's, or one shared with it), an
open reservation an ordinary boot goes into, and the ordinary boot that
``reservation_fallback`` asks for instead of a 409.
"""

import json
from typing import Optional

from oslo_log import log as logging
import webob

from nova_reservation import capacity
from nova_reservation.clients import flavors
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import shares as db_shares
from nova_reservation import exception
from nova_reservation.hooks.faults import fallback_view
from nova_reservation.hooks import params
from nova_reservation.lease import bindings as lease_bindings
from nova_reservation.lease import kinds
from nova_reservation.lease import request as plan_request
from nova_reservation.lease import shares
from nova_reservation.ledger import memory as ledger_mod
from nova_reservation import marks
from nova_reservation import policies
from nova_reservation import status

LOG = logging.getLogger(__name__)
CONF = conf.CONF
SLOTS_HINT = ledger_mod.SLOTS_HINT


class ReservationBoots:
    """What `Boots` does with a boot into a reservation: its `app` (Nova),
    `ctx` (the store's) and `_created` (the servers a boot made).
    """

    def _into_reservation(self, req, ctx, server: dict, rid: Optional[str],
                          hints: dict, body: dict, found, forced,
                          open_match: bool) -> Optional[webob.Response]:
        """Nova's answer to a boot into the reservation it names (`rid`, or its
        flavor's) or, with `open_match`, an open one it fits; None for a boot
        that goes into none.  exception.ReservationUnusable if the one it names
        does not run now or is full.
        """
        res = self._reservation_of_boot(ctx, server, rid)
        if res is None:
            if not open_match or rid == shares.NONE:
                return None
            return self._boot_open(req, ctx, server, hints, body, found)
        if forced:
            raise exception.InvalidParam(
                'availability_zone', 'a boot into a reservation can not '
                'force a host: the reservation chooses')
        hints['reservation'] = res.id
        hints.pop(SLOTS_HINT, None)
        req.body = json.dumps(body).encode('utf-8')
        return self._boot_into(req, ctx, server, res, hints, body, found)

    def _reservation_of_boot(self, ctx, server: dict,
                             rid: Optional[str]):
        """The reservation a boot goes into: the one its ``reservation``
        hint names (`rid`), or whose private flavor it boots; None if
        neither.  exception.ReservationUnusable if it does not run now.
        """
        if rid == shares.NONE:
            return None
        if rid is None:
            flavor_id = flavors.id_of_ref(server.get('flavorRef'))
            if flavor_id is None:
                return None
            res = db_leases.reservation_of_flavor(self.ctx, flavor_id)
            if res is None:
                return None
            rid = res.id
        res = db_leases.reservation(self.ctx, rid)
        # Another project's reservation not shared with this one is as
        # good as none to it.
        if res is None or res.deleted or not shares.row_may_use(
                res, ctx.project_id):
            raise exception.NotFound('reservation: %s not found' % rid)
        if not self._allowed(ctx, res):
            raise exception.NotAllowed(
                'reservation: policy does not allow %s for this user '
                '(%s is shared with this project by project %s)' % (
                    policies.RESERVATIONS_BOOT_SHARED, rid, res.project_id))
        refused = kinds.of(res.resource_type).refuses_boots(res)
        if refused:
            raise exception.Conflict('reservation: %s' % refused)
        lease = db_leases.get(self.ctx, res.lease_id)
        now = db_api.utcnow()
        if not (lease.start_at <= now < lease.end_at) or \
                lease.status not in (status.PENDING, status.ACTIVE):
            raise exception.ReservationUnusable(
                'reservation: lease %s is not active (it is %s, from '
                '%s to %s UTC)' % (lease.id, lease.status,
                                   lease.start_at.replace(microsecond=0),
                                   lease.end_at.replace(microsecond=0)))
        return res

    @staticmethod
    def _allowed(ctx, res) -> bool:
        """Whether the policy lets the boot's project use `res` (its own,
        or one shared with it).
        """
        return res.project_id == ctx.project_id or policies.authorize(
            ctx, policies.RESERVATIONS_BOOT_SHARED,
            {'project_id': ctx.project_id})

    def _claim(self, ctx, res, count: int) -> tuple:
        """(claim, ids of the slots held) of `count` free slots of a capacity
        reservation for the boot (`lease.bindings.claim`).
        """
        return lease_bindings.claim(
            res, count, None if res.project_id == ctx.project_id
            else ctx.project_id)

    def _boot_into(self, req, ctx, server: dict, res, hints: dict,
                   body: dict, found, claimed: Optional[tuple] = None):
        """A boot into a capacity or host reservation (`claimed`: the claim
        and slots held for it already, if they are).
        """
        count = params.server_count(
            server, CONF.reservation.max_servers_per_lease)
        claim = None
        kind = kinds.of(res.resource_type)
        if kind.private_flavor:
            need = params.need(server, found)
            slot = capacity.Resources(res.vcpus, res.memory_mb, res.disk_gb)
            if not need.resources.fits_in(slot):
                raise exception.InvalidParam(
                    'flavorRef', 'the flavor (%s) is larger than the '
                    'reserved slots (%s)' % (need.resources.describe(),
                                             slot.describe()))
            held = plan_request.extras_of(res)
            if not capacity.extras_within(need.extras, held):
                raise exception.InvalidParam(
                    'flavorRef', 'the flavor asks for %s; the reserved '
                    'slots hold %s' % (capacity.extras_text(need.extras),
                                       capacity.extras_text(held) or
                                       'none of it'))
            placed_for = plan_request.traits_of(res)
            if not capacity.assures(placed_for, need.traits):
                raise exception.InvalidParam(
                    'flavorRef', 'the flavor asks for traits %s; the '
                    'reserved slots were placed on nodes with traits %s'
                    % (','.join(need.traits),
                       ','.join(placed_for) or 'of any'))
            claim, held = claimed or self._claim(ctx, res, count)
            hints[SLOTS_HINT] = [str(i) for i in held]
            req.body = json.dumps(body).encode('utf-8')
        try:
            resp = req.get_response(self.app)
        except Exception:
            lease_bindings.release(claim)
            raise
        if resp.status_int >= 400:
            lease_bindings.release(claim)
            return resp
        uuids = self._created(ctx, resp)
        lease_bindings.bind_servers(
            res.lease_id, res.id, uuids, claim=claim,
            bind_event=True,
            take_slots=not kind.whole_hosts,
            project_id=(None if res.project_id == ctx.project_id
                        else ctx.project_id))
        return resp

    def _boot_open(self, req, ctx, server: dict, hints: dict, body: dict,
                   found) -> Optional[webob.Response]:
        """An ordinary boot that an open reservation of its project (or
        shared with it) takes, if one runs whose slots fit it and are free
        (`shares.order` says which first); None if none does.
        """
        # A boot that asks the scheduler for more (a server group, a zone,
        # other hints) is left to it: a slot's node may not be one of
        # those, and a match must never make a boot that would run fail.
        if found is None or hints or server.get('availability_zone'):
            return None
        try:
            need = params.need(server, found)
        except exception.InvalidParam:
            # It asks for what no slot holds: none matches it.
            return None
        count = params.server_count(
            server, CONF.reservation.max_servers_per_lease)
        fitting = {res.id: (res, lease) for res, lease in
                   db_shares.open_reservations(
                       self.ctx, ctx.project_id, kinds.WITH_FLAVOR,
                       db_api.utcnow())
                   if need.resources.fits_in(capacity.Resources(
                       res.vcpus, res.memory_mb, res.disk_gb)) and
                   capacity.extras_within(need.extras,
                                          plan_request.extras_of(res)) and
                   capacity.assures(plan_request.traits_of(res),
                                    need.traits) and
                   self._allowed(ctx, res)}
        for choice in shares.order(shares.Candidate(
                res.id, lease.end_at, res.created_at,
                res.project_id == ctx.project_id)
                for res, lease in fitting.values()):
            res = fitting[choice.reservation_id][0]
            try:
                claimed = self._claim(ctx, res, count)
            except (exception.ReservationUnusable, exception.NotFound):
                continue   # full, or no longer shared: the next one
            hints['reservation'] = res.id
            LOG.info('An ordinary boot of project %s goes into open '
                     'reservation %s', ctx.project_id, res.id)
            return self._boot_into(req, ctx, server, res, hints, body,
                                   found, claimed)
        return None

    def _fallback(self, req, ctx, server: dict, hints: dict, body: dict,
                  rid: str, why: str) -> webob.Response:
        """A boot into reservation `rid` that found it full or not started
        (`why`), run as an ordinary boot as its ``reservation_fallback``
        hint asks: marked, so that its view says so.
        """
        hints.pop('reservation', None)
        hints.pop(SLOTS_HINT, None)
        metadata = server.setdefault('metadata', {})
        if isinstance(metadata, dict):
            metadata[marks.FALLBACK_OF] = rid
        req.body = json.dumps(body).encode('utf-8')
        LOG.info('A boot of project %s runs as an ordinary boot: %s',
                 ctx.project_id, why)
        resp = req.get_response(self.app)
        if resp.status_int < 400:
            data = resp.json_body
            if isinstance(data.get('server'), dict):
                data['server']['reservation'] = fallback_view(rid)
                resp.json_body = data
        return resp
