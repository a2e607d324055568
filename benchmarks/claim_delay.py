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

"""How long nova-scheduler takes from reading the ledger to claiming in
Placement, for each server of boots of several servers each.

A lease written while a boot is being scheduled waits that long, at most
(``[reservation] boot_settle_timeout``), before it checks that the boot
did not take its last capacity: a boot whose filters read a copy of the
ledger without the lease claims within this time after them.

Real Nova in a process of its own (the embedded cloud, native threads:
Nova's harness must be the first to import Nova), on the real Placement.
Two probes call through: one notes when ReservationFilter reads the ledger
for a server, one when the scheduler's claim for that server has returned.
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time

import fixtures

# The default flavor m1.tiny: 1 vCPU, 512 MB, 1 GB.
FLAVOR = '1'


def run(boots: int, per_boot: int, nodes: int) -> dict:
    """`boots` boots of `per_boot` servers each on `nodes` nodes, in a
    process of its own: the filter-to-claim delays of their servers, in
    ms.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(
        [sys.executable, '-m', 'benchmarks.claim_delay', str(boots),
         str(per_boot), str(nodes)], cwd=root, capture_output=True,
        text=True, timeout=600, check=True,
        env=dict(os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING='1'))
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(boots: int, per_boot: int, nodes: int) -> dict:
    """`run` in this process (Nova not imported yet)."""
    from devcloud import demo
    demo.quiet_nova()
    # Nova chooses native threads on its first import, the harness's.
    from devcloud import embedded
    from nova.scheduler import utils as scheduler_utils
    from nova_reservation.filters import reservation_filter

    delays: list = []
    here = threading.local()
    filter_all = reservation_filter.ReservationFilter.filter_all
    claim_resources = scheduler_utils.claim_resources

    def filtered(self, host_states, spec_obj):
        here.filtered = time.monotonic()
        return filter_all(self, host_states, spec_obj)

    def claimed(*args, **kwargs):
        done = claim_resources(*args, **kwargs)
        delays.append(time.monotonic() - here.filtered)
        return done

    names = ['node%d' % i for i in range(nodes)]
    with fixtures.MonkeyPatch(
            'nova_reservation.filters.reservation_filter.ReservationFilter.'
            'filter_all', filtered), fixtures.MonkeyPatch(
            'nova.scheduler.utils.claim_resources', claimed), \
            embedded.EmbeddedCloud('claims', names) as cloud:
        # One boot after the other, each answered once its servers are
        # built (the harness deadlocks on boots side by side).
        for i in range(boots):
            answer = cloud.boot('b%d' % i, FLAVOR, count=per_boot)
            if answer.status != 202:
                raise RuntimeError('boot refused: %s' % answer.status)
    if len(delays) != boots * per_boot:
        raise RuntimeError('%d claims for %d servers'
                           % (len(delays), boots * per_boot))
    ms = sorted(1000 * d for d in delays)
    return dict(boots=boots, servers=len(ms), nodes=nodes,
                p50_ms=statistics.median(ms),
                p99_ms=ms[min(len(ms) - 1, int(0.99 * len(ms)))],
                max_ms=ms[-1])


if __name__ == '__main__':
    print(json.dumps(measure(*map(int, sys.argv[1:4]))))
