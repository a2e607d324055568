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
import subprocess
import sys
import tempfile
import time
from typing import Callable

from nova import conf as nova_conf
from oslo_utils import uuidutils

from benchmarks import data
from benchmarks import store
from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.lease import request as lease_request
from nova_reservation.lease import resource_types
from nova_reservation.lease import write as lease_write
from nova_reservation.ledger import memory as ledger_mod

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
    its inventory and no consumer; with five classes, a node's GPUs on
    its provider and its physical GPUs as child providers of vGPUs.
    """

    def __init__(self, hosts: list,
                 uuid_of: Callable[[str], str] = 'node-rp-%s'.__mod__
                 ) -> None:
        self.requests = 0
        self.providers = {uuid_of(h.node): h for h in hosts}
        # {child uuid: (its name, its root's uuid)}
        self.children = {
            '%s-gpu%d' % (uuid, n): ('%s_pgpu%d' % (h.node, n), uuid)
            for uuid, h in self.providers.items() if h.extra_capacity
            for n in range(data.PHYSICAL_GPUS)}

    def _provider(self, uuid: str) -> dict:
        name, root = self.children.get(uuid) or (
            self.providers[uuid].node, uuid)
        return dict(uuid=uuid, name=name, generation=1,
                    root_provider_uuid=root)

    def get(self, url: str, version: str = None) -> _Answer:
        self.requests += 1
        if url.startswith('/allocation_candidates?'):
            # Every tree has room for a vCPU: each provider's summary.
            return _Answer({'provider_summaries': {
                uuid: dict(root_provider_uuid=self._provider(
                    uuid)['root_provider_uuid'], resources={
                        rc: dict(capacity=inventory['total'], used=0)
                        for rc, inventory in self._inventories(
                            uuid).items()})
                for uuid in list(self.providers) + list(self.children)}},
                url)
        if url == '/resource_providers':
            return _Answer({'resource_providers': [
                self._provider(uuid) for uuid in list(self.providers) +
                list(self.children)]}, url)
        if url.startswith('/resource_providers?in_tree='):
            root = url.split('=')[1]
            return _Answer({'resource_providers': [self._provider(root)] + [
                self._provider(uuid) for uuid, (_, of) in
                self.children.items() if of == root]}, url)
        uuid = url.split('/')[2]
        if url.count('/') == 2:
            return _Answer(self._provider(uuid), url)
        if url.endswith('/allocations'):
            return _Answer({'allocations': {}}, url)
        if url.endswith('/traits'):
            return _Answer({'traits': [] if uuid in self.children
                            else ['COMPUTE_NODE']}, url)
        return _Answer({'inventories': self._inventories(uuid)}, url)

    def _inventories(self, uuid: str) -> dict:
        if uuid in self.children:
            return {'VGPU': dict(total=data.VGPUS_PER_GPU, reserved=0,
                                 allocation_ratio=1.0)}
        host = self.providers[uuid]
        inventories = {
            rc: dict(total=total, reserved=0, allocation_ratio=1.0)
            for rc, total in zip(capacity.RESOURCE_CLASSES, host.capacity)}
        if host.extra_capacity:
            inventories[data.GPU] = dict(total=data.GPUS, reserved=0,
                                         allocation_ratio=1.0)
        return inventories


def _lease(start: float, end: float) -> dict:
    return dict(id=uuidutils.generate_uuid(), name='bench', project_id='p',
                user_id='u', start_at=epoch.from_epoch(start),
                end_at=epoch.from_epoch(end),
                status='PENDING', on_end='delete',
                created_at=db_api.utcnow())


def _resident_mb() -> float:
    """The process's resident memory (Linux), in MB."""
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return 0.0


def _planner(hosts: int, classes: int) -> tuple:
    """(the planner on the store in use, Placement's answers), as nova-api
    has them: the ledger's store alone (no scheduler, and no boot of
    Nova's being scheduled: a lease waits `ledger_max_age` for them
    otherwise).
    """
    answers = PlacementAnswers(data.cloud(hosts, 0, classes=classes).hosts)
    return lease_write.Writer(ledger_mod.Ledger(), answers, time.time,
                              in_flight=lambda since: set(),
                              view_age=0), answers


def _requests(classes: int) -> dict:
    """The capacity reservation (of a GPU a slot, with five classes) and
    the host reservation placed.
    """
    extras = data.GPU_SLOT if classes == 5 else capacity.NO_EXTRAS
    return {
        'capacity': lambda: lease_request.ReservationRequest(
            resource_types.FLAVOR, 10, need=data.SLOT, extras=extras,
            flavor_id='bench'),
        'host': lambda: lease_request.ReservationRequest(
            resource_types.HOST, 5, min_count=5),
    }


def memory(path: str, hosts: int, classes: int) -> float:
    """MB of resident memory that nova-api's planner takes for the ledger
    of the store at `path` and the nodes, at its first lease (which reads
    them all), measured in a process of its own: in a process that ran
    other benchmarks first, the growth would be what they freed.
    """
    found = subprocess.run(
        [sys.executable, '-m', 'benchmarks.lease_placement', path,
         str(hosts), str(classes)], check=True, capture_output=True,
        text=True, env=dict(os.environ, PYTHONWARNINGS='ignore'))
    return float(found.stdout.split()[-1])


def _first_lease_mb(path: str, hosts: int, classes: int) -> float:
    store.configure()
    store.use(path)
    planner, _ = _planner(hosts, classes)
    start, end = data.REQUEST
    gc.collect()
    before = _resident_mb()
    planner.create(_lease(start, end), [_requests(classes)['capacity']()],
                   [])
    gc.collect()
    return _resident_mb() - before


def run(hosts: int = 1000, allocations: int = 100_000,
        repeat: int = 30, classes: int = 3) -> dict:
    store.configure()
    path = os.path.join(tempfile.mkdtemp(prefix='rsv-bench-'), 'ledger.db')
    store.fill(path, hosts, allocations, enroll_free=True, classes=classes)
    result = dict(hosts=hosts, allocations=allocations, classes=classes,
                  memory_mb=memory(path, hosts, classes))
    store.use(path)
    planner, answers = _planner(hosts, classes)
    start, end = data.REQUEST
    requests = _requests(classes)
    # The first lease reads the whole ledger and every node: nova-api
    # does that once, at its first lease.
    planner.create(_lease(start, end), [requests['capacity']()], [])
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
            requests['capacity'](), epoch.from_epoch(start),
            epoch.from_epoch(start + 365 * data.DAY), end - start, 10)
        times.append((time.perf_counter() - t0) * 1000)
    result['availability_p50_ms'] = statistics.median(times)
    result['availability_windows'] = len(found)
    return result


if __name__ == '__main__':
    # PATH HOSTS CLASSES: `memory`'s process.
    print(_first_lease_mb(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
