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

"""Open reservations that ordinary boots go into unasked, and boots that
fall back to ordinary ones when their reservation is full or not started,
on real Nova.
"""

import concurrent.futures


from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()
SHARED = base.SHARED


class FallbackTest(base.SharingTestCase):

    def test_full_reservation_falls_back_to_an_ordinary_boot(self):
        lease, rid = self.running_shared(amount=1, shared_with=())
        first = self.boot_into(rid)
        self.assertEqual(202, first.status, first.content)
        self.node_of(first.body['server']['id'])
        hints = {'reservation': rid, 'reservation_fallback': 'any'}
        resp = self.boot(None, name='spill', extra_hints=hints)
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.assertEqual({'reservation_id': rid, 'fallback': True,
                          'status': 'ORDINARY'},
                         resp.body['server']['reservation'])
        self.node_of(uuid)
        self.run_engine()
        self.assertNotIn(uuid, self.bound(rid))
        self.assertEqual({'reservation_id': rid, 'fallback': True,
                          'status': 'ORDINARY'},
                         self.api.get_server(uuid)['reservation'])
        listed = {s['id']: s for s in self.api.get_servers()}
        self.assertTrue(listed[uuid]['reservation']['fallback'])
        self.assertFalse(listed[first.body['server']['id']][
            'reservation']['fallback'])
        # Without the hint, the 409 as before.
        full = self.boot_into(rid, name='refused')
        self.assertEqual(409, full.status, full.content)

    def test_reservation_not_started_falls_back(self):
        lease = self.shared_lease(amount=1, shared_with=(), start=600)
        rid = lease['reservations'][0]['id']
        early = self.boot_into(rid)
        self.assertEqual(409, early.status, early.content)
        resp = self.boot(None, extra_hints={'reservation': rid,
                                            'reservation_fallback': 'any'})
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        node = self.node_of(uuid)
        # As an ordinary boot: off the node promised to the lease.
        self.assertNotEqual(db_ledger.slots(STORE, rid)[0].node, node)

    def test_fallback_is_no_way_around_a_refusal(self):
        lease, rid = self.running_shared(amount=1, shared_with=())
        hints = {'reservation': rid, 'reservation_fallback': 'any'}
        # Another project's reservation stays not found; a user can not
        # write the mark of a fallback.
        other = self.boot(None, api=self.third_api, extra_hints=hints)
        self.assertEqual(404, other.status, other.content)
        for bad in ('all', '', True, ['any', 'any'], {'a': 1}):
            resp = self.boot(None, extra_hints={
                'reservation': rid, 'reservation_fallback': bad})
            self.assertEqual(400, resp.status, (bad, resp.content))
            self.assertIn('reservation_fallback', resp.body['badRequest'][
                'message'])
        alone = self.boot(None, extra_hints={'reservation_fallback': 'any'})
        self.assertEqual(400, alone.status, alone.content)
        self.assertEqual([], self.api.get_servers())


