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

"""Floating IP reservations, as Blazar has them: addresses of an external
network registered by an admin (/v1/floatingips), reserved over time by
``virtual:floatingip`` reservations, made floating IPs of the lease's
project in Neutron at the start and deleted at the end.
"""

import threading

from nova.tests import fixtures as nova_fixtures

from devcloud import embedded
from nova_reservation.db import ledger as db_ledger
from nova_reservation import exception
from nova_reservation.lease import floatingips
from nova_reservation.tests.functional import base

PUBLIC = embedded.NeutronFixture.public_network['id']
PUBLIC_SUBNET = embedded.NeutronFixture.public_subnet['id']
PRIVATE = nova_fixtures.NeutronFixture.network_1['id']
# Outside the public subnet's allocation pool (.10 to .99).
ADDRESSES = ('172.24.4.200', '172.24.4.201', '172.24.4.202')


def fip_reservation(amount=1, required=(), network=PUBLIC) -> dict:
    res = {'resource_type': 'virtual:floatingip', 'network_id': network,
           'amount': amount}
    if required:
        res['required_floatingips'] = list(required)
    return res


class FloatingIPTestCase(base.ReservationsTestCase):

    def register(self, address, network=PUBLIC, status=201):
        resp = self.admin_rsv('POST', '/floatingips', {
            'floating_network_id': network, 'floating_ip_address': address})
        self.assertEqual(status, resp.status_code, resp.text)
        return resp.json()

    def register_all(self) -> dict:
        return {a: self.register(a)['floatingip']['id'] for a in ADDRESSES}

    def fip_lease(self, start, minutes, status=201, **reservation):
        """A lease of floating IPs from `start` minutes from now."""
        body = {'name': 'fips', 'start_date': base.soon(start * 60),
                'end_date': base.soon((start + minutes) * 60), 'events': [],
                'reservations': [fip_reservation(**reservation)]}
        resp = self.rsv('POST', '/leases', body)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp.json()

    def neutron_fips(self) -> list:
        return self.cloud.neutron.list_floatingips()['floatingips']

    def addresses_of(self, lease: dict) -> set:
        """The addresses the ledger gives the lease's reservation."""
        rid = lease['reservations'][0]['id']
        known = {floatingips.node_of(i): a
                 for a, i in self.registered.items()}
        return {known[s.node] for s in db_ledger.slots(base.STORE, rid)}


