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

"""POST /v1/leases/{id}/split: slots or hosts of a reservation, with the
servers on them, handed on to a new lease, on real Nova."""

import concurrent.futures

from nova_reservation.db import api as db_api
from nova_reservation.db import bindings as db_bindings
from nova_reservation.db import ledger as db_ledger
from nova_reservation.tests.functional import base

STORE = db_api.Context()


class SplitTest(base.SharingTestCase):

    def split(self, lease, body, api=None):
        return (api or self.rsv)('POST', '/leases/%s/split' % lease['id'],
                                 body)

    def slots(self, *rids) -> list:
        """(node, start, end, size) of every slot of `rids`, sorted."""
        return sorted((s.node, s.start_at, s.end_at, s.vcpus, s.memory_mb,
                       s.disk_gb) for rid in rids
                      for s in db_ledger.slots(STORE, rid))

    def test_running_capacity_reservation_hands_on_free_slots(self):
        self.capture_notifications()
        lease, rid = self.running_shared(amount=3, shared_with=())
        mine = self.boot_into(rid)
        self.assertEqual(202, mine.status, mine.content)
        mine = mine.body['server']['id']
        host = self.node_of(mine)
        self.run_engine()
        before = self.slots(rid)

        resp = self.split(lease, {'reservation_id': rid, 'amount': 2,
                                  'name': 'handed on'})
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']
        new_rid = made['reservations'][0]['id']
        self.assertEqual(('handed on', lease['project_id'], 2, [],
                          lease['start_date'], lease['end_date']), (
            made['name'], made['project_id'],
            made['reservations'][0]['amount'],
            made['reservations'][0]['servers'], made['start_date'],
            made['end_date']))
        # Nothing of the ledger changed but whose slots they are; the
        # server stays where it is, in its lease (free slots go first).
        self.assertEqual(before, self.slots(rid, new_rid))
        self.assertEqual({mine: host}, self.bound(rid))
        old = self.rsv('GET', '/leases/%s' % lease['id']).json()['lease']
        self.assertEqual(1, old['reservations'][0]['amount'])
        self.assertEqual([('lease.update', lease['id']),
                          ('lease.create', made['id'])],
                         [(t, p['lease_id']) for t, p in
                          self.notified('lease.')[-2:]])
        self.assertEqual(['reservations.amount'],
                         self.notified('lease.update')[-1][1]['changed'])

        # The new lease starts at once (it began already) and takes boots;
        # the old one is full.
        self.run_engine()
        self.assertEqual('ACTIVE', self.rsv('GET', '/leases/%s' % made[
            'id']).json()['lease']['status'])
        for name in ('n1', 'n2'):
            resp = self.boot_into(new_rid, name=name)
            self.assertEqual(202, resp.status, resp.content)
            self.node_of(resp.body['server']['id'])
        full = self.boot_into(rid, name='full')
        self.assertEqual(409, full.status, full.content)
        # Blazar's --flavor <reservation id> works for the new one too.
        self.run_engine()
        self.assertEqual(2, len(self.bound(new_rid)))

    def test_servers_move_with_their_slots(self):
        lease, rid = self.running_shared(amount=2, shared_with=())
        servers = []
        for name in ('a', 'b'):
            resp = self.boot_into(rid, name=name)
            servers.append(resp.body['server']['id'])
            self.node_of(servers[-1])
        self.run_engine()
        hosts = {u: self.admin_api.get_server(u)[
            'OS-EXT-SRV-ATTR:hypervisor_hostname'] for u in servers}
        resp = self.split(lease, {'reservation_id': rid, 'amount': 1})
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']
        new_rid = made['reservations'][0]['id']
        moved, = made['reservations'][0]['servers']
        self.assertIn(moved, servers)
        stayed, = set(servers) - {moved}
        self.assertEqual({moved: hosts[moved]}, self.bound(new_rid))
        self.assertEqual({stayed: hosts[stayed]}, self.bound(rid))
        binding, = db_bindings.of_servers(STORE, [moved])
        self.assertEqual((made['id'], new_rid), (binding.lease_id,
                                                 binding.reservation_id))
        # The servers themselves are untouched, and their views follow.
        for uuid in servers:
            server = self.api.get_server(uuid)
            self.assertEqual(('ACTIVE', hosts[uuid]), (
                server['status'], self.admin_api.get_server(uuid)[
                    'OS-EXT-SRV-ATTR:hypervisor_hostname']))
        self.assertEqual(made['id'], self.api.get_server(moved)[
            'reservation']['lease_id'])
        # Deleting the new lease ends only its server.
        self.run_engine()
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % made['id']).status_code)
        self.run_engine()
        self.wait_gone(moved)
        self.assertEqual('ACTIVE', self.api.get_server(stayed)['status'])

    def test_admin_splits_into_another_project(self):
        lease, rid = self.running_shared(amount=2, shared_with=())
        body = {'reservation_id': rid, 'amount': 1,
                'project_id': base.SHARED}
        # A member can not hand capacity to another project.
        refused = self.split(lease, body)
        self.assertEqual(403, refused.status_code, refused.text)
        resp = self.split(lease, body, self.admin_rsv)
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']
        self.assertEqual(base.SHARED, made['project_id'])
        self.run_engine()
        theirs = self.shared_rsv('GET', '/leases/%s' % made['id']).json()[
            'lease']
        self.assertEqual(('ACTIVE', None), (theirs['status'],
                                            theirs['shared_by']))
        new_rid = made['reservations'][0]['id']
        resp = self.boot_into(new_rid, api=self.shared_api)
        self.assertEqual(202, resp.status, resp.content)
        self.node_of(resp.body['server']['id'])
        # The old owner no longer reaches it.
        self.assertEqual(404, self.boot_into(new_rid, name='x').status)
        self.assertEqual(403, self.rsv('GET', '/leases/%s'
                                       % made['id']).status_code)

    def test_refusals_leave_everything_as_it_was(self):
        lease, rid = self.running_shared(amount=2, shared_with=(
            base.SHARED,))
        server = self.boot_into(rid)
        self.node_of(server.body['server']['id'])
        before = self.slots(rid)
        for body, code, text in (
                ({'reservation_id': rid, 'amount': 2}, 409,
                 'amount: 2 of reservation'),
                ({'reservation_id': rid, 'amount': 0}, 400, 'amount:'),
                ({'reservation_id': rid, 'amount': 1.5}, 400, 'amount:'),
                ({'reservation_id': rid, 'amount': 'x'}, 400, 'amount:'),
                ({'reservation_id': rid}, 400, 'amount'),
                ({'amount': 1}, 400, 'reservation_id'),
                ({'reservation_id': 'nope', 'amount': 1}, 400,
                 'reservation_id:'),
                ({'reservation_id': '4b1c2f7e-0a4d-4c3e-9f1a-2e6d8b0c5a77',
                  'amount': 1}, 400, 'reservation_id: must be the id'),
                ({'reservation_id': rid, 'amount': 1, 'color': 'red'}, 400,
                 'color'),
                ({'reservation_id': rid, 'amount': 1, 'project_id': ''},
                 400, 'project_id'),
                ([], 400, ''), ('split', 400, '')):
            resp = self.split(lease, body)
            self.assertEqual(code, resp.status_code, (body, resp.text))
            self.assertIn(text, resp.json()['error_message'], body)
        # Not the owner: the project it is shared with, and a third one.
        for api in (self.shared_rsv, self.third_rsv):
            resp = self.split(lease, {'reservation_id': rid, 'amount': 1},
                              api)
            self.assertEqual(403, resp.status_code, resp.text)
        # A server lease does not split.
        boot = self.boot(base.params('now', base.when(60)), name='leased')
        other = boot.body['server']['reservation']
        resp = self.rsv('POST', '/leases/%s/split' % other['lease_id'], {
            'reservation_id': other['reservation_id'], 'amount': 1})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual(before, self.slots(rid))
        self.assertEqual(1, len([x for x in self.leases()
                                 if x.name == 'l']))
        # An ended lease does not split either.
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % lease['id']).status_code)
        resp = self.split(lease, {'reservation_id': rid, 'amount': 1})
        self.assertIn(resp.status_code, (404, 409), resp.text)

    def test_two_splits_at_once_and_a_boot_for_the_last_slot(self):
        for round_ in range(2):
            lease, rid = self.running_shared(amount=3, shared_with=())
            before = self.slots(rid)
            with concurrent.futures.ThreadPoolExecutor(3) as pool:
                splits = [pool.submit(self.split, lease, {
                    'reservation_id': rid, 'amount': 1}) for _ in range(2)]
                boot = pool.submit(self.boot_into, rid, None,
                                   base.ONE_PER_NODE, 'last%d' % round_)
                answers = [s.result() for s in splits]
                boot = boot.result()
            codes = sorted(a.status_code for a in answers)
            self.assertIn(codes, ([201, 201], [201, 409]), [
                a.text for a in answers])
            self.assertIn(boot.status, (202, 409), boot.content)
            made = [a.json()['lease']['reservations'][0]['id']
                    for a in answers if a.status_code == 201]
            # No slot lost, none made: the three are where they were.
            self.assertEqual(before, self.slots(rid, *made))
            left = self.rsv('GET', '/leases/%s' % lease['id']).json()[
                'lease']['reservations'][0]['amount']
            self.assertEqual(3, left + len(made))
            if boot.status == 202:
                self.node_of(boot.body['server']['id'])
            self.run_engine()
            for s in self.admin_api.get_servers(
                    search_opts={'all_tenants': 1}):
                self.admin_api.delete_server(s['id'])
                self.wait_gone(s['id'])
            for x in self.leases():
                self.rsv('DELETE', '/leases/%s' % x.id)
            self.run_engine()


