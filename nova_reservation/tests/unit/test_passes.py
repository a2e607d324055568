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

"""How a decision counts the passes of other schedulers' boots."""

import types

import testtools

from nova_reservation import capacity
from nova_reservation.capacity import epoch
from nova_reservation.db import ledger as db_ledger
from nova_reservation.filters import passes

NOW = 1_800_000_000.0
SETTLE = 10
R = capacity.Resources


class _Usage:
    """Placement as a decision asks it: whom each boot claimed on, and a
    node's usage now.
    """

    def __init__(self, claims: dict, fresh: dict) -> None:
        self._claims = claims
        self._fresh = fresh
        self.asked: list = []

    def claims(self, uuid: str) -> set:
        self.asked.append(uuid)
        return self._claims.get(uuid, set())

    def node(self, uuid: str) -> tuple:
        self.asked.append(uuid)
        return self._fresh[uuid]


GPU = ('', 'CUSTOM_GPU')


def row(uuid: str, node: str, memory_mb: float, age: float = 1.0,
        gpus: int = 0):
    return types.SimpleNamespace(
        instance_uuid=uuid, node=node, vcpus=1, memory_mb=memory_mb,
        disk_gb=0, created_at=epoch.from_epoch(NOW - age),
        extras=db_ledger.extras_column(capacity.extras({GPU: gpus})))


def candidate(node: str, room_mb: float, usage, gpus=None):
    """A node with `room_mb` (and `gpus`, if given: a boot of one GPU)
    left by the last read, or by `usage`'s read now.
    """
    def fits(pending, pending_extras, found):
        room = room_mb if found is None else found[0].memory_mb - \
            found[1].memory_mb
        return 512 + pending.memory_mb <= room and (
            gpus is None or 1 + dict(pending_extras).get(GPU, 0) <= gpus)
    return passes.Candidate('rp-' + node, fits,
                            lambda: usage.node('rp-' + node))


class JudgeTest(testtools.TestCase):

    def judge(self, others, usage=None, gpus=None, **rooms) -> tuple:
        self.usage = usage or _Usage({}, {})
        decider = passes.Passes(self.usage, clock=lambda: NOW)
        return decider._judge(others, NOW, {
            node: candidate(node, room, self.usage, gpus)
            for node, room in rooms.items()}, SETTLE)

    def test_without_other_boots_every_node_is_admitted(self):
        self.assertEqual(({'a', 'b'}, set()),
                         self.judge([], a=512, b=4096))
        self.assertEqual([], self.usage.asked)

    def test_boots_that_fit_together_ask_placement_nothing(self):
        self.assertEqual(({'a'}, set()),
                         self.judge([row('x', 'a', 1024)], a=1536))
        self.assertEqual([], self.usage.asked)

    def test_a_boot_in_flight_is_waited_for(self):
        self.assertEqual((set(), {'a'}),
                         self.judge([row('x', 'a', 1024)], a=1024))
        self.assertEqual(['x'], self.usage.asked)

    def test_a_boot_claimed_here_on_a_node_now_full_is_not_waited_for(self):
        self.assertEqual((set(), set()), self.judge(
            [row('x', 'a', 1024)], _Usage({'x': {'rp-a'}}, {
                'rp-a': (R(8, 4096), R(1, 4000))}), a=1024))

    def test_a_node_too_small_without_the_boot_in_flight_is_not_waited_for(
            self):
        # Only a second look asks: the last read leaves 256 MB.
        self.assertEqual((set(), set()),
                         self.judge([row('x', 'a', 1024)], a=256))

    def test_a_boot_claimed_elsewhere_counts_nowhere_else(self):
        self.assertEqual(({'a'}, set()), self.judge(
            [row('x', 'a', 1024)], _Usage({'x': {'rp-b'}}, {}), a=1024))

    def test_a_boot_claimed_here_is_counted_by_a_fresh_read(self):
        usage = _Usage({'x': {'rp-a'}}, {'rp-a': (R(8, 4096), R(1, 3584))})
        self.assertEqual(({'a'}, set()),
                         self.judge([row('x', 'a', 1024)], usage, a=1024))
        self.assertEqual(['x', 'rp-a'], usage.asked)
        usage = _Usage({'x': {'rp-a'}}, {'rp-a': (R(8, 4096), R(1, 3585))})
        self.assertEqual((set(), set()),
                         self.judge([row('x', 'a', 1024)], usage, a=1024))

    def test_a_boot_not_claimed_when_it_would_have_is_forgotten(self):
        old = row('x', 'a', 1024, age=SETTLE + passes.CLOCK_SKEW + 0.1)
        self.assertEqual(({'a'}, set()), self.judge([old], a=1024))

    def test_each_node_counts_its_own_passes(self):
        others = [row('x', 'a', 1024), row('x', 'b', 1024),
                  row('y', 'b', 1024)]
        usage = _Usage({'x': {'rp-a'}}, {'rp-a': (R(8, 4096), R(1, 1024))})
        # a: x claimed there, a fresh read has room; b: y in flight (x
        # went to a), and without it there is room.
        self.assertEqual(({'a'}, {'b'}),
                         self.judge(others, usage, a=1024, b=1024))

    def test_gpus_of_boots_in_flight_count(self):
        # Two GPUs left by the last read; RAM to spare.
        one = [row('x', 'a', 0, gpus=1)]
        self.assertEqual(({'a'}, set()), self.judge(one, gpus=2, a=4096))
        self.assertEqual([], self.usage.asked)
        two = one + [row('y', 'a', 0, gpus=1)]
        self.assertEqual((set(), {'a'}), self.judge(two, gpus=2, a=4096))
        # Boots of no GPU take none of them.
        cpu = [row('x', 'a', 0), row('y', 'a', 0)]
        self.assertEqual(({'a'}, set()), self.judge(cpu, gpus=1, a=4096))

    def test_a_gpu_boot_claimed_here_is_counted_by_a_fresh_read(self):
        # x claimed its GPU on a: the read now counts it, not its pass.
        usage = _Usage({'x': {'rp-a'}}, {'rp-a': (R(8, 4096), R(1, 0))})
        self.assertEqual(({'a'}, set()), self.judge(
            [row('x', 'a', 0, gpus=1)], usage, gpus=1, a=4096))
        self.assertEqual(['x', 'rp-a'], usage.asked)
