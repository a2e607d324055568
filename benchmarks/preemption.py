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

"""A week of a cloud whose reserved capacity is never idle.

A simulated clock runs a cloud of nodes (32 vCPU each, half of them used
by ordinary servers) through a week in steps of five minutes:

- users make capacity leases for later (the planner, on the store, with
  Placement answered from the simulated nodes); at a lease's start its
  servers are built on its slots (late if a node has no room then), at its
  end they go;
- a stream of preemptible jobs (a boot each, and hours of work) is
  scheduled by ``ReservationFilter``'s rule for preemptible boots over the
  nodes, then Nova's own fit (Placement) and the most room; a job that
  finds no node waits and boots again at the next step;
- the engine's look at the preemptible servers (`engine.preemption`, on
  the store) runs at each step, against a stand-in for Nova's compute API
  whose migrations, shelves and unshelves (scheduled as above) happen at
  once: the hypervisor's part.

Reported: the share of the capacity promised to leases not started yet
(and so closed to ordinary servers) that preemptible work used, out of
what the stream could use of it (its demand beyond the capacity no lease
promised); leases whose servers could not start on time; evictions per
lease; preemptible jobs lost (deleted before their work was done).
"""

import math
import os
import random
import tempfile

from nova import conf as nova_conf
from nova import objects
from oslo_utils import uuidutils
import sqlalchemy as sa

from benchmarks import store
from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation.db import models
from nova_reservation.db import notices as db_notices
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation.engine import preemption
from nova_reservation import exception
from nova_reservation import filters as rsv_filters
from nova_reservation.lease import request as lease_request
from nova_reservation.lease import resource_types
from nova_reservation.lease import write as lease_write
from nova_reservation.ledger import memory as ledger_mod

CONF = nova_conf.CONF
STORE = db_api.Context()
STEP = 300.0
NODE = capacity.Resources(32, 131072, 2000)
JOB = capacity.Resources(4, 16384, 40)
SLOT = capacity.Resources(4, 16384, 40)


class Server:

    def __init__(self, uuid: str, node, need: capacity.Resources,
                 kind: str, work: float = 0.0) -> None:
        self.uuid = uuid
        self.node = node
        self.need = need
        self.kind = kind          # ordinary, lease or preemptible
        self.status = 'ACTIVE'
        self.work = work          # seconds of work left (preemptible)
        self.tags: set = set()
        self.metadata: dict = {}

    def view(self) -> dict:
        return {'id': self.uuid, 'status': self.status,
                'OS-EXT-SRV-ATTR:hypervisor_hostname': self.node,
                'OS-EXT-STS:task_state': None, 'tenant_id': 'p',
                'tags': sorted(self.tags), 'metadata': dict(self.metadata),
                'flavor': {'vcpus': self.need.vcpus,
                           'ram': self.need.memory_mb,
                           'disk': self.need.disk_gb}}


class HostState:
    """The fields of Nova's HostState that the filter reads."""

    aggregates: list = []
    cpu_allocation_ratio = ram_allocation_ratio = 1.0
    disk_allocation_ratio = 1.0

    def __init__(self, node: str, used: capacity.Resources,
                 instances: dict) -> None:
        self.nodename = node
        self.vcpus_total = NODE.vcpus
        self.total_usable_ram_mb = NODE.memory_mb
        self.total_usable_disk_gb = NODE.disk_gb
        self.vcpus_used = used.vcpus
        self.free_ram_mb = NODE.memory_mb - used.memory_mb
        self.disk_mb_used = used.disk_gb * 1024
        self.instances = instances


