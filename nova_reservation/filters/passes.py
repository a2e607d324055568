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

"""Passes: two ordinary boots that two schedulers filter at once do not
share a promised node's last room.

A nova-scheduler counts the servers that computes report (Nova's host
states), what Placement counted at its last read
(`placement_usage.Usage`) and its own decisions; a boot that another
scheduler has filtered and not yet claimed is in none of them. So each
promised node that the filter lets an ordinary boot onto gets a pass
(`db.passes`): the boot's server, the node and what the server takes
(GPUs too), written under a lock, and only if the other passes are still
those the decision counted: the schedulers decide one after the other. A
decision counts the other boots' passes so:

- first, each pass that the last read of Placement may lack (made less
  than `boot_settle_timeout` before that read began): a node where the
  boot fits beside all of them is admitted (most nodes, most of the time);
- on a node where it does not, Placement is asked about each of those
  boots: one that claimed on that node is counted by a fresh read of the
  node's usage, one that claimed elsewhere not at all, one that has not
  claimed (in flight) by its pass, until it is `boot_settle_timeout` old
  (by then it has claimed, or it never will);
- while no other node takes the boot, a node refused only for boots in
  flight is waited for, the lock let go meanwhile, until they have
  claimed or are that old.

A decision that lost the lock to a writer on another Galera node (a
deadlock once `api.writer`'s retries are spent) or met the store failing
over is made again, until that deadline; where the store or Placement
still does not answer, no promised node is admitted: the boot goes
elsewhere or is refused, never overbooks.
"""

import time
from typing import Callable, Dict, NamedTuple, Optional

from oslo_log import log as logging

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.clients import placement_usage
from nova_reservation import conf
from nova_reservation.db import api as db_api
from nova_reservation.db import passes as db_passes
from nova_reservation import exception

LOG = logging.getLogger(__name__)
CONF = conf.CONF

# Seconds that two controllers' clocks may differ by.
CLOCK_SKEW = 1.0
# Seconds between two looks at the boots a decision waits for.
POLL = 0.25


class Candidate(NamedTuple):
    """A promised node where the boot fits by the scheduler's own count."""
    provider: str       # the node's resource provider in Placement
    # fits(pending, pending_extras, found): whether the boot fits with
    # `pending` (capacity.Resources) and `pending_extras` (its classes
    # beyond those) more in use, on Placement's count `found` (as `read`
    # gives it; None: the last read of every node).
    fits: Callable[[capacity.Resources, tuple, Optional[tuple]], bool]
    # read(): Placement's count of the node now.
    read: Callable[[], tuple]


# What other boots take on a node: (capacity.Resources, extras).
NOTHING = (capacity.ZERO, capacity.NO_EXTRAS)


def _more(pending: tuple, row) -> tuple:
    return (pending[0] + db_passes.need_of(row),
            capacity.extras_sum(pending[1], db_passes.extras_of(row)))


class Passes:
    """The decisions of one scheduler process."""

    def __init__(self, usage: placement_usage.Usage,
                 clock: Callable[[], float] = time.time) -> None:
        self.usage = usage
        self.clock = clock

    def admit(self, instance_uuid: str, need: capacity.Resources,
              extras: tuple, candidates: Dict[str, Candidate],
              read_at: float, wait: bool) -> set:
        """Those of `candidates` ({node: Candidate}) that the boot of
        `instance_uuid` (taking `need` and `extras`) may go to beside the
        other schedulers' boots; `read_at`: when the read of Placement that
        the candidates' fits use began (0: none); `wait`: no other node
        takes the boot, so a node refused only for boots in flight is
        waited for.
        """
        settle = CONF.reservation.boot_settle_timeout
        read_at = read_at or (self.clock() - db_passes.KEPT.total_seconds())
        since = epoch.from_epoch(read_at - settle - CLOCK_SKEW)
        # By then each boot in flight now has claimed or never will.
        deadline = time.monotonic() + settle + CLOCK_SKEW + POLL
        ctx = db_api.Context()
        while True:
            try:
                rows = db_passes.others(ctx, instance_uuid, candidates, since)
                admitted, waiting = self._judge(rows, self.clock(),
                                                candidates, settle)
                late = time.monotonic() >= deadline
                if not (waiting and wait and not admitted and not late):
                    if db_passes.record(ctx, instance_uuid, candidates,
                                        since, need, extras,
                                        {r.id for r in rows}, admitted):
                        return admitted
                    if late:
                        raise RuntimeError('other boots kept deciding')
                    continue   # others decided meanwhile: again
                LOG.info('ReservationFilter: the boot of %s waits for the '
                         'boots in flight on %s', instance_uuid,
                         ', '.join(sorted(waiting)))
            except Exception as error:
                # Another node's writer won the lock, or the store or
                # Placement is failing over: again, while the boots in
                # flight may still be waited for.
                if (db_api.unavailable(error) or isinstance(
                        error, exception.PlacementUnavailable)) and \
                        time.monotonic() < deadline:
                    time.sleep(POLL)
                    continue
                LOG.warning('ReservationFilter: the boots in flight could '
                            'not be counted; the boot of %s is kept off '
                            'promised nodes', instance_uuid, exc_info=True)
                return set()
            time.sleep(POLL)

    def _judge(self, others: list, now: float,
               candidates: Dict[str, Candidate], settle: float) -> tuple:
        """(admitted nodes, nodes refused only for boots in flight)."""
        pending = {node: NOTHING for node in candidates}
        for row in others:
            pending[row.node] = _more(pending[row.node], row)
        admitted = {node for node, more in pending.items()
                    if more == NOTHING or
                    candidates[node].fits(*more, None)}
        left: dict = {}
        for row in others:
            if row.node not in admitted:
                left.setdefault(row.node, []).append(row)
        claims = {uuid: self.usage.claims(uuid) for uuid in sorted(
            {row.instance_uuid for rows in left.values() for row in rows})}
        waiting = set()
        for node, here in sorted(left.items()):
            candidate = candidates[node]
            in_flight = NOTHING
            for row in here:
                if not claims[row.instance_uuid] and (
                        now - epoch.to_epoch(row.created_at) <
                        settle + CLOCK_SKEW):
                    in_flight = _more(in_flight, row)
            # A boot that claimed there is in Placement's count now.
            found = None
            if any(candidate.provider in claims[row.instance_uuid]
                   for row in here):
                found = candidate.read()
            if candidate.fits(*in_flight, found):
                admitted.add(node)
            elif in_flight != NOTHING and candidate.fits(*NOTHING, found):
                waiting.add(node)
        return admitted, waiting
