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

"""Maintenance windows on real Nova: an admin's lease that holds compute
nodes whole, moves the leases in its way (future and running ones, with
their servers) or is refused naming them, and disables the nodes'
compute services while it runs."""

import concurrent.futures
import datetime
import urllib.parse

from nova_reservation.capacity import epoch
from nova_reservation.db import api as db_api
from nova_reservation.db import leases as db_leases
from nova_reservation.db import ledger as db_ledger
from nova_reservation.lease import kinds
from nova_reservation.lease import outcomes
from nova_reservation.tests.functional import base

STORE = db_api.Context()


def parse(date: str) -> datetime.datetime:
    return datetime.datetime.strptime(date, '%Y-%m-%dT%H:%M:%S.%f')


def window(hosts, reason='disk firmware', **extra) -> dict:
    return dict({'resource_type': 'maintenance', 'hosts': list(hosts),
                 'reason': reason}, **extra)


class MaintenanceTest(base.SharingTestCase):

    def make(self, reservations, start=1800.0, minutes=90, api=None,
             **extra):
        body = dict({'name': 'window', 'start_date': base.soon(start),
                     'end_date': base.soon(minutes * 60),
                     'reservations': reservations}, **extra)
        return (api or self.admin_rsv)('POST', '/leases', body)

    def nodes(self, rid) -> list:
        return sorted(s.node for s in db_ledger.slots(STORE, rid))

    def test_window_moves_future_leases_or_names_those_that_can_not(self):
        # A future lease of one project (one server a node), one of
        # another.
        first = self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                            'affinity': 'None'}, start=3600, minutes=120)
        rid = first['reservations'][0]['id']
        [node] = self.nodes(rid)

        # A member may not make a window, of its project or another's.
        for api in (self.rsv, self.third_rsv):
            resp = self.make([window([node])], api=api)
            self.assertEqual(403, resp.status_code, resp.text)
            self.assertIn('reservation:leases:maintenance', resp.text)

        resp = self.make([window([node], reason='PSU swap')])
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']
        res = made['reservations'][0]
        self.assertEqual(('maintenance', [node], 'PSU swap'), (
            res['resource_type'], res['hosts'], res['reason']))
        # The window holds the node whole; the lease moved off it, over
        # the same interval.
        [slot] = db_ledger.slots(STORE, res['id'])
        self.assertEqual((node, 10, 7680), (slot.node, slot.vcpus,
                                            slot.memory_mb))
        [moved] = self.nodes(rid)
        self.assertNotEqual(node, moved)

        # A new lease that needs the node then does not fit.
        resp = self.rsv('POST', '/leases', {
            'name': 'all', 'start_date': base.soon(3600),
            'end_date': base.soon(7200), 'reservations': [{
                'resource_type': 'flavor:instance',
                'flavor_id': base.ONE_PER_NODE, 'amount': 3,
                'affinity': 'None'}]})
        self.assertEqual(409, resp.status_code, resp.text)

        # Later, three leases fill the three nodes: a window over one of
        # them then is refused, naming the lease that can not move, and
        # nothing moves.
        full = [self.lease({'resource_type': 'flavor:instance',
                            'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                            'affinity': 'None'}, start=4 * 3600,
                           minutes=300)
                for _ in range(3)]
        before = {x['id']: self.nodes(x['reservations'][0]['id'])
                  for x in full}
        blocked = next(x for x in full if before[x['id']] == [node])
        resp = self.make([window([node])], start=4.5 * 3600, minutes=290)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual([{'lease_id': blocked['id'], 'reason': (
            'no other node has room for its slots on %s' % node)}], [
            dict(x, reason=x['reason'].split(' from ')[0])
            for x in resp.json()['leases']])
        self.assertEqual(before, {x['id']: self.nodes(
            x['reservations'][0]['id']) for x in full})

        # Another window over the same node at the same time meets the
        # first; a window's dates do not change.
        resp = self.make([window([node])], start=2400, minutes=60)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('maintenance window holds node %s' % node, resp.text)
        resp = self.admin_rsv('PUT', '/leases/%s' % made['id'],
                              {'end_date': base.soon(100 * 60)})
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('dates do not change', resp.text)

        # The calendar shows the window to every project (its reason, no
        # more); availability does not count the node then.
        for api, own in ((self.rsv, True), (self.third_rsv, False)):
            resp = api('GET', '/ledger')
            self.assertEqual(200, resp.status_code, resp.text)
            [shown] = [a for n in resp.json()['ledger']['nodes']
                       for a in n['allocations']
                       if a['type'] == 'maintenance']
            self.assertEqual(('PSU swap', made['start_date'],
                              made['id'] if own else None), (
                shown['reason'], shown['start'], shown['lease_id']))
        resp = self.third_rsv('GET', '/availability?' + urllib.parse.urlencode(
            {'flavor_id': base.ONE_PER_NODE, 'amount': 3,
             'duration': '30m', 'after': base.soon(600)[:19],
             'before': base.soon(10 * 3600)[:19]}))
        self.assertEqual(200, resp.status_code, resp.text)
        for found in resp.json()['availability']['windows']:
            # No start of three servers for half an hour meets the window.
            self.assertTrue(
                parse(found['latest']) + datetime.timedelta(minutes=30) <=
                parse(made['start_date']) or
                parse(found['earliest']) >= parse(made['end_date']), found)

    def test_running_lease_moves_and_hostile_input(self):
        # A running lease's slot that holds no server simply moves.
        running = self.lease({'resource_type': 'flavor:instance',
                              'flavor_id': base.ONE_PER_NODE, 'amount': 1,
                              'affinity': 'None'}, start='now')
        rid = running['reservations'][0]['id']
        [node] = self.nodes(rid)
        resp = self.make([window([node])], start=60)
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']['id']
        [moved] = self.nodes(rid)
        self.assertNotEqual(node, moved)

        free = next(n for n in self.NODES if n not in (node, moved))
        cases = [
            ([window(['nohost'])], 'hosts[0]'),
            ([window([])], 'hosts'),
            ([window([free, free])], 'hosts'),
            ([window(['bad host'])], 'hosts'),
            ([window([free], reason=7)], 'reason'),
            ([window([free], reason='')], 'reason'),
            ([window([free], reason='x' * 256)], 'reason'),
            ([window([free], reason='a\x00b')], 'reason'),
            ([window([free], amount=1)], 'amount'),
            ([{'resource_type': 'maintenance', 'hosts': [free]}], 'reason'),
            ([window([free]), window([free])], 'reservations'),
            ([window([free]), {'resource_type': 'flavor:instance',
                               'flavor_id': base.ONE_PER_NODE,
                               'amount': 1}], 'reservations'),
        ]
        for reservations, field in cases:
            resp = self.make(reservations)
            self.assertEqual(400, resp.status_code, (reservations,
                                                     resp.text))
            self.assertIn(field, resp.text, reservations)
        resp = self.make([window([free])], recurrence={'every': 'day',
                                                       'count': 2})
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('recurrence', resp.text)
        resp = self.make([window([free])], on_end='extend_if_free')
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual(sorted([running['id'], made]), sorted(
            x.id for x in self.leases()))

        # Two windows over the same node at once: one is made.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: self.make(
                [window([free])]).status_code, range(2)))
        self.assertEqual([201, 409], sorted(answers))

    def service(self, host) -> dict:
        [found] = self.nova_client().compute_services(host)
        return found

    def test_start_disables_compute_services_and_end_enables_them(self):
        resp = self.make([window(['host1', 'host2'], reason='rack 4 power')],
                         start=2, minutes=60)
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']
        # Ordinary servers run for good: none goes where the window will
        # hold the nodes.
        for name in ('a', 'b'):
            server = self.boot(None, flavor=base.TINY, name=name)
            self.assertEqual(202, server.status, server.content)
            self.assertEqual('host3', self.node_of(server.body['server'][
                'id']))
        # The operator's own disable of host2, before the window.
        self.set_compute('host2', 'disabled')

        row = db_leases.get(STORE, made['id'])
        self.start_lease(row)
        self.assertEqual('ACTIVE', self.admin_rsv('GET', '/leases/%s' % made[
            'id']).json()['lease']['status'])
        host1, host2 = self.service('host1'), self.service('host2')
        self.assertEqual(('disabled', 'rack 4 power (maintenance window '
                          '%s)' % made['id']), (host1['status'],
                                                host1['disabled_reason']))
        self.assertEqual(('disabled', None), (host2['status'],
                                              host2['disabled_reason']))
        # A start run again (as after a crash between its writes) leaves
        # them as they are; the window's node has not failed.
        details = db_leases.details(STORE, [made['id']])[made['id']]
        for res in details.reservations:
            kinds.of(res.resource_type).start(
                self.nova_client(), details.lease, res, outcomes.Writes())
        # (But for the time of its last heartbeat, which the compute
        # service writes on its own.)
        self.assertEqual(dict(host1, updated_at=None),
                         dict(self.service('host1'), updated_at=None))
        self.assertEqual({'host2'}, self.nova_client().failed_nodes())

        self.run_engine(at=epoch.to_epoch(row.end_at) + 1)
        self.assertEqual('TERMINATED', self.admin_rsv(
            'GET', '/leases/%s' % made['id']).json()['lease']['status'])
        self.assertEqual(('enabled', 'disabled'), (
            self.service('host1')['status'],
            self.service('host2')['status']))
        self.set_compute('host2', 'enabled')

        # A window deleted while it runs enables its services again.
        resp = self.make([window(['host3'])], start=2, minutes=120)
        self.assertEqual(201, resp.status_code, resp.text)
        again = resp.json()['lease']['id']
        self.run_engine()
        self.assertEqual('disabled', self.service('host3')['status'])
        resp = self.admin_rsv('DELETE', '/leases/%s' % again)
        self.assertEqual(204, resp.status_code, resp.text)
        self.run_engine()
        self.assertEqual('enabled', self.service('host3')['status'])

    def server_on(self, node: str, name: str) -> dict:
        """An ordinary server of the project on `node` (an admin's
        placement of it, as Nova lets an admin name a host).
        """
        server = self._build_server(name=name, image_uuid=base.IMAGE,
                                    flavor_id=base.TINY, networks='none',
                                    az='nova:%s' % node)
        return self._wait_for_state_change(
            self.admin_api.post_server({'server': server}), 'ACTIVE')

    def test_servers_are_told_then_moved_off_or_listed(self):
        self.capture_notifications()
        running = self.server_on('host1', 'running')
        stopped = self.server_on('host1', 'stopped')
        self.admin_api.post_server_action(stopped['id'], {'os-stop': None})
        self._wait_for_state_change(stopped, 'SHUTOFF')
        elsewhere = self.server_on('host2', 'elsewhere')
        resp = self.make([window(['host1'], reason='BIOS')], start=1200,
                         minutes=60)
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']

        # Within preempt_notice of the start: told, not moved yet.
        self.engine.check_hosts()
        warned = self.notified('server.maintenance.warning')
        self.assertEqual(sorted([running['id'], stopped['id']]), sorted(
            p['server_id'] for _, p in warned))
        self.assertEqual({('host1', 'BIOS', made['id'])}, {
            (p['node'], p['reason'], p['lease_id']) for _, p in warned})
        for uuid in (running['id'], stopped['id']):
            server = self.admin_api.get_server(uuid)
            self.assertEqual(made['start_date'] + 'Z', server['metadata'][
                'reservation:maintenance_at'])
            self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])
        self.assertNotIn('reservation:maintenance_at', self.admin_api
                         .get_server(elsewhere['id'])['metadata'])
        self.engine.check_hosts()
        self.assertEqual(2, len(self.notified('server.maintenance.'
                                              'warning')))

        # Within preempt_margin: the running server is live-migrated off;
        # the stopped one is listed, and the window's owner told.
        start = parse(made['start_date'])
        self.clock.now = epoch.to_epoch(start) - 300
        self.engine.check_hosts()
        moved = self._wait_for_state_change(
            self.admin_api.get_server(running['id']), 'ACTIVE')
        self.assertNotEqual('host1', moved['OS-EXT-SRV-ATTR:host'])
        self.engine.check_hosts()
        view = self.admin_rsv('GET', '/leases/%s' % made['id']).json()[
            'lease']
        self.assertEqual([{'server_id': stopped['id'], 'node': 'host1',
                           'reason': 'it is SHUTOFF: only a running server '
                                     'migrates live'}],
                         view['reservations'][0]['unmoved_servers'])
        self.assertEqual([made['id']], [
            p['lease_id'] for _, p in self.notified('lease.update')])

    def test_preemptible_servers_leave_as_before_any_lease(self):
        # The scheduler reads the ledger at each boot: a copy up to
        # ledger_max_age old may not hold a window just made (a boot it
        # lets onto the window's node is moved off before the start).
        self.flags(ledger_max_age=0, group='reservation')
        # A preemptible boot forces no host: host1 is the only one enabled
        # for it.
        for node in ('host2', 'host3'):
            self.set_compute(node, 'disabled')
        resp = self.boot(None, flavor=base.TINY, name='spot',
                         extra_hints={'preemptible': 'true'})
        self.assertEqual(202, resp.status, resp.content)
        spot = resp.body['server']['id']
        self.assertEqual('host1', self.node_of(spot))
        for node in ('host2', 'host3'):
            self.set_compute(node, 'enabled')
        resp = self.make([window(['host1'])], start=1800, minutes=60)
        self.assertEqual(201, resp.status_code, resp.text)
        start = epoch.to_epoch(parse(resp.json()['lease'][
            'start_date']))
        self.engine.preempt()
        self.assertEqual(resp.json()['lease']['start_date'][:19] + 'Z',
                         self.admin_api.get_server(spot)['metadata'][
                             'reservation:preemptible_until'])
        # Within preempt_margin: moved off by the preemption; the window's
        # own pass leaves it to it.
        self.clock.now = start - 300
        self.engine.check_hosts()
        for _ in range(6):
            self.engine.preempt()
        self.assertNotEqual('host1', self.node_of(spot))
        self.assertNotIn('reservation:maintenance_at', self.admin_api
                         .get_server(spot)['metadata'])
        # Nor do preemptible boots go onto the node of a window that
        # starts within preempt_margin.
        resp = self.make([window(['host2'])], start=120, minutes=60)
        self.assertEqual(201, resp.status_code, resp.text)
        for name in ('late1', 'late2', 'late3'):
            resp = self.boot(None, flavor=base.TINY, name=name,
                             extra_hints={'preemptible': 'true'})
            self.assertEqual(202, resp.status, resp.content)
            self.assertNotEqual('host2', self.node_of(resp.body['server'][
                'id']))

    def test_running_leases_move_with_their_servers_or_block(self):
        self.capture_notifications()
        # Two running leases, a server in each: one to be moved live, one
        # stopped.
        leases = [self.lease({'resource_type': 'flavor:instance',
                              'flavor_id': flavor, 'amount': 1,
                              'affinity': 'None'}, start=1.0)
                  for flavor in (base.ONE_PER_NODE, base.TINY)]
        self.wait_for_start(leases[1])
        rids = [x['reservations'][0]['id'] for x in leases]
        live, stopped = [
            self.boot_into(rid, flavor=flavor, name=name).body['server']['id']
            for rid, flavor, name in ((rids[0], base.ONE_PER_NODE, 'live'),
                                      (rids[1], base.TINY, 'stopped'))]
        first, second = self.node_of(live), self.node_of(stopped)
        self.run_engine()   # bound to their leases, tagged
        self.admin_api.post_server_action(stopped, {'os-stop': None})
        self._wait_for_state_change(self.admin_api.get_server(stopped),
                                    'SHUTOFF')
        # The window holds the leases' nodes (two of the three); both
        # leases fit on the third node.
        nodes = {first, second}
        if len(nodes) == 1:
            nodes.add(next(n for n in self.NODES if n != first))
        nodes = sorted(nodes)
        [third] = set(self.NODES) - set(nodes)
        ids = sorted(x['id'] for x in leases)

        # Over all three nodes, neither lease has anywhere to go: refused,
        # naming both, nothing moved.
        resp = self.make([window(self.NODES)], start=1200, minutes=60)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual(ids, [x['lease_id'] for x in resp.json()['leases']])
        self.assertIn('no other node has room', resp.text)
        self.assertEqual({live: first}, self.bound(rids[0]))
        self.assertEqual({stopped: second}, self.bound(rids[1]))

        resp = self.make([window(nodes, reason='BIOS')], start=1200,
                         minutes=60)
        self.assertEqual(201, resp.status_code, resp.text)
        made = resp.json()['lease']
        # The slots moved, each with its server, to the third node.
        self.assertEqual({live: third}, self.bound(rids[0]))
        self.assertEqual({stopped: third}, self.bound(rids[1]))
        # Which the window holds now: a window over it then is refused,
        # naming the running leases, which have nowhere else to go.
        resp = self.make([window([third])], start=1500, minutes=30)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertEqual(ids, [x['lease_id'] for x in resp.json()['leases']])

        # Within preempt_notice of the start: both servers told.
        self.engine.check_hosts()
        self.assertEqual(sorted([live, stopped]), sorted(
            p['server_id'] for _, p in self.notified(
                'server.maintenance.warning')))
        # Until the window starts, a server may run off its slot's node.
        self.assert_invariants()

        # Within preempt_margin: the running server is live-migrated to
        # its slot's node, where it runs, still in its lease; the stopped
        # one is listed.
        self.clock.now = epoch.to_epoch(parse(made['start_date'])) - 300
        self.engine.check_hosts()
        server = self._wait_for_state_change(
            self.admin_api.get_server(live), 'ACTIVE')
        self.assertEqual(third, server['OS-EXT-SRV-ATTR:hypervisor_hostname'])
        self.assertEqual(leases[0]['id'], self.api.get_server(live)[
            'reservation']['lease_id'])
        self.assertEqual({live: third}, self.bound(rids[0]))
        self.engine.check_hosts()
        view = self.admin_rsv('GET', '/leases/%s' % made['id']).json()[
            'lease']
        self.assertEqual([{'server_id': stopped, 'node': second,
                           'reason': 'it is SHUTOFF: only a running server '
                                     'migrates live'}],
                         view['reservations'][0]['unmoved_servers'])
        self.assertEqual(second, self.admin_api.get_server(stopped)[
            'OS-EXT-SRV-ATTR:hypervisor_hostname'])
        # Started again before the window ends, it follows its slot at the
        # next pass, and is no longer listed.
        self.admin_api.post_server_action(stopped, {'os-start': None})
        self._wait_for_state_change(self.admin_api.get_server(stopped),
                                    'ACTIVE')
        self.engine.check_hosts()
        self._wait_for_migration_status(
            self.admin_api.get_server(stopped), ['completed'])
        self.assertEqual(third, self.node_of(stopped))
        self.engine.check_hosts()
        self.assertFalse(self.admin_rsv('GET', '/leases/%s' % made[
            'id']).json()['lease']['reservations'][0]['unmoved_servers'])
