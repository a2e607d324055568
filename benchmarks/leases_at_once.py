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

"""Many clients creating leases at once (nova-api's workers and threads)
on a large ledger on MariaDB, each on nodes of its own: how many leases a
second against one client alone, and how many are refused as busy (none
may be: writers on different nodes never make each other plan again).

The planners share one in-memory ledger, as the threads of one nova-api
process do; each sees its own share of the nodes through a Placement
stand-in (`lease_placement.PlacementAnswers`).
"""

from concurrent import futures
import threading
import time

import sqlalchemy as sa

from benchmarks import data
from benchmarks import lease_placement
from benchmarks import store
from devcloud import machine
from nova_reservation import exception
from nova_reservation.lease import request as lease_request
from nova_reservation.lease import resource_types
from nova_reservation.lease import write as lease_write
from nova_reservation.ledger import memory as ledger_mod


def run(hosts: int = 1000, allocations: int = 100_000,
        clients: int = 50) -> dict:
    store.configure()
    fixture = machine.MariaDBStore()
    fixture.setUp()
    try:
        engine = sa.create_engine(fixture.url)
        store.fill_engine(engine, hosts, allocations)
        engine.dispose()
        return _measure(hosts, allocations, clients)
    finally:
        fixture.cleanUp()


def _measure(hosts: int, allocations: int, clients: int) -> dict:
    cloud = data.cloud(hosts, allocations)
    ledger = ledger_mod.Ledger()
    share = len(cloud.hosts) // clients
    planners = [lease_write.Writer(
        ledger, lease_placement.PlacementAnswers(
            cloud.hosts[i * share:(i + 1) * share]), time.time,
        in_flight=lambda since: set(), view_age=0)
        for i in range(clients)]
    start, end = data.REQUEST

    def create(planner, offset: float) -> str:
        try:
            planner.create(lease_placement._lease(start + offset,
                                                  end + offset),
                           [lease_request.ReservationRequest(
                               resource_types.FLAVOR, 2, need=data.SLOT,
                               flavor_id='bench')], [])
            return 'made'
        except exception.LedgerBusy:
            return 'busy'
        except exception.NoCapacity:
            return 'full'

    # Each reads its nodes once, as a worker does at its first lease.
    for planner in planners:
        create(planner, 0)
    t0 = time.perf_counter()
    alone = [create(planner, data.DAY) for planner in planners]
    alone_s = time.perf_counter() - t0

    gate = threading.Barrier(clients + 1)

    def client(planner):
        gate.wait()
        return create(planner, 2 * data.DAY)
    with futures.ThreadPoolExecutor(clients) as pool:
        running = [pool.submit(client, p) for p in planners]
        gate.wait()
        t0 = time.perf_counter()
        together = [r.result() for r in running]
        together_s = time.perf_counter() - t0
    return dict(hosts=hosts, allocations=allocations, clients=clients,
                alone_per_s=clients / alone_s,
                together_per_s=clients / together_s,
                busy=together.count('busy') + alone.count('busy'),
                refused=together.count('full') + alone.count('full'))


if __name__ == '__main__':
    print(run())
