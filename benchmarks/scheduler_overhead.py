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

"""What ReservationFilter adds to a scheduling request of Nova's scheduler.

Nova's own filter handler runs Nova's default filters over real HostState
objects (built from ComputeNode and Service objects as the host manager
builds them), with and without ReservationFilter, whose ledger is read
from a store holding the allocations (SQLite, Nova API database tables).
The baseline is the same request without the filter, in the same run.
"""

import datetime
import gc
import os
import random
import tempfile
import time
import tracemalloc
import uuid

from nova import conf as nova_conf
from nova import objects
from nova.scheduler import filters
from nova.scheduler import host_manager
from oslo_utils import uuidutils

from benchmarks import data
from benchmarks import lease_placement
from benchmarks import store
from benchmarks import timing
from nova_reservation.clients import placement_usage
from nova_reservation import filters as rsv_filters
from nova_reservation.ledger import memory as ledger_mod

CONF = nova_conf.CONF
NOVA_FILTERS = ('ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter')


def provider_uuid(node: str) -> str:
    """The resource provider of a node of `host_states`."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, node))


def host_states(count: int) -> list:
    """`count` HostState objects, each a 32-vCPU node, half used."""
    now = datetime.datetime.now(datetime.timezone.utc)
    states = []
    cell = uuidutils.generate_uuid()
    for i in range(count):
        node = 'node%05d' % i
        compute = objects.ComputeNode(
            uuid=provider_uuid(node), id=i + 1, host=node,
            hypervisor_hostname=node, vcpus=32, vcpus_used=16,
            memory_mb=131072, memory_mb_used=65536, free_ram_mb=65536,
            local_gb=1000, local_gb_used=500, free_disk_gb=500,
            disk_available_least=500, updated_at=now, host_ip='127.0.0.1',
            hypervisor_type='fake', hypervisor_version=1, numa_topology=None,
            supported_hv_specs=[], pci_device_pools=None, cpu_info='{}',
            stats=None, metrics=None, cpu_allocation_ratio=1.0,
            ram_allocation_ratio=1.0, disk_allocation_ratio=1.0)
        service = objects.Service(
            host=node, binary='nova-compute', disabled=False,
            forced_down=False, created_at=now, updated_at=now,
            last_seen_up=now)
        state = host_manager.HostState(node, node, cell)
        state.update(compute=compute, service=service, aggregates=[],
                     inst_dict={})
        states.append(state)
    return states


def request_spec(gpu: bool = False):
    """An ordinary boot of m1.medium (`gpu`: of a flavor of one GPU)."""
    flavor = objects.Flavor(id=1, flavorid='1', name='m1.medium', vcpus=2,
                            memory_mb=4096, root_gb=40, ephemeral_gb=0,
                            swap=0, extra_specs={
                                'resources:%s' % data.GPU: '1'} if gpu
                            else {})
    return objects.RequestSpec(
        project_id='p', user_id='u', flavor=flavor, num_instances=1,
        image=objects.ImageMeta.from_dict({'properties': {}}),
        instance_uuid=uuidutils.generate_uuid(), scheduler_hints={},
        instance_group=None, ignore_hosts=None, force_hosts=None,
        force_nodes=None, requested_destination=None)


def request(handler, chosen: list, states: list, spec) -> None:
    """One scheduling request: the filter pass over every host."""
    assert list(handler.get_filtered_objects(chosen, states, spec, 0)), (
        'no host passed')


class EmptyFilter(filters.BaseHostFilter):
    """A filter that passes every host: what Nova's filter handler costs
    for any one filter more, the floor of a filter's cost.
    """

    run_filter_once_per_request = False

    def filter_all(self, filter_obj_list, spec_obj):
        return filter_obj_list


def compare(handler, passes: list, states: list, spec, budget: float,
            rounds: int = 15) -> list:
    """The ms of a request with each list of filters of `passes`: rounds
    of each in turn, the best round of each, so that a pause of the
    machine counts against none.  At 10,000 hosts a round is one request:
    the rounds are the samples.
    """
    times: list = [[] for _ in passes]
    for _ in range(rounds):
        for filters_, samples in zip(passes, times):
            samples.append(1000 * timing.per_call(
                request, [(handler, filters_, states, spec)],
                budget / rounds))
    return [min(samples) for samples in times]


def ledger_memory(path: str) -> float:
    """MB the scheduler holds for the ledger of the store at `path`."""
    store.use(path)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    ledger = ledger_mod.Ledger()
    ledger.refresh()
    for timeline in ledger.timelines.values():
        timeline.peak(0, 1)   # built, as the filter builds them
    ledger.view.peaks_after(time.time())   # as an ordinary boot asks
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, 'filename'))
    del ledger
    return grown / 2 ** 20


def memory(hosts: int, allocations: int, classes: int = 3) -> float:
    """`ledger_memory` of a store of `allocations` on `hosts` nodes."""
    store.configure()
    path = os.path.join(tempfile.mkdtemp(prefix='rsv-bench-'), 'ledger.db')
    store.fill(path, hosts, allocations, classes=classes)
    return ledger_memory(path)


def run(hosts=(100, 1_000, 10_000), allocations=(0, 10_000, 100_000),
        budget: float = 1.0, classes: int = 3) -> list:
    """Rows of figures; with five `classes`, those of an ordinary boot of
    one GPU too (``gpu_*``): the filter asks Placement for the GPUs of each
    node where a lease holds some from now on.
    """
    objects.register_all()
    store.configure()
    # Nova's ComputeFilter takes a service not heard from for a minute as
    # down: the host states are made once, and a run at 10,000 hosts is
    # longer than that.
    CONF.set_override('service_down_time', 86400)
    handler = filters.HostFilterHandler()
    kinds = {c.__name__: c for c in handler.get_matching_classes(
        ['nova.scheduler.filters.all_filters'])}
    nova_only = [kinds[name]() for name in NOVA_FILTERS]
    spec = request_spec()
    rows = []
    workdir = tempfile.mkdtemp(prefix='rsv-bench-')
    for count in allocations:
        path = os.path.join(workdir, 'ledger-%d.db' % count)
        store.fill(path, max(hosts), count, classes=classes)
        store.use(path)
        ledger = ledger_mod.Ledger()
        reservation = rsv_filters.ReservationFilter(ledger)
        with_filter = nova_only + [reservation]
        memory = ledger_memory(path) if count else 0.0
        for n in hosts:
            states = host_states(n)
            random.Random(n).shuffle(states)
            # The first request reads the ledger; requests after it read
            # what changed (nothing): the steady state measured here.
            list(handler.get_filtered_objects(with_filter, states, spec, 0))
            base, ours, empty = compare(
                handler, [nova_only, with_filter, nova_only + [EmptyFilter()]],
                states, spec, budget)
            row = dict(
                hosts=n, allocations=count, classes=classes, nova_ms=base,
                with_filter_ms=ours, ratio=ours / base,
                filter_us_per_host=(ours - base) * 1000 / n,
                empty_filter_ratio=empty / base, ledger_mb=memory)
            if classes == 5:
                row.update(_gpu_request(handler, nova_only, ledger, states,
                                        budget))
            rows.append(row)
        # Its copy of the ledger stops refreshing: the next store is
        # another copy's.
        reservation.ledger.close()
    return rows


def _gpu_request(handler, nova_only: list, ledger, states: list,
                 budget: float) -> dict:
    """An ordinary boot of one GPU with / without the filter, which counts
    the GPUs of the nodes whose GPUs are promised on its read of every
    node's tree (`placement_usage.Usage`: Placement answered from memory,
    the figure is this process's part of the cost), and how many requests
    it makes of Placement a scheduling request.
    """
    answers = lease_placement.PlacementAnswers(
        data.cloud(len(states), 0, classes=5).hosts, uuid_of=provider_uuid)
    usage = placement_usage.Usage(lambda: answers)
    # The read that the scheduler's thread makes every few seconds.
    usage.refresh()
    with_filter = nova_only + [rsv_filters.ReservationFilter(ledger,
                                                             usage=usage)]
    spec = request_spec(gpu=True)
    list(handler.get_filtered_objects(with_filter, states, spec, 0))
    asked = answers.requests
    list(handler.get_filtered_objects(with_filter, states, spec, 0))
    asked = answers.requests - asked
    base, ours = compare(handler, [nova_only, with_filter], states, spec,
                         budget, rounds=3)
    return dict(gpu_ratio=ours / base, gpu_placement_requests=asked)


if __name__ == '__main__':
    for row in run():
        print(row)