class Cloud:
    """The nodes and servers: Nova's compute API and Placement, as the
    engine and the planner call them, answered at once.
    """

    def __init__(self, nodes: int, clock, seed: int) -> None:
        self.clock = clock
        self.rng = random.Random(seed)
        self.nodes = ['node%03d' % i for i in range(nodes)]
        self.servers: dict = {}
        self.generation = {n: 0 for n in self.nodes}
        # {node: {uuid: Server}}, kept as servers come, move and go.
        self.on_node: dict = {n: {} for n in self.nodes}
        self.filter = rsv_filters.ReservationFilter(ledger_mod.Ledger(),
                                                    clock=clock)
        self.spec = objects.RequestSpec(
            project_id='p', user_id='u', scheduler_hints={
                'preemptible': ['true']}, flavor=objects.Flavor(
                vcpus=JOB.vcpus, memory_mb=JOB.memory_mb,
                root_gb=JOB.disk_gb, ephemeral_gb=0, swap=0))
        self.moves = 0

    # ------------------------------------------------------------ nodes

    def used(self, node: str) -> capacity.Resources:
        total = capacity.ZERO
        for s in self.on_node[node].values():
            total = total + s.need
        return total

    def add(self, server: Server, node) -> None:
        self.servers[server.uuid] = server
        self.place(server, node)

    def place(self, server: Server, node) -> None:
        if server.node is not None:
            self.generation[server.node] += 1
            self.on_node[server.node].pop(server.uuid, None)
        if node is not None:
            self.generation[node] += 1
            self.on_node[node][server.uuid] = server
        server.node = node

    def schedule(self, need: capacity.Resources, avoid=None):
        """A node for a preemptible server: the filter, then room, then
        the most room; None if none.
        """
        states = []
        for node, servers in self.on_node.items():
            used = self.used(node)
            if node != avoid and (used + need).fits_in(NODE):
                states.append(HostState(node, used, dict.fromkeys(servers)))
        passed = self.filter.filter_all(states, self.spec)
        if not passed:
            return None
        return max(passed, key=lambda h: (h.free_ram_mb, h.nodename)
                   ).nodename

    # ------------------------------------------------------------ compute

    def server(self, uuid: str) -> dict:
        if uuid not in self.servers:
            raise exception.NovaNotFound(uuid)
        return self.servers[uuid].view()

    def servers_of(self, tag=None) -> list:
        return [s.view() for s in self.servers.values()
                if tag is None or tag in s.tags]

    def add_tag(self, uuid: str, tag: str) -> None:
        self.servers[uuid].tags.add(tag)

    def set_metadata(self, uuid: str, items: dict) -> None:
        self.servers[uuid].metadata.update(items)

    def host_of_node(self, node: str) -> str:
        return node

    def delete(self, uuid: str) -> None:
        server = self.servers.pop(uuid, None)
        if server is not None:
            self.place(server, None)

    def action(self, uuid: str, name: str, args=None) -> None:
        server = self.servers[uuid]
        if name in ('os-migrateLive', 'migrate'):
            target = args['host']
            if (self.used(target) + server.need).fits_in(NODE):
                self.place(server, target)
                self.moves += 1
        elif name == 'shelve':
            self.place(server, None)
            server.status = 'SHELVED_OFFLOADED'
        elif name == 'unshelve':
            node = self.schedule(server.need)
            if node is not None:
                self.place(server, node)
                server.status = 'ACTIVE'
        else:
            raise exception.NovaError('%s is not simulated' % name)

    # ------------------------------------------------------------ placement

    def get(self, url: str, version: str = None):
        parts = url.strip('/').split('/')
        if parts == ['resource_providers']:
            body = {'resource_providers': [
                dict(uuid=n, name=n, generation=self.generation[n])
                for n in self.nodes]}
        elif len(parts) == 2:
            body = dict(uuid=parts[1], name=parts[1],
                        generation=self.generation[parts[1]])
        elif parts[2] == 'inventories':
            body = {'inventories': {
                rc: dict(total=total, reserved=0, allocation_ratio=1.0)
                for rc, total in zip(capacity.RESOURCE_CLASSES, NODE)}}
        elif parts[2] == 'traits':
            body = {'traits': ['COMPUTE_NODE']}
        else:
            body = {'allocations': {
                s.uuid: {'resources': dict(zip(capacity.RESOURCE_CLASSES,
                                               s.need))}
                for s in self.on_node[parts[1]].values()}}
        return _Answer(body)


class _Answer:
    status_code = 200

    def __init__(self, body: dict) -> None:
        self._body = body

    def json(self) -> dict:
        return self._body


class _Compute:
    """The engine's Nova client, on the simulated cloud."""

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud

    def servers(self, page: int = 1000, tag=None) -> list:
        return self.cloud.servers_of(tag)

    def __getattr__(self, name: str):
        return getattr(self.cloud, name)


class _Outbox:
    """No notifier: the notices stay in the store, where they are counted.
    """
    notifier = None

    def claim_for(self, notice: dict) -> dict:
        return dict(notice, claimed_by=None, claim_expires=None)


class Clock:

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _fresh_store() -> None:
    path = os.path.join(tempfile.mkdtemp(prefix='rsv-bench-'), 'spare.db')
    engine = sa.create_engine('sqlite:///%s' % path)
    models.Base.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(models.LedgerState.__table__.insert(), [dict(
            id=1, generation=1, epoch=uuidutils.generate_uuid())])
    engine.dispose()
    store.use(path)


