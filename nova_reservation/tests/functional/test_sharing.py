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

"""Reservations shared with other projects, matched by ordinary boots, and
fallen back from: three projects (the owner, one it shares with, one it
does not), members, readers and admins, on real Nova.
"""

import concurrent.futures

from oslo_utils.fixture import uuidsentinel as uuids


from nova_reservation.db import api as db_api
from nova_reservation.db import ledger as db_ledger
from nova_reservation.filters import reservation_filter
from nova_reservation import policies
from nova_reservation.tests.functional import base

STORE = db_api.Context()
OWNER = base.OWNER
SHARED = base.SHARED
THIRD = base.THIRD


class ShareTest(base.SharingTestCase):

    def test_shared_project_sees_and_boots_into_it(self):
        lease, rid = self.running_shared()
        view = lease['reservations'][0]
        self.assertEqual(([SHARED], 'targeted', {}), (
            view['shared_with'], view['matching'], view['slots_by_project']))

        # The project it is shared with lists it, marked, and shows it.
        listed = self.shared_rsv('GET', '/leases').json()['leases']
        self.assertEqual([lease['id']], [x['id'] for x in listed])
        self.assertEqual((OWNER, [SHARED], None), (
            listed[0]['shared_by'], listed[0]['reservations'][0][
                'shared_with'], listed[0]['trust_id']))
        shown = self.shared_rsv('GET', '/leases/%s' % lease['id'])
        self.assertEqual(200, shown.status_code, shown.text)
        self.assertEqual(OWNER, shown.json()['lease']['shared_by'])
        # The owner's own view is not marked.
        self.assertIsNone(self.rsv('GET', '/leases/%s' % lease['id']).json()[
            'lease']['shared_by'])

        resp = self.boot_into(rid, api=self.shared_api)
        self.assertEqual(202, resp.status, resp.content)
        theirs = resp.body['server']['id']
        self.node_of(theirs)
        mine = self.boot_into(rid)
        self.assertEqual(202, mine.status, mine.content)
        self.node_of(mine.body['server']['id'])
        self.run_engine()
        self.assertEqual({theirs: SHARED, mine.body['server']['id']: None},
                         self.bound_projects(rid))

        # Each project sees its own servers; the owner how many each uses.
        owner_view = self.rsv('GET', '/leases/%s' % lease['id']).json()[
            'lease']['reservations'][0]
        self.assertEqual({OWNER: 1, SHARED: 1},
                         owner_view['slots_by_project'])
        self.assertEqual([mine.body['server']['id']], owner_view['servers'])
        their_view = self.shared_rsv('GET', '/leases/%s' % lease['id']).json(
        )['lease']['reservations'][0]
        self.assertEqual(([theirs], {SHARED: 1}), (
            their_view['servers'], their_view['slots_by_project']))
        server = self.shared_api.get_server(theirs)
        self.assertEqual((lease['id'], rid, False), (
            server['reservation']['lease_id'],
            server['reservation']['reservation_id'],
            server['reservation']['fallback']))

        # Full: the project it is shared with is refused as the owner is.
        full = self.boot_into(rid, api=self.shared_api, name='vm3')
        self.assertEqual(409, full.status, full.content)

    def test_calendars_and_a_project_it_is_not_shared_with(self):
        lease, rid = self.running_shared()
        resp = self.boot_into(rid)
        self.node_of(resp.body['server']['id'])
        self.run_engine()
        # The project it is shared with sees its slots, not the owner's
        # servers.
        allocations = [a for n in self.shared_rsv('GET', '/ledger').json()[
            'ledger']['nodes'] for a in n['allocations']]
        self.assertEqual(2, len(allocations))
        self.assertEqual({(rid, OWNER, None)}, {
            (a['reservation_id'], a['shared_by'], a['server_id'])
            for a in allocations})
        # A third project reaches nothing of it.
        path = '/leases/%s' % lease['id']
        self.assertEqual([], self.third_rsv('GET', '/leases').json()[
            'leases'])
        for method, body in (('GET', None), ('PUT', {'name': 'x'}),
                             ('DELETE', None)):
            resp = self.third_rsv(method, path, body)
            self.assertEqual(403, resp.status_code, (method, resp.text))
        resp = self.third_rsv('PUT', path, {'reservations': [
            {'id': rid, 'shared_with': [THIRD]}]})
        self.assertEqual(403, resp.status_code, resp.text)
        boot = self.boot_into(rid, api=self.third_api)
        self.assertEqual(404, boot.status, boot.content)
        # Nor by the reservation's private flavor, nor by an open match.
        by_flavor = self.boot(None, api=self.third_api, flavor=rid)
        self.assertIn(by_flavor.status, (400, 404), by_flavor.content)
        calendar = self.third_rsv('GET', '/ledger').json()
        self.assertEqual([], [a for n in calendar['ledger']['nodes']
                              for a in n['allocations']])
        self.assertEqual([], self.third_api.get_servers())

    def test_shared_project_can_not_change_extend_or_delete_it(self):
        lease, rid = self.running_shared()
        path = '/leases/%s' % lease['id']
        for method, body in (
                ('PUT', {'name': 'mine now'}),
                ('PUT', {'end_date': base.soon(7200)}),
                ('PUT', {'reservations': [{'id': rid, 'amount': 3}]}),
                ('PUT', {'reservations': [{'id': rid, 'shared_with': [
                    SHARED, THIRD]}]}),
                ('DELETE', None)):
            resp = self.shared_rsv(method, path, body)
            self.assertEqual(403, resp.status_code, (body, resp.text))
            self.assertIn('shared with project %s by project %s' % (
                SHARED, OWNER), resp.json()['error_message'])
        after = self.rsv('GET', path).json()['lease']
        self.assertEqual(('l', 'ACTIVE', 2, [SHARED]), (
            after['name'], after['status'], after['reservations'][0][
                'amount'], after['reservations'][0]['shared_with']))
        # An admin may.
        resp = self.admin_rsv('PUT', path, {'reservations': [
            {'id': rid, 'shared_with': [SHARED, THIRD]}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([SHARED, THIRD], resp.json()['lease'][
            'reservations'][0]['shared_with'])

    def test_share_taken_back_stops_new_boots_not_running_servers(self):
        self.capture_notifications()
        lease, rid = self.running_shared()
        resp = self.boot_into(rid, api=self.shared_api)
        self.assertEqual(202, resp.status, resp.content)
        theirs = resp.body['server']['id']
        self.node_of(theirs)
        self.run_engine()

        resp = self.share(lease, rid, [])
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([], resp.json()['lease']['reservations'][0][
            'shared_with'])
        updates = self.notified('lease.update')
        self.assertEqual(['reservations.shared_with'],
                         updates[-1][1]['changed'])
        self.assertEqual([], updates[-1][1]['reservations'][0][
            'shared_with'])

        again = self.boot_into(rid, api=self.shared_api, name='vm2')
        self.assertEqual(404, again.status, again.content)
        self.assertEqual([], self.shared_rsv('GET', '/leases').json()[
            'leases'])
        # Its running server stays, bound, and the owner still counts it.
        self.assertEqual('ACTIVE', self.admin_api.get_server(theirs)[
            'status'])
        self.assertEqual({SHARED: 1}, self.rsv(
            'GET', '/leases/%s' % lease['id']).json()['lease'][
            'reservations'][0]['slots_by_project'])

    def test_share_taken_back_while_its_project_boots(self):
        # Each round: a boot of the shared project and the owner taking
        # the share back, at once.  The boot either claimed first (then it
        # runs, bound) or is refused with 404: never a server that claimed
        # after the share went, never a 5xx.
        lease, rid = self.running_shared(amount=2)
        outcomes = []
        for round_ in range(2):
            self.assertEqual(200, self.share(lease, rid, [SHARED])
                             .status_code)
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                boot = pool.submit(self.boot_into, rid, self.shared_api,
                                   base.ONE_PER_NODE, 'vm%d' % round_)
                back = pool.submit(self.share, lease, rid, [])
                boot, back = boot.result(), back.result()
            self.assertIn(back.status_code, (200, 409), back.text)
            self.assertIn(boot.status, (202, 404), boot.content)
            outcomes.append(boot.status)
            if boot.status == 202:
                self.node_of(boot.body['server']['id'])
            if back.status_code == 409:   # the boot's claim came between
                self.assertEqual(200, self.share(lease, rid, [])
                                 .status_code)
            again = self.boot_into(rid, api=self.shared_api, name='late')
            self.assertEqual(404, again.status, again.content)
        self.run_engine()
        bound = self.bound_projects(rid)
        self.assertEqual(outcomes.count(202), list(bound.values()).count(
            SHARED))

    def test_validation_of_shared_with(self):
        good = {'resource_type': 'flavor:instance',
                'flavor_id': base.ONE_PER_NODE, 'amount': 1}
        for value, field in (
                ([OWNER], 'reservations[0].shared_with'),
                ('p1', 'reservations[0].shared_with'),
                ([1], 'reservations[0].shared_with[0]'),
                ([''], 'reservations[0].shared_with[0]'),
                (['a b'], 'reservations[0].shared_with[0]'),
                (['x' * 65], 'reservations[0].shared_with[0]'),
                (['p', 'p'], 'reservations[0].shared_with'),
                (['p%d' % i for i in range(101)],
                 'reservations[0].shared_with')):
            body = {'name': 'l', 'start_date': base.soon(600),
                    'end_date': base.soon(3600),
                    'reservations': [dict(good, shared_with=value)]}
            resp = self.rsv('POST', '/leases', body)
            self.assertEqual(400, resp.status_code, (value, resp.text))
            self.assertTrue(resp.json()['error_message'].startswith(field),
                            (value, resp.text))
        floating = {'name': 'l', 'start_date': base.soon(600),
                    'end_date': base.soon(3600), 'reservations': [{
                        'resource_type': 'virtual:floatingip',
                        'network_id': '3d1c5d3e-0a8a-4d4c-9a4e-0f5e3b3f6a71',
                        'amount': 1, 'shared_with': [SHARED]}]}
        resp = self.rsv('POST', '/leases', floating)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('shared_with', resp.json()['error_message'])
        # A host reservation can be shared, not open.
        resp = self.rsv('POST', '/leases', {
            'name': 'h', 'start_date': base.soon(600),
            'end_date': base.soon(3600), 'reservations': [{
                'resource_type': 'physical:host', 'min': 1, 'max': 1,
                'shared_with': [SHARED], 'matching': 'open'}]})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertTrue(resp.json()['error_message'].startswith(
            'reservations[0].matching: open is for'), resp.text)
        self.assertEqual([], self.leases())

    def test_policies(self):
        lease, rid = self.running_shared()
        # By default, readers of the project it is shared with see it and
        # its members boot; the owner's readers can not share.
        reader_rsv = self.lease_api('shared-reader', SHARED, ('reader',))
        reader_api = self.api_client('shared-reader', SHARED, ('reader',))
        self.assertEqual([lease['id']], [x['id'] for x in reader_rsv(
            'GET', '/leases').json()['leases']])
        boot = self.boot_into(rid, api=reader_api)
        self.assertEqual(403, boot.status, boot.content)
        self.assertEqual([], self.admin_api.get_servers(
            search_opts={'all_tenants': 1}))
        owner_reader = self.lease_api('owner-reader', OWNER, ('reader',))
        resp = owner_reader('PUT', '/leases/%s' % lease['id'], {
            'reservations': [{'id': rid, 'shared_with': [THIRD]}]})
        self.assertEqual(403, resp.status_code, resp.text)
        # An operator lets only admins share, and keeps readers of the
        # shared project from its leases.
        self.override_policy({
            policies.LEASES_SHARE: 'role:admin',
            policies.LEASES_GET_SHARED: 'role:admin',
            policies.LEASES_LIST_SHARED: 'role:admin',
            policies.RESERVATIONS_BOOT_SHARED: 'role:admin'})
        resp = self.share(lease, rid, [SHARED, THIRD])
        self.assertEqual(403, resp.status_code, resp.text)
        self.assertIn(policies.LEASES_SHARE, resp.json()['error_message'])
        resp = self.rsv('POST', '/leases', {
            'name': 'l2', 'start_date': base.soon(600),
            'end_date': base.soon(3600), 'reservations': [{
                'resource_type': 'flavor:instance',
                'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                'shared_with': [THIRD]}]})
        self.assertEqual(403, resp.status_code, resp.text)
        # A change that leaves the shares alone is the owner's still.
        self.assertEqual(200, self.rsv('PUT', '/leases/%s' % lease['id'], {
            'name': 'renamed'}).status_code)
        self.assertEqual([], self.shared_rsv('GET', '/leases').json()[
            'leases'])
        self.assertEqual(403, self.shared_rsv(
            'GET', '/leases/%s' % lease['id']).status_code)
        boot = self.boot_into(rid, api=self.shared_api)
        self.assertEqual(403, boot.status, boot.content)
        self.assertIn(policies.RESERVATIONS_BOOT_SHARED,
                      boot.body['forbidden']['message'])
        admin = self.admin_rsv('PUT', '/leases/%s' % lease['id'], {
            'reservations': [{'id': rid, 'shared_with': [THIRD]}]})
        self.assertEqual(200, admin.status_code, admin.text)

    def test_scheduler_lets_in_only_the_projects_it_is_shared_with(self):
        # Past the hook (a request spec replayed by a move, say), the
        # filter holds on its own.
        lease, rid = self.running_shared()

        def spec(project, instance):
            return self.reserved_spec(rid, project, instance)
        hosts = self.host_states(spec(OWNER, None))
        flt = reservation_filter.ReservationFilter()
        slots = {s.node for s in db_ledger.slots(STORE, rid)}
        self.assertEqual(slots, {h.nodename for h in flt.filter_all(
            hosts, spec(SHARED, uuids.new))})
        self.assertEqual([], list(flt.filter_all(hosts, spec(
            THIRD, uuids.other))))
        resp = self.boot_into(rid, api=self.shared_api)
        theirs = resp.body['server']['id']
        node = self.node_of(theirs)
        self.run_engine()
        self.assertEqual(200, self.share(lease, rid, []).status_code)
        # Taken back: no new boot of that project; its server, which holds
        # a slot, still goes to its slot's node.
        self.assertEqual([], list(flt.filter_all(hosts, spec(
            SHARED, uuids.newer))))
        self.assertEqual([node], [h.nodename for h in flt.filter_all(
            hosts, spec(SHARED, theirs))])
