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

"""Idle leases: running, and holding capacity that their servers leave
unused.

At each pass the engine measures, for each running lease, the share of
its reserved vCPUs that its servers use (`capacity.used_share`): a slot of
a server or capacity reservation is used while its server is ACTIVE, a
reserved host by the ACTIVE servers on it.  A lease below
``[reservation] idle_threshold`` is idle from then on (``idle_since`` in
its view); once idle for ``idle_period``, its owner is told
(``lease.idle``) and, with ``idle_action = release``, its unused slots of
capacity reservations and its hosts without servers go back to the pool.
Each idle stretch is told once, with its release, whichever engine gets
there first (`lease.idle.tell`).
"""

import datetime
from typing import Callable

from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import hosts as db_hosts
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import notices as db_notices
from nova_reservation import exception
from nova_reservation.lease import idle as lease_idle
from nova_reservation.lease import kinds
from nova_reservation import notifications

LOG = logging.getLogger(__name__)
CONF = conf.CONF


def _vcpus(server: dict) -> float:
    return (server.get('flavor') or {}).get('vcpus', 0)


class Idle:

    def __init__(self, nova, clock: Callable[[], float], outbox) -> None:
        self.nova = nova
        self.clock = clock
        self.outbox = outbox
        self.ctx = db_api.Context()

    def run(self) -> None:
        threshold = CONF.reservation.idle_threshold
        if not threshold:
            return
        now = epoch.from_epoch(self.clock())
        leases = db_leases.running(self.ctx, now)
        if not leases:
            return
        active = [s for s in self.nova.servers() if s['status'] == 'ACTIVE']
        by_id = {s['id']: s for s in active}
        on_node: dict = {}
        for s in active:
            node = s.get('OS-EXT-SRV-ATTR:hypervisor_hostname')
            on_node[node] = on_node.get(node, 0) + _vcpus(s)
        details = db_leases.details(self.ctx, [x.id for x in leases])
        period = datetime.timedelta(minutes=CONF.reservation.idle_period)
        for lease in leases:
            unused, reserved, used = self._measure(details[lease.id],
                                                   by_id, on_node, now)
            if not reserved:
                continue
            if capacity.used_share(reserved, used) * 100 >= threshold:
                lease_idle.mark(lease.id, None)
                continue
            since = lease.idle_since or now
            if lease.idle_since is None:
                lease_idle.mark(lease.id, since)
            if now - since >= period and lease.idle_told != since:
                self._tell(lease, since, unused,
                           capacity.used_share(reserved, used), now)
        if self.outbox.notifier:
            self.outbox.flush()

    def _measure(self, details, servers: dict, on_node: dict,
                 now: datetime.datetime) -> tuple:
        """([(reservation, slot)] unused, reserved vCPUs, used vCPUs) of a
        lease's slots under way at `now`.
        """
        unused, reserved, used = [], 0.0, 0.0
        for res in details.reservations:
            kind = kinds.of(res.resource_type)
            if kind.holds_addresses:
                continue   # idle is measured by vCPUs
            for slot in db_ledger.slots(self.ctx, res.id):
                if not (slot.start_at <= now < slot.end_at):
                    continue
                reserved += slot.vcpus
                if kind.whole_hosts:
                    taken = min(on_node.get(slot.node, 0), slot.vcpus)
                else:
                    server = servers.get(slot.instance_uuid or '')
                    taken = slot.vcpus if server else 0
                used += taken
                if not taken and slot.instance_uuid is None and \
                        not kind.made_by_boot:
                    unused.append((res, slot))
        return unused, reserved, used

    def _tell(self, lease, since: datetime.datetime, unused: list,
              share: float, now: datetime.datetime) -> None:
        release = CONF.reservation.idle_action == 'release'
        payload = notifications.lease_payload(lease.id)
        payload.update(idle_since=since.isoformat(),
                       used_percent=round(share * 100, 1))
        with db_api.writing(self.ctx):
            given = lease_idle.tell(self.ctx, lease.id, since, unused,
                                    release)
            if given is None:
                return   # another engine told it
            payload['released'] = [{'reservation_id': res.id,
                                    'node': slot.node}
                                   for res, slot in given]
            notice = self.outbox.claim_for(dict(
                id=uuidutils.generate_uuid(), lease_id=lease.id,
                event_type='lease.idle', payload=jsonutils.dumps(payload)))
            db_notices.add(self.ctx, [notice], now)
        LOG.info('Lease %s is idle since %s (%.0f%% used)%s', lease.id,
                 since, share * 100, '; %d slots released' % len(given)
                 if release else '')
        self._hosts_back(given)
        if self.outbox.notifier:
            self.outbox.send([notice])

    def _hosts_back(self, given: list) -> None:
        """Released hosts leave the lease's aggregate for the freepool."""
        hosts = [(res, slot) for res, slot in given
                 if kinds.of(res.resource_type).whole_hosts]
        if not hosts:
            return
        names = {h.hypervisor_hostname: h.service_name
                 for h in db_hosts.get_all(self.ctx)}
        freepool = self.nova.aggregate(CONF.reservation.freepool_name, {})
        for res, slot in hosts:
            host = names.get(slot.node)
            if host is None or res.aggregate_id is None:
                continue
            try:
                self.nova.aggregate_host(res.aggregate_id, host, add=False)
                self.nova.aggregate_host(freepool, host, add=True)
            except (exception.NovaError, exception.NovaNotFound) as e:
                # The lease's end moves it back too.
                LOG.warning('Host %s of idle lease %s stays in its '
                            'aggregate until the end: %s', host,
                            res.lease_id, e)
