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

"""Placing a lease: a capacity reservation (10 slots) and a host
reservation (min 5) written to a store that holds a large ledger; and the
availability search for the capacity reservation over a year.

The planner runs as nova-api runs it: the in-memory ledger refreshed from
the store (incrementally), the nodes read from Placement through the
cached host view, the lease written with a compare-and-swap on the ledger
generation.  Placement answers through a stand-in that serves the
providers of `data.cloud` from memory (its cost is Placement's, not the
planner's).
"""

import gc
import os
import statistics
import tempfile
import time

from nova import conf as nova_conf
from oslo_utils import uuidutils

from benchmarks import data
from benchmarks import store
from nova_reservation import capacity
from nova_reservation.db import api as db_api
from nova_reservation.lease import request as lease_request
from nova_reservation.lease import write as lease_write
from nova_reservation import ledger as ledger_mod
from nova_reservation import resource_types

CONF = nova_conf.CONF


class _Answer:
    status_code = 200

    def __init__(self, body: dict, url: str) -> None:
        self._body = body
        self.url = url

    def json(self) -> dict:
        return self._body


class PlacementAnswers:
    """Placement's answers for the nodes of a cloud: each provider with
    its inventory and no consumer.
    """

    def __init__(self, hosts: list) -> None:
        self.requests = 0
        self.providers = {'node-rp-%s' % h.node: h for h in hosts}

    def get(self, url: str, version: str = None) -> _Answer:
        self.requests += 1
        if url == '/resource_providers':
            return _Answer({'resource_providers': [
                dict(uuid=uuid, name=h.node, generation=1)
                for uuid, h in self.providers.items()]}, url)
        uuid = url.split('/')[2]
        if url.count('/') == 2:
            return _Answer(dict(uuid=uuid, name=self.providers[uuid].node,
                                generation=1), url)
        if url.endswith('/allocations'):
            return _Answer({'allocations': {}}, url)
        if url.endswith('/traits'):
            return _Answer({'traits': ['COMPUTE_NODE']}, url)
        host = self.providers[uuid]
        return _Answer({'inventories': {
            rc: dict(total=total, reserved=0, allocation_ratio=1.0)
            for rc, total in zip(capacity.RESOURCE_CLASSES,
                                 host.capacity)}}, url)


def _lease(start: float, end: float) -> dict:
    return dict(id=uuidutils.generate_uuid(), name='bench', project_id='p',
                user_id='u', start_at=ledger_mod.from_epoch(start),
                end_at=ledger_mod.from_epoch(end),
                status='PENDING', on_end='delete',
                created_at=db_api.utcnow())


def _resident_mb() -> float:
    """The process's resident memory (Linux), in MB."""
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return 0.0


def run(hosts: int = 1000, allocations: int = 100_000,
        repeat: int = 30) -> dict:
    store.configure()
    path = os.path.join(tempfile.mkdtemp(prefix='rsv-bench-'), 'ledger.db')
    store.fill(path, hosts, allocations, enroll_free=True)
    store.use(path)
    cloud = data.cloud(hosts, allocations)
    cloud = data.Cloud(cloud.hosts, [])   # Placement's part: the nodes
    answers = PlacementAnswers(cloud.hosts)
    # The ledger's store alone: no scheduler, and no boot of Nova's being
    # scheduled (a lease waits `ledger_max_age` for them otherwise).
    planner = lease_write.Writer(ledger_mod.Ledger(), answers, time.time,
                                 in_flight=lambda since: set(), view_age=0)
    start, end = data.REQUEST
    requests = {
        'capacity': lambda: lease_request.ReservationRequest(
            resource_types.FLAVOR, 10, need=data.SLOT, flavor_id='bench'),
        'host': lambda: lease_request.ReservationRequest(
            resource_types.HOST, 5, min_count=5),
    }
    # The first lease reads the whole ledger and every node: nova-api
    # does that once, at its first lease.
    gc.collect()
    before = _resident_mb()
    planner.create(_lease(start, end), [requests['capacity']()], [])
    gc.collect()
    result = dict(hosts=hosts, allocations=allocations,
                  memory_mb=_resident_mb() - before)
    for kind, request in requests.items():
        times = []
        before = answers.requests
        for i in range(repeat):
            # Host leases one after the other: each takes 5 other hosts.
            offset = i * 2 * data.DAY if kind == 'host' else 0
            t0 = time.perf_counter()
            planner.create(_lease(start + offset, end + offset),
                           [request()], [])
            times.append((time.perf_counter() - t0) * 1000)
        result['%s_p50_ms' % kind] = statistics.median(times)
        result['%s_placement_requests' % kind] = (
            answers.requests - before) / repeat
    # "Then when?": the start windows of the capacity request over a year.
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        found = planner.windows(
            requests['capacity'](), ledger_mod.from_epoch(start),
            ledger_mod.from_epoch(start + 365 * data.DAY), end - start, 10)
        times.append((time.perf_counter() - t0) * 1000)
    result['availability_p50_ms'] = statistics.median(times)
    result['availability_windows'] = len(found)
    return result


if __name__ == '__main__':
    print(run())
