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

"""Blazar's side of the lease placement benchmark: how long Blazar 18's own
host selection takes on the cloud of `data.cloud`.

Blazar (the `blazar` package from PyPI, in integration-requirements.txt: it
adds only blazar and pecan beside Nova 34 and changes no installed
version) keeps the
same ledger in its own database, a SQLite file made by
Blazar's own `blazar.db.api.setup_db()` (its models' create_all, as Blazar's
DB tests do) through oslo.db, with `[database] connection` pointing at it:

- every node is a reservable `computehosts` row (vcpus, memory_mb, local_gb
  of the node);
- every allocation of the ledger is one Blazar lease over its own
  [start, end) with one reservation, one `computehost_allocations` row on
  its node and the lease's events (start_lease, end_lease,
  before_end_lease), as Blazar's manager writes them.  Allocations of the
  same data reservation have different intervals, and a Blazar lease has
  one interval, so each allocation is its own lease.

Two selections are timed, each called the way Blazar's manager calls it
(`ManagerService._allocation_candidates` -> `plugin.allocation_candidates`):

1. host reservation min 5, max 5 over REQUEST:
   `PhysicalHostPlugin.allocation_candidates(values)`, which validates the
   values and returns `PhysicalHostPlugin._matching_hosts(
   hypervisor_properties, resource_properties, count_range, start_date,
   end_date)`.  Here the allocations are physical host reservations
   (`resource_type` 'physical:host' plus a `computehost_reservations` row):
   whole-host allocations, Blazar's model of a host reservation.
2. instance reservation of 10 instances of SLOT over REQUEST:
   `VirtualInstancePlugin.allocation_candidates(values)`, which returns
   `VirtualInstancePlugin.pickup_hosts(None, values)['added']` (it runs
   `query_available_hosts`, `filter_hosts_by_reservation`, `max_usages`).
   Here the same rows are turned into instance reservations
   (`resource_type` 'virtual:instance' plus an `instance_reservations` row
   of vcpus/memory_mb/disk_gb of SLOT, amount 1), so Blazar counts the same
   usage per node.

Nothing of the selection is patched.  Neither selection calls Nova,
Placement or Keystone; tripwires on Blazar's Nova client
(`NovaClientWrapper.nova`) and Placement client
(`BlazarPlacementClient._create_client`) make a run fail loudly if one ever
did.

The database gets an index on every foreign-key column (`fk_indexes`),
what MySQL's InnoDB, Blazar's usual production database, creates by itself
and SQLite does not; without them, each selection scans whole tables once
per host (and per reservation), and the instance selection on the full
ledger takes minutes.

Blazar and Nova register clashing oslo.config options (`host`, ...), so
they cannot be imported into one process: `run()` measures in a child
process of the same interpreter (`isolated=True`) and returns its answer.

    python -m benchmarks.blazar_placement [--hosts 50 --allocations 2000]
    python -m benchmarks.blazar_placement --self-check
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from benchmarks import data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST_MIN = HOST_MAX = 5
INSTANCES = 10
CHUNK = 20_000          # rows per executemany


def run(hosts: int = 1000, allocations: int = 100_000, repeat: int = 10,
        budget_s: float = 20.0, fk_indexes: bool = True,
        isolated: bool = True) -> dict:
    """Time Blazar's host selection of both kinds on `data.cloud(hosts,
    allocations)` and return

        dict(host_p50_ms, instance_p50_ms, hosts, allocations,
             blazar_version, host_selected, instance_selected, ...)

    Each selection is called once untimed (warm-up, `*_first_ms`), then up
    to `repeat` times, stopping early once its timed calls have taken
    `budget_s` seconds (at least one timed call).  Loading the database is
    not timed (`load_s` says how long it took).  `isolated` runs it in a
    child process (needed whenever Nova's config is imported in this one).
    """
    if not isolated:
        return _measure(hosts, allocations, repeat, budget_s, fk_indexes)
    args = [sys.executable, '-m', 'benchmarks.blazar_placement',
            '--in-process', '--hosts', str(hosts),
            '--allocations', str(allocations), '--repeat', str(repeat),
            '--budget-s', str(budget_s)]
    if not fk_indexes:
        args.append('--no-fk-indexes')
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        p for p in (ROOT, env.get('PYTHONPATH')) if p)
    # Loading, two warm-ups and two budgets, with a wide margin.
    timeout = 600 + 4 * budget_s + allocations / 100
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError('Blazar benchmark failed (exit %d):\n%s'
                           % (proc.returncode, proc.stderr[-4000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the measurement, in a process that has not imported Nova ---------------

def _measure(hosts: int, allocations: int, repeat: int, budget_s: float,
             fk_indexes: bool) -> dict:
    from importlib import metadata

    from oslo_config import cfg

    try:
        from blazar import config as _blazar_config  # noqa: F401 (options)
    except ImportError as e:
        raise RuntimeError('Blazar is not installed: tools/setup-env '
                           'installs integration-requirements.txt') from e
    from blazar.db import api as db_api
    from blazar.db.sqlalchemy import facade_wrapper
    from blazar.plugins.instances import instance_plugin
    from blazar.plugins.oshosts import host_plugin
    from blazar.utils.openstack import nova as blazar_nova
    from blazar.utils.openstack import placement as blazar_placement

    conf = cfg.CONF
    conf(args=[], project='blazar', default_config_files=[],
         default_config_dirs=[])
    _install_tripwires(blazar_nova, blazar_placement)

    cloud = data.cloud(hosts=hosts, allocations=allocations)
    start, end = (_utc(t) for t in data.REQUEST)
    workdir = tempfile.mkdtemp(prefix='blazar-bench-')
    try:
        url = 'sqlite:///' + os.path.join(workdir, 'blazar.sqlite')
        conf.set_override('connection', url, group='database')
        facade_wrapper._clear_engine()
        db_api.setup_db()                    # Blazar's own schema

        t0 = time.perf_counter()
        loader = _Loader(url, cloud, fk_indexes)
        loader.load_host_reservations()
        load_s = time.perf_counter() - t0

        plugin = host_plugin.PhysicalHostPlugin()
        host_values = {
            'resource_type': host_plugin.plugin.RESOURCE_TYPE,
            'min': HOST_MIN, 'max': HOST_MAX,
            'hypervisor_properties': '', 'resource_properties': '',
            'before_end': 'default',
            'start_date': start, 'end_date': end}
        host_times, host_first, host_ids = _timed(
            lambda: plugin.allocation_candidates(dict(host_values)),
            repeat, budget_s)

        t0 = time.perf_counter()
        loader.to_instance_reservations()
        load_s += time.perf_counter() - t0

        plugin = instance_plugin.VirtualInstancePlugin()
        instance_values = {
            'resource_type': instance_plugin.plugin.RESOURCE_TYPE,
            'amount': INSTANCES, 'vcpus': int(data.SLOT.vcpus),
            'memory_mb': int(data.SLOT.memory_mb),
            'disk_gb': int(data.SLOT.disk_gb),
            'affinity': None, 'resource_properties': '',
            'start_date': start, 'end_date': end}
        instance_times, instance_first, instance_ids = _timed(
            lambda: plugin.allocation_candidates(dict(instance_values)),
            repeat, budget_s)
        loader.close()
    finally:
        facade_wrapper._clear_engine()
        shutil.rmtree(workdir, ignore_errors=True)

    names = loader.node_of_host_id
    return dict(
        host_p50_ms=_ms(statistics.median(host_times)),
        instance_p50_ms=_ms(statistics.median(instance_times)),
        hosts=hosts, allocations=allocations,
        blazar_version=metadata.version('blazar'),
        host_selected=[names[i] for i in host_ids],
        instance_selected=[names[i] for i in instance_ids],
        host_first_ms=_ms(host_first), instance_first_ms=_ms(instance_first),
        host_runs=len(host_times), instance_runs=len(instance_times),
        host_times_ms=[_ms(t) for t in host_times],
        instance_times_ms=[_ms(t) for t in instance_times],
        load_s=round(load_s, 2), fk_indexes=fk_indexes,
        database='sqlite (oslo.db), Blazar models create_all')


def _timed(call, repeat: int, budget_s: float):
    """One untimed warm-up, then up to `repeat` timed calls within
    `budget_s` seconds (at least one).
    """
    t0 = time.perf_counter()
    result = call()
    first = time.perf_counter() - t0
    times = []
    while len(times) < max(1, repeat) and (not times or
                                           sum(times) < budget_s):
        t0 = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - t0)
    return times, first, result


def _install_tripwires(blazar_nova, blazar_placement) -> None:
    """Blazar's only ways out to Nova and Placement: fail if used."""
    def refuse(*args, **kwargs):
        raise RuntimeError('benchmark: Blazar tried to call Nova/Placement')
    blazar_nova.NovaClientWrapper.nova = property(refuse)
    blazar_placement.BlazarPlacementClient._create_client = refuse


def _utc(epoch: float) -> datetime.datetime:
    """Blazar keeps naive UTC datetimes."""
    return datetime.datetime.fromtimestamp(
        epoch, datetime.timezone.utc).replace(tzinfo=None)


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def _id(kind: int, n: int) -> str:
    """Deterministic UUID-shaped ids: kind in the high bits, n below."""
    return str(uuid.UUID(int=(kind << 96) | n))


class _Loader:
    """Bulk loads the cloud into Blazar's tables with Core executemany."""

    def __init__(self, url: str, cloud: data.Cloud, fk_indexes: bool):
        import sqlalchemy as sa

        from blazar.db.sqlalchemy import models

        self.sa = sa
        self.models = models
        self.cloud = cloud
        self.engine = sa.create_engine(url)
        self.now = _utc(int(time.time()))
        self.host_id_of_node = {h.node: _id(1, i)
                                for i, h in enumerate(cloud.hosts)}
        self.node_of_host_id = {v: k for k, v in
                                self.host_id_of_node.items()}
        if fk_indexes:
            self._index_foreign_keys()

    def close(self) -> None:
        self.engine.dispose()

    def _index_foreign_keys(self) -> None:
        """What InnoDB does by itself: an index on each FK column."""
        with self.engine.begin() as conn:
            for table in self.models.Lease.metadata.sorted_tables:
                for fk in table.foreign_keys:
                    col = fk.parent.name
                    conn.exec_driver_sql(
                        'CREATE INDEX IF NOT EXISTS ix_%s_%s ON %s (%s)'
                        % (table.name, col, table.name, col))

    def _insert(self, conn, model, rows) -> None:
        stamp = {'created_at': self.now, 'updated_at': None}
        table = model.__table__
        for i in range(0, len(rows), CHUNK):
            conn.execute(table.insert(),
                         [dict(stamp, **r) for r in rows[i:i + CHUNK]])

    def load_host_reservations(self) -> None:
        m = self.models
        hosts = [dict(id=self.host_id_of_node[h.node],
                      vcpus=int(h.capacity.vcpus),
                      memory_mb=int(h.capacity.memory_mb),
                      local_gb=int(h.capacity.disk_gb),
                      cpu_info='{}', hypervisor_type='QEMU',
                      hypervisor_version=8002000,
                      hypervisor_hostname=h.node, service_name=h.node,
                      status=None, availability_zone='nova',
                      trust_id=_id(9, 0), reservable=True)
                 for h in self.cloud.hosts]
        leases, reservations, host_rsvs, allocs, events = [], [], [], [], []
        before_end = datetime.timedelta(minutes=60)  # Blazar's default
        for a in self.cloud.allocations:
            n = a.id
            lease_id, rsv_id = _id(2, n), _id(3, n)
            start, end = _utc(a.start), _utc(a.end)
            leases.append(dict(
                id=lease_id, name='alloc-%d' % n, user_id='bench-user',
                project_id='bench-project', start_date=start, end_date=end,
                trust_id=_id(9, 0), status='PENDING', degraded=False))
            reservations.append(dict(
                id=rsv_id, lease_id=lease_id, resource_id=_id(4, n),
                resource_type='physical:host', status='pending',
                missing_resources=False, resources_changed=False))
            host_rsvs.append(dict(
                id=_id(4, n), reservation_id=rsv_id, aggregate_id=1,
                resource_properties='', hypervisor_properties='',
                count_range='1-1', before_end='default'))
            allocs.append(dict(
                id=_id(5, n), compute_host_id=self.host_id_of_node[a.node],
                reservation_id=rsv_id))
            for k, (kind, when) in enumerate((
                    ('start_lease', start), ('end_lease', end),
                    ('before_end_lease', max(start, end - before_end)))):
                events.append(dict(id=_id(6 + k, n), lease_id=lease_id,
                                   event_type=kind, time=when,
                                   status='UNDONE'))
        with self.engine.begin() as conn:
            self._insert(conn, m.ComputeHost, hosts)
            self._insert(conn, m.Lease, leases)
            self._insert(conn, m.Reservation, reservations)
            self._insert(conn, m.ComputeHostReservation, host_rsvs)
            self._insert(conn, m.ComputeHostAllocation, allocs)
            self._insert(conn, m.Event, events)

    def to_instance_reservations(self) -> None:
        """The same allocations as instance reservations of one SLOT."""
        sa, m = self.sa, self.models
        slot = data.SLOT
        ids = [a.id for a in self.cloud.allocations]
        rows = [dict(id=_id(10, n), reservation_id=_id(3, n),
                     vcpus=int(slot.vcpus), memory_mb=int(slot.memory_mb),
                     disk_gb=int(slot.disk_gb), amount=1, affinity=None,
                     resource_properties='', flavor_id=_id(11, n),
                     aggregate_id=1, server_group_id=None) for n in ids]
        table = m.Reservation.__table__
        update = (table.update()
                  .where(table.c.id == sa.bindparam('rid'))
                  .values(resource_type='virtual:instance',
                          resource_id=sa.bindparam('irid')))
        with self.engine.begin() as conn:
            conn.execute(m.ComputeHostReservation.__table__.delete())
            self._insert(conn, m.InstanceReservations, rows)
            for i in range(0, len(ids), CHUNK):
                conn.execute(update, [dict(rid=_id(3, n), irid=_id(10, n))
                                      for n in ids[i:i + CHUNK]])


# -- self check ---------------------------------------------------------------

def self_check() -> dict:
    """A small run: positive timings and full selections."""
    result = run(hosts=50, allocations=2000, repeat=3, budget_s=5.0)
    assert result['host_p50_ms'] > 0 and result['instance_p50_ms'] > 0
    assert len(result['host_selected']) == HOST_MAX, result
    assert len(result['instance_selected']) == INSTANCES, result
    assert result['blazar_version'].split('.')[0].isdigit(), result
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--allocations', type=int, default=100_000)
    parser.add_argument('--repeat', type=int, default=10)
    parser.add_argument('--budget-s', type=float, default=20.0)
    parser.add_argument('--no-fk-indexes', action='store_true')
    parser.add_argument('--in-process', action='store_true',
                        help='measure here rather than in a child process')
    parser.add_argument('--self-check', action='store_true')
    args = parser.parse_args(argv)
    if args.self_check:
        self_check()
        print('blazar_placement self-check ok')
        return
    result = run(hosts=args.hosts, allocations=args.allocations,
                 repeat=args.repeat, budget_s=args.budget_s,
                 fk_indexes=not args.no_fk_indexes,
                 isolated=not args.in_process)
    print(json.dumps(result))


if __name__ == '__main__':
    main()