class RegistrationTest(FloatingIPTestCase):
    """POST/GET/DELETE /v1/floatingips."""

    def test_register_show_list_delete(self):
        made = self.register('172.24.4.200')['floatingip']
        self.assertEqual(PUBLIC, made['floating_network_id'])
        self.assertEqual(PUBLIC_SUBNET, made['subnet_id'])
        self.assertEqual('172.24.4.200', made['floating_ip_address'])
        self.assertTrue(made['reservable'])
        shown = self.admin_rsv('GET', '/floatingips/%s' % made['id'])
        self.assertEqual(made, shown.json()['floatingip'])
        listed = self.admin_rsv('GET', '/floatingips').json()['floatingips']
        self.assertEqual([made], listed)
        self.assertEqual(204, self.admin_rsv(
            'DELETE', '/floatingips/%s' % made['id']).status_code)
        self.assertEqual(404, self.admin_rsv(
            'GET', '/floatingips/%s' % made['id']).status_code)
        self.assertEqual([], self.admin_rsv(
            'GET', '/floatingips').json()['floatingips'])

    def test_refused_addresses(self):
        cases = [
            ('172.24.4.50', PUBLIC, 'floating_ip_address', 'allocation pool'),
            ('172.24.4.1', PUBLIC, 'floating_ip_address', 'gateway'),
            ('172.24.4.0', PUBLIC, 'floating_ip_address',
             'is the network address of subnet %s (172.24.4.0/24): '
             'Neutron never gives it' % PUBLIC_SUBNET),
            ('172.24.4.255', PUBLIC, 'floating_ip_address',
             'is the broadcast address of subnet %s' % PUBLIC_SUBNET),
            ('10.9.9.9', PUBLIC, 'floating_ip_address', 'no subnet'),
            ('172.24.4.200', PRIVATE, 'floating_network_id',
             'not an external network'),
            ('172.24.4.200', '00000000-0000-0000-0000-000000000000',
             'floating_network_id', 'not found'),
            ('172.24.4.300', PUBLIC, 'floating_ip_address',
             'not an IP address'),
            ('', PUBLIC, 'floating_ip_address', ''),
            ('172.24.4.200', 'not-a-uuid', 'floating_network_id',
             'id of an external network'),
        ]
        for address, network, field, words in cases:
            body = self.register(address, network, status=400)
            message = body['error_message']
            self.assertIn(field, message, (address, network))
            self.assertIn(words, message, (address, network))
        for body in ({}, {'floating_network_id': PUBLIC},
                     {'floating_network_id': PUBLIC,
                      'floating_ip_address': '172.24.4.200', 'x': 1},
                     [], 'text', {'floating_network_id': PUBLIC,
                                  'floating_ip_address': ['172.24.4.200']}):
            resp = self.admin_rsv('POST', '/floatingips', body)
            self.assertEqual(400, resp.status_code, (body, resp.text))
        self.assertEqual([], self.admin_rsv(
            'GET', '/floatingips').json()['floatingips'])

    def test_an_address_in_use_or_registered_twice_is_refused(self):
        self.cloud.neutron.create_floatingip({'floatingip': {
            'floating_network_id': PUBLIC,
            'floating_ip_address': '172.24.4.201', 'project_id': 'x'}})
        body = self.register('172.24.4.201', status=400)
        self.assertIn('in use', body['error_message'])
        self.register('172.24.4.200')
        body = self.register('172.24.4.200', status=409)
        self.assertIn('registered already', body['error_message'])

    def test_neutron_down_is_a_503_that_says_to_retry(self):
        self.cloud.neutron.down = True
        self.addCleanup(setattr, self.cloud.neutron, 'down', False)
        body = self.register('172.24.4.200', status=503)
        self.assertIn('try again', body['error_message'])
        self.cloud.neutron.down = False
        self.assertEqual([], self.admin_rsv(
            'GET', '/floatingips').json()['floatingips'])

    def test_admins_only(self):
        made = self.register('172.24.4.200')['floatingip']
        for method, path, body in (
                ('GET', '/floatingips', None),
                ('GET', '/floatingips/%s' % made['id'], None),
                ('POST', '/floatingips', {
                    'floating_network_id': PUBLIC,
                    'floating_ip_address': '172.24.4.201'}),
                ('DELETE', '/floatingips/%s' % made['id'], None)):
            resp = self.rsv(method, path, body)
            self.assertEqual(403, resp.status_code, (method, path))
        self.assertEqual(1, len(self.admin_rsv(
            'GET', '/floatingips').json()['floatingips']))
        self.assertEqual(404, self.admin_rsv(
            'DELETE', '/floatingips/nope').status_code)


