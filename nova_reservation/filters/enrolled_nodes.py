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

"""Which nodes the filter keeps for host reservations: those enrolled as
reservable hosts, by node.  Nova's aggregates hold a service's host, and
one nova-compute service may serve many nodes (bare metal).
"""

import time

from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import hosts as db_hosts
from nova_reservation.ledger import refresher
from nova_reservation import marks

CONF = conf.CONF


class EnrolledNodes:
    """{service host: its nodes enrolled as reservable hosts}, as the
    ledger's copy: at most `ledger_max_age` old, kept so by a thread of
    its own, so that no request reads the database; the hosts are read
    again only when one was enrolled, changed or removed.
    """

    def __init__(self) -> None:
        # (when the read began (time.monotonic()), the hosts' mark, the
        # nodes): a new tuple at each read.
        self._known: tuple = (float('-inf'), None, {})
        self._refresher = refresher.Refresher(self.refresh,
                                              'enrolled-nodes')

    def refresh(self) -> None:
        began = time.monotonic()
        ctx = db_api.Context()
        mark = db_hosts.mark(ctx)
        nodes = self._known[2]
        if mark != self._known[1]:
            found: dict = {}
            for h in db_hosts.get_all(ctx):
                found.setdefault(h.service_name, set()).add(
                    h.hypervisor_hostname)
            nodes = {host: frozenset(n) for host, n in found.items()}
        self._known = (began, mark, nodes)

    def __call__(self) -> dict:
        max_age = CONF.reservation.ledger_max_age
        if max_age > 0:
            self._refresher.start(max_age / 2)
        if time.monotonic() - self._known[0] > max_age:
            self.refresh()
        return self._known[2]

    def close(self) -> None:
        """Stop the thread and forget what was read."""
        self._refresher.stop()
        self._known = (float('-inf'), None, {})


def set_aside(host_state, freepool: str, verdicts: dict,
              enrolled: dict) -> bool:
    """Whether a host state's node is set aside for host reservations:
    its service's host is in the freepool or in a host reservation's
    aggregate, and the node is one of those enrolled.

    Nova's aggregates hold a service's host, and one service may serve
    many nodes (bare metal): `enrolled` ({service host: its enrolled
    nodes}, up to `ledger_max_age` old) tells which; a service it does
    not know yet (just enrolled) is set aside whole, as its aggregate
    says.  `verdicts` ({id(aggregate): bool}) lives for one request: the
    host states share the host manager's aggregate objects, whose fields
    are slow to read, so each is looked at once.
    """
    for agg in host_state.aggregates:
        verdict = verdicts.get(id(agg))
        if verdict is None:
            verdict = verdicts[id(agg)] = (
                agg.name == freepool or marks.LEASE_ID in agg.metadata)
        if verdict:
            nodes = enrolled.get(host_state.host)
            return nodes is None or host_state.nodename in nodes
    return False