class OpenMatchingTest(base.SharingTestCase):

    def open_lease(self, amount=1, shared_with=(), minutes=60) -> tuple:
        return self.running_shared(amount=amount, shared_with=shared_with,
                                   minutes=minutes, matching='open')

    def ordinary(self, api=None, name='vm', hints=None):
        resp = self.boot(None, api=api, name=name, extra_hints=hints)
        self.assertEqual(202, resp.status, resp.content)
        uuid = resp.body['server']['id']
        self.node_of(uuid)
        return uuid

    def test_ordinary_boot_runs_in_an_open_reservation(self):
        lease, rid = self.open_lease(amount=1)
        self.assertEqual('open', lease['reservations'][0]['matching'])
        # --hint reservation=none keeps a boot out.
        kept_out = self.ordinary(name='out', hints={'reservation': 'none'})
        self.run_engine()
        self.assertEqual({}, self.bound(rid))
        self.assertNotIn('reservation', self.api.get_server(kept_out))
        uuid = self.ordinary()
        self.run_engine()
        self.assertEqual([uuid], list(self.bound(rid)))
        self.assertEqual(rid, self.api.get_server(uuid)['reservation'][
            'reservation_id'])
        # Full: the next ordinary boot is an ordinary one.
        spill = self.ordinary(name='spill')
        self.run_engine()
        self.assertNotIn(spill, self.bound(rid))
        self.assertNotIn('reservation', self.api.get_server(spill))

    def test_targeted_and_not_started_and_too_big_do_not_match(self):
        targeted = self.shared_lease(amount=1, shared_with=())
        future = self.shared_lease(amount=1, shared_with=(), start=600,
                                   matching='open')
        self.wait_for_start(targeted)
        small = self.lease({'resource_type': 'virtual:instance', 'vcpus': 1,
                            'memory_mb': 64, 'disk_gb': 0, 'amount': 1,
                            'matching': 'open'}, start=0.5)
        self.wait_for_start(small)
        uuid = self.ordinary()
        self.run_engine()
        for lease in (targeted, future, small):
            self.assertEqual({}, self.bound(lease['reservations'][0]['id']))
        self.assertNotIn('reservation', self.api.get_server(uuid))

    def test_a_boot_that_asks_the_scheduler_for_more_is_left_to_it(self):
        lease, rid = self.open_lease(amount=1)
        group = self.api.post_server_groups(
            {'name': 'apart', 'policy': 'anti-affinity'})
        grouped = self.ordinary(name='grouped', hints={'group': group['id']})
        server = self._build_server(name='zoned', image_uuid=base.IMAGE,
                                    flavor_id=base.ONE_PER_NODE,
                                    networks='none')
        server['availability_zone'] = 'nova'
        zoned = self.api.post_server({'server': server})['id']
        self.node_of(zoned)
        self.run_engine()
        self.assertEqual({}, self.bound(rid))
        self.assertNotIn('reservation', self.api.get_server(grouped))

    def test_earliest_end_first_and_shared_ones(self):
        late, late_rid = self.open_lease(amount=1, minutes=90)
        early, early_rid = self.open_lease(amount=1, minutes=45,
                                           shared_with=(SHARED,))
        first = self.ordinary(name='first')
        second = self.ordinary(name='second')
        self.run_engine()
        self.assertEqual(([first], [second]), (
            list(self.bound(early_rid)), list(self.bound(late_rid))))
        # Shared with it, the project it is shared with matches too (here,
        # once freed); a third project never does.
        self.api.delete_server(first)
        self.wait_gone(first)
        self.run_engine()
        outsider = self.ordinary(api=self.third_api, name='third')
        self.run_engine()
        self.assertEqual({}, self.bound(early_rid))
        theirs = self.ordinary(api=self.shared_api, name='theirs')
        self.run_engine()
        self.assertEqual([theirs], list(self.bound(early_rid)))
        self.assertNotIn(outsider, self.bound(late_rid))

    def test_open_match_racing_an_explicit_boot_for_the_last_slot(self):
        for round_ in range(2):
            lease, rid = self.open_lease(amount=1)
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                named = pool.submit(self.boot_into, rid, None,
                                    base.ONE_PER_NODE, 'named%d' % round_)
                unnamed = pool.submit(self.boot, None, None,
                                      base.ONE_PER_NODE, None,
                                      'open%d' % round_)
                named, unnamed = named.result(), unnamed.result()
            self.assertEqual(202, unnamed.status, unnamed.content)
            self.assertIn(named.status, (202, 409), named.content)
            for resp in (named, unnamed):
                if resp.status == 202:
                    self.node_of(resp.body['server']['id'])
            self.run_engine()
            self.assertEqual(1, len(self.bound(rid)))
            if named.status == 409:
                self.assertEqual([unnamed.body['server']['id']],
                                 list(self.bound(rid)))
            for s in self.admin_api.get_servers(
                    search_opts={'all_tenants': 1}):
                self.admin_api.delete_server(s['id'])
                self.wait_gone(s['id'])
            self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                           % lease['id']).status_code)
            self.run_engine()