class FloatingIPLeaseTest(FloatingIPTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.registered = self.register_all()

    def test_view_and_no_address_promised_twice(self):
        first = self.fip_lease(60, 60, amount=2)['lease']
        res = first['reservations'][0]
        self.assertEqual('virtual:floatingip', res['resource_type'])
        self.assertEqual(PUBLIC, res['network_id'])
        self.assertEqual(2, res['amount'])
        self.assertEqual([], res['required_floatingips'])
        self.assertEqual(2, len(self.addresses_of(first)))
        # One address is left then: two are refused, with the earliest
        # start, the first lease's end.
        refused = self.fip_lease(90, 60, status=409, amount=2)
        self.assertEqual('NotEnoughCapacity', refused['error_name'])
        self.assertIn('floating IP', refused['error_message'])
        self.assertEqual(first['end_date'][:19],
                         refused['earliest_start'][:19])
        third = self.fip_lease(90, 60, amount=1)['lease']
        self.assertEqual(set(ADDRESSES), self.addresses_of(first) |
                         self.addresses_of(third))
        # Later, all are free again.
        self.fip_lease(151, 30, amount=3)

    def test_calendar(self):
        lease = self.fip_lease(60, 60, amount=1,
                               required=['172.24.4.201'])['lease']
        other = self.lease_api('other', 'other-project')
        self.assertEqual(403, other('POST', '/floatingips', {}).status_code)
        shown = self.admin_rsv('GET', '/ledger').json()['ledger']
        self.assertEqual(list(ADDRESSES), [
            a['address'] for a in shown['floatingips']])
        held = {a['address']: a['allocations'] for a in shown['floatingips']}
        self.assertEqual([lease['id']], [
            x['lease_id'] for x in held['172.24.4.201']])
        self.assertEqual('virtual:floatingip',
                         held['172.24.4.201'][0]['type'])
        self.assertEqual([], held['172.24.4.200'])
        mine = self.rsv('GET', '/ledger').json()['ledger']['floatingips']
        self.assertEqual(['172.24.4.201'], [a['address'] for a in mine])
        theirs = other('GET', '/ledger').json()['ledger']['floatingips']
        self.assertEqual([], theirs)

    def test_required_addresses(self):
        lease = self.fip_lease(60, 60, amount=2,
                               required=['172.24.4.202'])['lease']
        self.assertEqual(['172.24.4.202'],
                         lease['reservations'][0]['required_floatingips'])
        self.assertIn('172.24.4.202', self.addresses_of(lease))
        refused = self.fip_lease(60, 60, status=409, amount=1,
                                 required=['172.24.4.202'])
        self.assertIn('172.24.4.202', refused['error_message'])

    def test_bad_reservations_are_400s_naming_the_field(self):
        cases = [
            (dict(amount=1, required=['172.24.4.9']),
             'required_floatingips[0]', 'not a floating IP'),
            (dict(amount=1, required=['172.24.4.200', '172.24.4.201']),
             'required_floatingips', 'amount is 1'),
            (dict(amount=2, required=['172.24.4.200', '172.24.4.200']),
             'required_floatingips[1]', 'twice'),
            (dict(amount=1, required=['nope']),
             'required_floatingips[0]', ''),
            (dict(amount=1, network=PRIVATE), 'network_id',
             'no floating IP'),
            (dict(amount=0), 'amount', ''),
            (dict(amount=1, network='x'), 'network_id', ''),
        ]
        for reservation, field, words in cases:
            body = self.fip_lease(60, 60, status=400, **reservation)
            self.assertIn('reservations[0].' + field, body['error_message'])
            self.assertIn(words, body['error_message'])
        self.assertEqual([], self.leases())

    def test_grow_extend_and_what_can_not_change(self):
        lease = self.fip_lease(60, 60, amount=1)['lease']
        rid = lease['reservations'][0]['id']
        path = '/leases/%s' % lease['id']
        resp = self.rsv('PUT', path, {'reservations': [
            {'id': rid, 'amount': 2, 'network_id': PUBLIC}]})
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(2, len(self.addresses_of(lease)))
        for change, field in (({'network_id': PRIVATE}, 'network_id'),
                              ({'required_floatingips': ['172.24.4.201']},
                               'required_floatingips'),
                              ({'amount': 1}, 'amount')):
            resp = self.rsv('PUT', path, {'reservations': [
                dict(change, id=rid)]})
            self.assertEqual(400, resp.status_code, resp.text)
            self.assertIn(field, resp.json()['error_message'])
        # Another lease takes every address after this one's end: this one
        # can not be extended over it.
        self.fip_lease(125, 30, amount=3)
        resp = self.rsv('PUT', path, {'end_date': base.soon(150 * 60)})
        self.assertEqual(409, resp.status_code, resp.text)
        resp = self.rsv('PUT', path, {'end_date': base.soon(124 * 60)})
        self.assertEqual(200, resp.status_code, resp.text)

    def test_two_leases_race_for_the_last_addresses(self):
        self.fip_lease(60, 60, amount=1)
        answers = []

        def create():
            body = {'name': 'race', 'start_date': base.soon(60),
                    'end_date': base.soon(3660), 'events': [],
                    'reservations': [fip_reservation(amount=2)]}
            answers.append(self.rsv('POST', '/leases', body).status_code)
        threads = [threading.Thread(target=create) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([201, 409], sorted(answers))

    def test_an_address_held_by_a_lease_can_not_be_removed(self):
        lease = self.fip_lease(60, 60, amount=1,
                               required=['172.24.4.200'])['lease']
        fid = self.registered['172.24.4.200']
        resp = self.admin_rsv('DELETE', '/floatingips/%s' % fid)
        self.assertEqual(409, resp.status_code)
        self.assertIn(lease['id'], resp.json()['error_message'])
        self.assertEqual(204, self.rsv(
            'DELETE', '/leases/%s' % lease['id']).status_code)
        self.run_engine()
        self.assertEqual(204, self.admin_rsv(
            'DELETE', '/floatingips/%s' % fid).status_code)

    def test_a_lease_planned_with_an_address_removed_meanwhile(self):
        # The removal moves the ledger's generation first: a write planned
        # before it with that address is planned again.
        store = base.STORE
        planned = db_ledger.bump(store)
        fid = self.registered['172.24.4.202']
        self.assertEqual(204, self.admin_rsv(
            'DELETE', '/floatingips/%s' % fid).status_code)
        self.assertRaises(exception.LedgerConflict, db_ledger.bump, store,
                          planned, [floatingips.node_of(fid)])

    def test_a_reservation_of_floating_ips_takes_no_server(self):
        lease = self.fip_lease(0.02, 60, amount=1)['lease']
        self.wait_for_start(lease)
        resp = self.boot_into(lease['reservations'][0]['id'])
        self.assertEqual(409, resp.status, resp.content)
        self.assertIn('floating IPs', resp.body['conflictingRequest'][
            'message'])

    def test_availability(self):
        taken = self.fip_lease(60, 60, amount=2)['lease']
        resp = self.rsv('GET', '/availability?network_id=%s&amount=2'
                        '&duration=30' % PUBLIC)
        self.assertEqual(200, resp.status_code, resp.text)
        found = resp.json()['availability']
        self.assertIn('floating IP', found['request'])
        # Before that lease (ending by its start), and from its end.
        self.assertEqual(2, len(found['windows']))
        self.assertEqual(taken['end_date'][:19],
                         found['windows'][1]['earliest'][:19])
        resp = self.rsv('GET', '/availability?network_id=%s&amount=4'
                        '&duration=60' % PUBLIC)
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual([], resp.json()['availability']['windows'])


class FloatingIPEventsTest(FloatingIPTestCase):
    """The engine makes the addresses floating IPs at the start and deletes
    them at the end.
    """

    def setUp(self) -> None:
        super().setUp()
        self.registered = self.register_all()

    def test_start_and_end(self):
        lease = self.fip_lease(0.02, 60, amount=2,
                               required=['172.24.4.201'])['lease']
        self.assertEqual([], self.neutron_fips())
        self.wait_for_start(lease)
        fips = self.neutron_fips()
        rid = lease['reservations'][0]['id']
        self.assertEqual(self.addresses_of(lease),
                         {f['floating_ip_address'] for f in fips})
        for fip in fips:
            self.assertEqual(nova_fixtures.PROJECT_ID, fip['project_id'])
            self.assertEqual('reservation:%s' % rid, fip['description'])
            self.assertIn('reservation:%s' % rid, fip['tags'])
        # The user attaches one; the end deletes it all the same.
        self.cloud.neutron.update_floatingip(fips[0]['id'], {
            'floatingip': {'port_id': nova_fixtures.NeutronFixture.port_1[
                'id']}})
        self.run_engine(at=self.clock.now + 3700)
        self.assertEqual('TERMINATED', self.rsv(
            'GET', '/leases/%s' % lease['id']).json()['lease']['status'])
        self.assertEqual([], self.neutron_fips())

    def test_deleted_before_the_start_makes_nothing(self):
        lease = self.fip_lease(60, 60, amount=1)['lease']
        self.assertEqual(204, self.rsv(
            'DELETE', '/leases/%s' % lease['id']).status_code)
        self.run_engine(at=self.clock.now + 7200)
        self.assertEqual([], self.neutron_fips())

    def test_deleted_while_active_removes_them(self):
        lease = self.fip_lease(0.02, 60, amount=3)['lease']
        self.wait_for_start(lease)
        self.assertEqual(3, len(self.neutron_fips()))
        self.assertEqual(204, self.rsv(
            'DELETE', '/leases/%s' % lease['id']).status_code)
        self.run_engine()
        self.assertEqual([], self.neutron_fips())

    def failed_start(self, lease: dict) -> dict:
        """The lease's view once its start failed for good (no retry)."""
        self.flags(event_retries=0, group='reservation')
        self.assertRaises(AssertionError, self.wait_for_start, lease)
        shown = self.rsv('GET', '/leases/%s' % lease['id']).json()['lease']
        self.assertEqual('ERROR', shown['status'])
        return shown

    def test_neutron_down_at_the_start_then_retried(self):
        lease = self.fip_lease(0.02, 60, amount=2)['lease']
        self.cloud.neutron.down = True
        self.addCleanup(setattr, self.cloud.neutron, 'down', False)
        shown = self.failed_start(lease)
        self.cloud.neutron.down = False
        self.assertEqual([], self.neutron_fips())
        start = next(e for e in shown['events']
                     if e['event_type'] == 'start_lease')
        resp = self.admin_rsv('POST', '/leases/%s/events/%s/retry'
                              % (lease['id'], start['id']))
        self.assertEqual(202, resp.status_code, resp.text)
        self.run_engine()
        self.assertEqual('ACTIVE', self.rsv(
            'GET', '/leases/%s' % lease['id']).json()['lease']['status'])
        self.assertEqual(2, len(self.neutron_fips()))

    def test_an_address_taken_in_neutron_fails_the_start_whole(self):
        lease = self.fip_lease(0.02, 60, amount=3)['lease']
        # Someone made one of them a floating IP meanwhile.
        self.cloud.neutron.create_floatingip({'floatingip': {
            'floating_network_id': PUBLIC,
            'floating_ip_address': '172.24.4.202', 'project_id': 'x'}})
        shown = self.failed_start(lease)
        self.assertIn('172.24.4.202', shown['status_reason'] or '')
        # None of the lease's own was left made.
        self.assertEqual(['172.24.4.202'], [
            f['floating_ip_address'] for f in self.neutron_fips()])
        self.cloud.neutron._floatingips.clear()
