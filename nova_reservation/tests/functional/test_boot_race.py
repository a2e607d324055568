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

"""A lease and an ordinary boot for the last capacity of a node, at once:
never both."""

import threading
import time

from nova.scheduler import weights

from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation import status
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class GateWeigher(weights.BaseHostWeigher):
    """A scheduler weigher, configured as any weigher is, that holds a boot
    between the filters and its claim in Placement while the gate is shut:
    the boot has passed the filters (which read the ledger) and has not
    taken its resources yet.
    """
    entered = threading.Event()
    gate = threading.Event()

    def weigh_objects(self, weighed_obj_list, weight_properties):
        GateWeigher.entered.set()
        GateWeigher.gate.wait(60)
        return [0.0 for _ in weighed_obj_list]

    def _weigh_object(self, host_state, weight_properties) -> float:
        return 0.0


class BootRaceTest(base.ReservationTestCase):
    # Two nodes: Nova weighs hosts only when there is a choice.
    NODES = ('host1', 'host2')
    CAST_AS_CALL = False

    def setUp(self) -> None:
        super().setUp()
        GateWeigher.entered.clear()
        GateWeigher.gate.clear()
        self.addCleanup(GateWeigher.gate.set)
        self.flags(weight_classes=[__name__ + '.GateWeigher'],
                   group='filter_scheduler')
        self.scheduler.stop()
        self.scheduler = self.cloud.harness.start_service('scheduler')

    def test_a_lease_and_a_boot_never_both_take_the_last_capacity(self):
        # An ordinary boot of a node's size: past the filter (no lease
        # yet), held before its claim.
        server = self.api.post_server({'server': self._build_server(
            name='o1', image_uuid=base.IMAGE, flavor_id=base.ONE_PER_NODE,
            networks='none')})
        self.assertTrue(GateWeigher.entered.wait(30))
        # A lease for the whole cloud, placed meanwhile.
        answer = {}

        def create():
            answer['resp'] = self.lease_api()('POST', '/leases', {
                'name': 'last', 'start_date': base.when(30)[:16],
                'end_date': base.when(90)[:16], 'events': [],
                'reservations': [{'resource_type': 'flavor:instance',
                                  'flavor_id': base.ONE_PER_NODE,
                                  'amount': 2, 'affinity': 'None'}]})
        creating = threading.Thread(target=create)
        creating.start()
        deadline = time.time() + 30
        while time.time() < deadline and not db_leases.get_all(STORE):
            time.sleep(0.01)
        self.assertEqual(['last'], [x.name for x in db_leases.get_all(STORE)])
        # The boot claims the node now.
        GateWeigher.gate.set()
        creating.join(90)
        node = self._wait_for_state_change(
            self.admin_api.get_server(server['id']), 'ACTIVE')[
            'OS-EXT-SRV-ATTR:hypervisor_hostname']
        resp = answer['resp']
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('booted meanwhile took the last of node %s' % node,
                      resp.json()['error_message'])
        self.assertEqual([], [x.id for x in db_leases.get_all(STORE)
                              if x.status != status.DELETED])
        self.assert_invariants()
