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

"""What the engine shows on a preemptible server reaches it even when Nova
refuses it at first (a server that still builds takes no metadata).
"""

from nova import context as nova_context
from nova import objects

from nova_reservation.capacity import epoch
from nova_reservation.db import leases as db_leases
from nova_reservation.db import preemptibles as db_preemptibles
from nova_reservation.tests.functional import base


class PreemptibleMarksTest(base.BootTestCase):

    def building_spot(self) -> tuple:
        """(uuid, Nova's record) of a preemptible server on its node,
        still building as far as Nova's API goes.
        """
        resp = self.cloud.boot('spot', base.ONE_PER_NODE,
                               {'preemptible': 'true'})
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self._wait_for_state_change(self.admin_api.get_server(uuid),
                                    'ACTIVE')
        instance = objects.Instance.get_by_uuid(
            nova_context.get_admin_context(), uuid)
        instance.vm_state = 'building'
        instance.save()
        return uuid, instance

    def test_its_deadline_is_told_once_nova_lets_it(self):
        uuid, instance = self.building_spot()
        self.engine.preempt()
        self.assertNotIn('reservation:preemptible_until',
                         self.admin_api.get_server(uuid)['metadata'])
        instance.vm_state = 'active'
        instance.save()
        self.engine.preempt()
        self.assertEqual('none', self.admin_api.get_server(uuid)[
            'metadata']['reservation:preemptible_until'])

    def test_the_deadline_warned_of_is_shown_once_nova_lets_it(self):
        uuid, instance = self.building_spot()
        # A lease of both nodes in an hour: the server must go by its
        # start, and is warned 20 minutes before, while it still builds.
        resp = self.rsv('POST', '/leases', base.flavor_lease(2))
        self.assertEqual(201, resp.status_code, resp.text)
        start = db_leases.get(base.STORE, resp.json()['lease']['id']).start_at
        self.clock.now = epoch.to_epoch(start) - 20 * 60
        self.engine.preempt()
        self.assertNotIn('reservation:preempt_at',
                         self.admin_api.get_server(uuid)['metadata'])
        warned = db_preemptibles.get_all(base.STORE)[0].warned_for
        self.assertEqual(start, warned)
        instance.vm_state = 'active'
        instance.save()
        self.engine.preempt()
        self.assertEqual(start.isoformat() + 'Z', self.admin_api.get_server(
            uuid)['metadata']['reservation:preempt_at'])
