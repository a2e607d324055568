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

"""Floating IP addresses of an external network that an admin registered
(``/v1/floatingips``); at the start they become floating IPs of the
lease's project in Neutron.
"""

import json
from typing import Callable, Optional

from nova_reservation import capacity
from nova_reservation.clients import neutron
from nova_reservation.db import api as db_api
from nova_reservation.db import floatingips as db_floatingips
from nova_reservation.db import ledger as db_ledger
from nova_reservation.exception import ActionFailed
from nova_reservation.exception import AddressUnusable
from nova_reservation.exception import InvalidParam
from nova_reservation.exception import NeutronUnavailable
from nova_reservation.lease import floatingips
from nova_reservation.lease.kinds import base
from nova_reservation.lease.kinds import checks
from nova_reservation.lease import resource_types

STORE = db_api.Context()


class FloatingIP(base.Kind):

    name = resource_types.FLOATINGIP
    # Its network, and its required addresses or none, as in Blazar.
    kept = ('network_id', 'required_floatingips')
    counted = False
    holds_addresses = True
    phase = 1

    def request_fields(self, prefix: str, value: dict,
                       flavor_need: Callable, registered: Callable) -> dict:
        amount = checks.whole(prefix + 'amount', value.get('amount'))
        wanted = checks.addresses(prefix + 'required_floatingips',
                                  value.get('required_floatingips', []))
        if len(wanted) > amount:
            raise InvalidParam(prefix + 'required_floatingips', 'names %d '
                               'addresses; amount is %d' % (len(wanted),
                                                            amount))
        network_id = value['network_id']
        known = registered(network_id)
        if not known:
            raise InvalidParam(prefix + 'network_id', 'network %s has no '
                               'floating IP that leases may take (see '
                               '/v1/floatingips)' % network_id)
        for i, address in enumerate(wanted):
            if address not in known:
                raise InvalidParam(
                    '%srequired_floatingips[%d]' % (prefix, i),
                    '%s is not a floating IP of network %s that leases may '
                    'take' % (address, network_id))
        return dict(
            resource_type=self.name, count=amount, need=floatingips.UNIT,
            network_id=network_id, addresses=wanted)

    def refuses_boots(self, res) -> Optional[str]:
        return ('%s holds floating IPs of lease %s and takes no server'
                % (res.id, res.lease_id))

    def requested(self, req) -> dict:
        return dict(amount=req.count, network_id=req.network_id,
                    required_floatingips=list(req.addresses))

    def keeps(self, prefix: str, res, entry: dict) -> None:
        # Its required addresses may also be emptied (they stay taken).
        field = 'required_floatingips'
        super().keeps(prefix, res, {k: v for k, v in entry.items()
                                    if k != field})
        if field in entry:
            asked = checks.addresses(prefix + field, entry[field])
            if asked and set(asked) != set(json.loads(
                    res.required_floatingips or '[]')):
                raise InvalidParam(prefix + field, 'can not change')

    def describe(self, req) -> str:
        return '%d floating IP(s) of network %s%s' % (
            req.count, req.network_id, ' (%s among them)' % ', '.join(
                req.addresses) if req.addresses else '')

    def place(self, planner, req, eligible: tuple,
              timelines: dict, start: float, end: float) -> Optional[list]:
        units, nodes = planner.addresses(req.network_id)
        if not set(req.addresses) <= set(nodes):
            return None   # one was removed meanwhile
        chosen = capacity.plan_units(
            units, timelines, start, end,
            [nodes[a] for a in req.addresses], req.count)
        return chosen and [capacity.Placed(n, floatingips.UNIT)
                           for n in chosen]

    def start(self, nova, lease, res, writes) -> None:
        """Each address the reservation holds becomes a floating IP of the
        lease's project (all or, this time, none: those made are deleted
        again if one fails).
        """
        try:
            for slot in db_ledger.slots(STORE, res.id):
                row = db_floatingips.get(
                    STORE, slot.node[len(floatingips.PREFIX):])
                neutron.make(row.floating_network_id, row.subnet_id,
                             row.floating_ip_address, lease.project_id,
                             res.id)
        except (AddressUnusable, NeutronUnavailable) as e:
            try:
                neutron.remove(res.network_id, lease.project_id, res.id)
            except NeutronUnavailable:
                pass   # the end removes them
            raise ActionFailed('floating IPs of reservation %s: %s'
                               % (res.id, e))

    def end(self, nova, lease, res, writes) -> None:
        """Its floating IPs are deleted."""
        neutron.remove(res.network_id, lease.project_id, res.id)

    def fields(self, res, servers: list) -> dict:
        return dict(network_id=res.network_id, amount=res.amount,
                    required_floatingips=json.loads(
                        res.required_floatingips or '[]'),
                    resource_id=res.id)