class HostSplitTest(base.SharingTestCase):
    NODES = ('host1', 'host2', 'host3', 'host4')

    def aggregates(self) -> dict:
        return {a['name']: a for a in self.admin_api.api_get(
            '/os-aggregates').body['aggregates']}

    def split_one(self, lease, rid) -> tuple:
        """(the new lease, its reservation's id, the host it got) of a
        split of one host of `rid`.
        """
        resp = self.rsv('POST', '/leases/%s/split' % lease['id'], {
            'reservation_id': rid, 'amount': 1})
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']
        new_rid = made['reservations'][0]['id']
        moved, = {s.node for s in db_ledger.slots(STORE, new_rid)}
        return made, new_rid, moved

    def test_hosts_and_their_servers_move(self):
        for name in ('host3', 'host4'):
            resp = self.admin_rsv('POST', '/os-hosts', {'name': name})
            self.assertEqual(201, resp.status_code, resp.text)
        lease = self.lease({'resource_type': 'physical:host', 'min': '2',
                            'max': '2'}, start=1.0)
        rid = lease['reservations'][0]['id']
        self.wait_for_start(lease)
        resp = self.boot_into(rid, flavor=base.TINY)
        uuid = resp.body['server']['id']
        busy = self.node_of(uuid)
        self.run_engine()

        made, new_rid, moved = self.split_one(lease, rid)
        # The host without a server goes; the busy one stays, with its
        # server.
        self.assertNotEqual(busy, moved)
        self.assertEqual([busy], [s.node for s in db_ledger.slots(
            STORE, rid)])
        self.assertEqual((1, 1), (
            made['reservations'][0]['max'], self.rsv(
                'GET', '/leases/%s' % lease['id']).json()['lease'][
                'reservations'][0]['max']))
        self.run_engine()
        self.assertEqual([moved], self.aggregates()[new_rid]['hosts'])
        resp = self.boot_into(new_rid, flavor=base.TINY, name='new')
        self.assertEqual(202, resp.status, resp.content)
        self.assertEqual(moved, self.node_of(resp.body['server']['id']))
        # Both leases end whole: every host back in the freepool, their
        # aggregates gone.
        for x in (lease, made):
            self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                           % x['id']).status_code)
        self.run_engine()
        aggs = self.aggregates()
        self.assertEqual(['host3', 'host4'], sorted(aggs['freepool'][
            'hosts']))
        self.assertNotIn(rid, aggs)
        self.assertNotIn(new_rid, aggs)

    def test_a_busy_host_moves_with_its_server(self):
        for name in ('host3', 'host4'):
            self.admin_rsv('POST', '/os-hosts', {'name': name})
        lease = self.lease({'resource_type': 'physical:host', 'min': '2',
                            'max': '2'}, start=1.0)
        rid = lease['reservations'][0]['id']
        self.wait_for_start(lease)
        # One server a host (the flavor fills a node).
        on = {}
        for name in ('a', 'b'):
            uuid = self.boot_into(rid, name=name).body['server']['id']
            on[self.node_of(uuid)] = uuid
        self.assertEqual(['host3', 'host4'], sorted(on))
        self.run_engine()
        made, new_rid, moved = self.split_one(lease, rid)
        stayed, = set(on) - {moved}
        self.assertEqual(([on[moved]], [on[stayed]]), tuple(
            [b.instance_uuid for b in db_bindings.of_reservation(STORE, r)]
            for r in (new_rid, rid)))
        binding, = db_bindings.of_servers(STORE, [on[moved]])
        self.assertEqual(made['id'], binding.lease_id)
        self.run_engine()
        # Its end ends only its own host's server.
        self.assertEqual(204, self.rsv('DELETE', '/leases/%s'
                                       % made['id']).status_code)
        self.run_engine()
        self.wait_gone(on[moved])
        self.assertEqual('ACTIVE', self.api.get_server(on[stayed])[
            'status'])
        self.assertNotIn(new_rid, self.aggregates())
        self.assertIn(moved, self.aggregates()['freepool']['hosts'])