def run(nodes: int = 100, days: float = 7.0, seed: int = 7) -> dict:
    objects.register_all()
    store.configure()
    _fresh_store()
    CONF.set_override('ledger_max_age', 0, group='reservation')
    rng = random.Random(seed)
    start = epoch.to_epoch(db_api.utcnow().replace(microsecond=0))
    clock = Clock(start)
    cloud = Cloud(nodes, clock, seed)
    # Half of each node runs ordinary servers, for good.
    for node in cloud.nodes:
        for _ in range(4):
            cloud.add(Server(uuidutils.generate_uuid(), None, SLOT,
                             'ordinary'), node)
    planner = lease_write.Writer(ledger_mod.Ledger(), cloud, clock,
                                 in_flight=lambda since: set(), view_age=0)
    # One cell: every node is a server's neighbour.
    engine = preemption.Preemption(_Compute(cloud), clock, 'bench',
                                   _Outbox(), planner, lambda node: None)
    leases: dict = {}     # id: (start, end, reservation id, [servers])
    jobs: list = []       # preemptible jobs waiting for a node
    served = could = 0.0
    late = made = started = evicted = lost = done = 0
    in_place = set()
    end = start + days * 86400
    while clock.now < end:
        now = clock.now
        # Users make leases for later: one an hour on average.
        if rng.random() < STEP / 3600:
            lease_start = now + rng.uniform(2, 48) * 3600
            lease_start -= lease_start % 60
            lease_end = lease_start + rng.uniform(4, 24) * 3600
            amount = rng.randint(5, 3 * nodes // 5)
            lease_id = uuidutils.generate_uuid()
            request = lease_request.ReservationRequest(
                resource_types.FLAVOR, amount, need=SLOT, flavor_id='bench')
            try:
                planner.create(dict(
                    id=lease_id, name='l', project_id='p', user_id='u',
                    start_at=epoch.from_epoch(lease_start),
                    end_at=epoch.from_epoch(lease_end),
                    status='PENDING', on_end='delete',
                    created_at=epoch.from_epoch(now)), [request], [])
                leases[lease_id] = (lease_start, lease_end, request.id, [])
                made += 1
            except exception.NoCapacity:
                pass
        # The stream: a preemptible job every two minutes on average,
        # 2 to 12 hours of work each.
        for _ in range(_poisson(rng, STEP / 120)):
            jobs.append(rng.uniform(2, 12) * 3600)
        # Leases start and end.
        for lease_id, (a, b, rid, servers) in list(leases.items()):
            if a <= now and lease_id not in in_place:
                in_place.add(lease_id)
                started += 1
                was_late = False
                for slot in db_ledger.slots(STORE, rid):
                    if not (cloud.used(slot.node) + SLOT).fits_in(NODE):
                        was_late = True
                        continue
                    uuid = uuidutils.generate_uuid()
                    cloud.add(Server(uuid, None, SLOT, 'lease'), slot.node)
                    db_ledger.bind_slot(STORE, rid, uuid, slot.node,
                                        slot.node)
                    servers.append(uuid)
                late += was_late
            if b <= now:
                for uuid in servers:
                    cloud.delete(uuid)
                del leases[lease_id]
        # The engine's look at the preemptible servers.
        before = {u: s.node for u, s in cloud.servers.items()
                  if s.kind == 'preemptible' and s.status == 'ACTIVE'}
        engine.run()
        evicted += sum(1 for u, node in before.items()
                       if u in cloud.servers and cloud.servers[u].node != node)
        lost += sum(1 for u in before if u not in cloud.servers)
        # Waiting jobs boot.
        while jobs:
            node = cloud.schedule(JOB)
            if node is None:
                break   # the others, of the same size, wait too
            uuid = uuidutils.generate_uuid()
            cloud.add(Server(uuid, None, JOB, 'preemptible', jobs.pop()),
                      node)
            db_preemptibles.add(STORE, [uuid], 'p', 'shelve')
        # What promised capacity served, against what the stream could
        # have used of it.
        s, c = _share(cloud, planner.ledger, now, jobs)
        served += s
        could += c
        # Work is done while running.
        clock.now += STEP
        for uuid, server in list(cloud.servers.items()):
            if server.kind == 'preemptible' and server.status == 'ACTIVE':
                server.work -= STEP
                if server.work <= 0:
                    cloud.delete(uuid)
                    done += 1
    return dict(nodes=nodes, days=days, leases=made, leases_started=started,
                late_starts=late, evictions=evicted,
                evictions_per_lease=evicted / max(started, 1),
                migrations=cloud.moves, warnings=sum(
                    1 for n in db_notices.unsent(STORE)
                    if n.event_type == 'server.preempt.warning'),
                jobs_done=done, jobs_lost=lost,
                promised_share=served / could if could else 1.0,
                still_shelved=sum(1 for s in cloud.servers.values()
                                  if s.status == 'SHELVED_OFFLOADED'))


def _share(cloud: Cloud, ledger, now: float, waiting: list) -> tuple:
    """(vCPUs of preemptible servers on capacity promised to leases not
    started, vCPUs of it the stream could use): the stream fills the
    capacity that no lease promised first.
    """
    ledger.refresh()
    timelines = ledger.timelines
    promised_idle = unpromised = running = 0.0
    for node in cloud.nodes:
        held = list(cloud.on_node[node].values())
        base = sum(s.need.vcpus for s in held if s.kind == 'ordinary')
        timeline = timelines.get(node)
        level = timeline.peak(now, now + capacity.INSTANT).vcpus \
            if timeline else 0
        peak = timeline.peak_after(now)[0] if timeline else 0
        free = max(NODE.vcpus - base - level, 0)
        idle = min(free, max(peak - level, 0))
        promised_idle += idle
        unpromised += free - idle
        running += sum(s.need.vcpus for s in held if s.kind == 'preemptible')
    demand = running + len(waiting) * JOB.vcpus
    could = min(promised_idle, max(demand - unpromised, 0))
    served = min(promised_idle, max(running - unpromised, 0))
    return served, could


def _poisson(rng: random.Random, mean: float) -> int:
    count, limit, p = 0, math.exp(-mean), rng.random()
    while p > limit:
        count += 1
        p *= rng.random()
    return count


if __name__ == '__main__':
    print(run())
