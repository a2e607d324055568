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

"""Two schedulers, one promised node: a boot that the other scheduler let
onto the node and has not claimed yet counts there.

The other scheduler is a second ReservationFilter, given the host states
of Nova's host manager; Placement's claim of its boot is made by the test,
as that scheduler would make it, while Nova's own scheduler filters the
next boot.
"""

import datetime
import time

from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa

from nova_reservation.db import api as db_api
from nova_reservation.db import models
from nova_reservation.db import passes as db_passes
from nova_reservation.filters import reservation_filter
from nova_reservation.tests.functional import base

WAITS = 'waits for the boots in flight on %s'


class BootsInFlightTest(base.ReservationsTestCase):
    # Boots are scheduled while the test goes on (claims, as the other
    # scheduler makes them).
    CAST_AS_CALL = False

    def setUp(self) -> None:
        super().setUp()
        self.flags(placement_usage_interval=0.1, group='reservation')
        # Each node (7,680 MB) promised 4,096 MB from an hour on: room for
        # 3,584 MB of ordinary servers.
        self.lease({'resource_type': 'flavor:instance',
                    'flavor_id': base.ONE_PER_NODE,
                    'amount': len(self.NODES), 'affinity': 'None'},
                   start=3600)
        self.other = reservation_filter.ReservationFilter()

    def let_through(self, memory_mb: int) -> str:
        """The other scheduler filters the boot of a server of `memory_mb`
        (every node passes); gives the server's uuid.
        """
        uuid = uuidutils.generate_uuid()
        spec = objects.RequestSpec(
            instance_uuid=uuid, project_id=nova_fixtures.PROJECT_ID,
            scheduler_hints={}, num_instances=1,
            flavor=objects.Flavor(vcpus=1, memory_mb=memory_mb, root_gb=1,
                                  ephemeral_gb=0, swap=0))
        hosts = self.scheduler.manager.host_manager
        states = list(hosts.get_host_states_by_uuids(
            nova_context.get_admin_context(),
            [self._get_provider_uuid_by_host(n) for n in self.NODES], spec))
        passed = self.other.filter_all(states, spec)
        self.assertEqual(sorted(self.NODES),
                         sorted(h.nodename for h in passed))
        return uuid

    def claim(self, uuid: str, node: str, memory_mb: int) -> None:
        resp = self.placement.put('/allocations/%s' % uuid, {
            'allocations': {self._get_provider_uuid_by_host(node): {
                'resources': {'VCPU': 1, 'MEMORY_MB': memory_mb,
                              'DISK_GB': 1}}},
            'project_id': nova_fixtures.PROJECT_ID,
            'user_id': 'fake', 'consumer_generation': None},
            version='1.28')
        self.assertEqual(204, resp.status, resp.body)
        self.addCleanup(self.placement.delete, '/allocations/%s' % uuid)

    def boot(self, name: str) -> dict:
        return self.api.post_server({'server': self._build_server(
            name=name, image_uuid=base.IMAGE, flavor_id=base.TINY,
            networks='none')})

    def wait_for_log(self, text: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.stdlog.logger.output:
            self.assertLess(time.monotonic(), deadline,
                            '%r was not logged' % text)
            time.sleep(0.05)


class OneNodeTest(BootsInFlightTest):
    NODES = ('host1',)

    def test_a_boot_claimed_meanwhile_counts(self):
        # 3,328 + 512 MB do not fit in the 3,584 left: the tiny boot that
        # Nova's scheduler filters now waits for the other, which claims
        # (its claim ends the wait: a long timeout costs nothing, and holds
        # on a slow machine).
        self.flags(boot_settle_timeout=30, group='reservation')
        other = self.let_through(3328)
        server = self.boot('b1')
        self.wait_for_log(WAITS % 'host1')
        self.claim(other, 'host1', 3328)
        server = self._wait_for_state_change(server, 'ERROR')
        self.assertIn('No valid host', server['fault']['message'])

    def test_a_boot_never_claimed_counts_until_it_would_have(self):
        # Long enough that the boot is filtered while the other is still
        # in flight, on a loaded machine too (the API, the conductor and
        # the scheduler took over four seconds on a slow one).
        self.flags(boot_settle_timeout=8, group='reservation')
        self.let_through(3328)
        # It waits for the other until then: Nova's 5 s wait is too short.
        server = self._wait_for_state_change(self.boot('b1'), 'ACTIVE',
                                             max_retries=40)
        self.assertEqual('host1',
                         server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.assertIn(WAITS % 'host1', self.stdlog.logger.output)

    def test_boots_that_fit_together_do_not_wait(self):
        self.let_through(2048)
        server = self._wait_for_state_change(self.boot('b1'), 'ACTIVE')
        self.assertEqual('host1',
                         server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.assertNotIn('waits for', self.stdlog.logger.output)

    def test_passes_are_kept_a_while(self):
        server = self._wait_for_state_change(self.boot('b1'), 'ACTIVE')
        self.assertEqual(['host1'], self.passes(server['id']))
        # Made longer ago than passes are kept: gone at the next decision.
        with db_api.writing(db_api.Context()) as session:
            session.execute(sa.update(models.Pass).values(
                created_at=db_api.utcnow() - db_passes.KEPT -
                datetime.timedelta(seconds=1)))
        other = self.let_through(2048)
        self.assertEqual([], self.passes(server['id']))
        self.assertEqual(['host1'], self.passes(other))

    def test_the_store_away_keeps_the_boot_off_promised_nodes(self):
        # Without the lock table the decision fails: no promised node.
        with db_api.writing(db_api.Context()) as session:
            session.execute(sa.text('DROP TABLE rsv_locks'))
        server = self._wait_for_state_change(self.boot('b1'), 'ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertIn('the boots in flight could not be counted',
                      self.stdlog.logger.output)

    @staticmethod
    def passes(uuid: str) -> list:
        return [row.node for row in db_api.rows(db_api.Context(), sa.select(
            models.Pass).where(models.Pass.instance_uuid == uuid))]


class TwoNodesTest(BootsInFlightTest):
    NODES = ('host1', 'host2')

    def test_a_boot_claimed_elsewhere_leaves_the_node(self):
        self.flags(boot_settle_timeout=30, group='reservation')
        other = self.let_through(3328)
        server = self.boot('b1')
        self.wait_for_log(WAITS % 'host1, host2')
        self.claim(other, 'host2', 3328)
        server = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('host1',
                         server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
