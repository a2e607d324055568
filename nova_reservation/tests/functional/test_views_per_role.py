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

"""Every view of the lease API, and what the boot hook adds to Nova's
server views, as each role sees it: the owner project's member and
reader, a project a reservation is shared with (member and reader),
another project's member and an admin of another project. Each view's
fields are asserted whole, so that a field added later fails here until
the table of doc/source/admin/policy.rst and this test say who sees it.
"""

import urllib.parse

from oslo_utils import uuidutils
import sqlalchemy as sa

from devcloud import embedded
from nova_reservation.db import api as db_api
from nova_reservation.db import models
from nova_reservation.lease import quotas as lease_quotas
from nova_reservation.tests.functional import base

OWNER = base.OWNER
SHARED = base.SHARED
THIRD = base.THIRD
ADMIN_PROJECT = 'admin-project'
ROLES = ('owner member', 'owner reader', 'shared member', 'shared reader',
         'other member', 'admin')
OWNERS = ('owner member', 'owner reader')
SHARERS = ('shared member', 'shared reader')

LEASE = {'id', 'name', 'project_id', 'user_id', 'start_date', 'end_date',
         'status', 'status_reason', 'degraded', 'idle_since', 'on_end',
         'max_extensions', 'extensions', 'if_busy', 'flexible_start',
         'start_before', 'retries', 'retry_interval', 'tries',
         'next_try_date', 'series_id', 'occurrence', 'trust_id',
         'shared_by', 'before_end_date', 'created_at', 'updated_at',
         'reservations', 'events'}
EVENT = {'id', 'lease_id', 'event_type', 'time', 'status', 'created_at',
         'updated_at'}
RESERVATION = {'id', 'lease_id', 'resource_type', 'status', 'created_at',
               'updated_at', 'missing_resources', 'resources_changed'}
SHARING = {'shared_with', 'matching', 'slots_by_project'}
SERVER_RESERVATION = RESERVATION | {'amount', 'flavor_id', 'resource_id',
                                    'servers'}
INSTANCE_RESERVATION = SERVER_RESERVATION | SHARING | {
    'affinity', 'vcpus', 'memory_mb', 'disk_gb', 'resource_properties',
    'aggregate_id', 'server_group_id'}
HOST_RESERVATION = RESERVATION | SHARING | {
    'min', 'max', 'hypervisor_properties', 'resource_properties',
    'before_end', 'resource_id'}
FLOATINGIP_RESERVATION = RESERVATION | {'network_id', 'amount',
                                        'required_floatingips',
                                        'resource_id'}
WINDOW_RESERVATION = RESERVATION | {'hosts', 'reason', 'unmoved_servers'}
LEDGER = {'after', 'before', 'nodes', 'floatingips', 'free'}
NODE = {'name', 'reservable', 'capacity', 'allocations'}
SLOT = {'vcpus', 'memory_mb', 'disk_gb', 'type', 'start', 'end',
        'lease_id', 'lease_name', 'reservation_id', 'project_id',
        'server_id', 'shared_by', 'held'}
WINDOW_SLOT = SLOT | {'reason'}
ADDRESS = {'address', 'network_id', 'allocations'}
ADDRESS_SLOT = {'type', 'start', 'end', 'lease_id', 'lease_name',
                'reservation_id', 'project_id'}
FREE = {'vcpus', 'memory_mb', 'disk_gb', 'flavor_id', 'flavor_name',
        'steps'}
AVAILABILITY = {'request', 'duration_minutes', 'after', 'before',
                'earliest_start', 'windows'}
QUOTA = {'project_id', lease_quotas.PER_MONTH} | set(
    lease_quotas.AT_ANY_INSTANT)
HOST = {'id', 'hypervisor_hostname', 'service_name', 'hypervisor_type',
        'hypervisor_version', 'vcpus', 'memory_mb', 'local_gb', 'cpu_info',
        'reservable', 'trust_id', 'created_at', 'updated_at'}
HOST_ALLOCATION = {'resource_id', 'reservations'}
HOST_ALLOCATION_RESERVATION = {'id', 'lease_id', 'start_date', 'end_date'}
FLOATINGIP = {'id', 'floating_network_id', 'subnet_id',
              'floating_ip_address', 'reservable', 'created_at',
              'updated_at'}
# What the hook adds to Nova's server view, and to the answer to a boot
# with lease_params.
SERVER_VIEW_RESERVATION = {'lease_id', 'lease_name', 'reservation_id',
                           'status', 'start', 'end', 'on_end', 'fallback'}
BOOT_RESERVATION = {'lease_id', 'lease_name', 'reservation_id', 'status'}


class ViewsPerRoleTest(base.SharingTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.roles = {
            'owner member': self.rsv,
            'owner reader': self.lease_api('owner-reader', OWNER,
                                           ('reader',)),
            'shared member': self.shared_rsv,
            'shared reader': self.lease_api('shared-reader', SHARED,
                                            ('reader',)),
            'other member': self.third_rsv,
            'admin': self.lease_api('cloud-admin', ADMIN_PROJECT,
                                    ('reader', 'member', 'admin'))}

    def get(self, role: str, path: str, status: int = 200):
        resp = self.roles[role]('GET', path)
        self.assertEqual(status, resp.status_code, (role, path, resp.text))
        return resp.json()

    def slots(self, role: str) -> list:
        """The allocations of every node of the role's calendar."""
        ledger = self.get(role, '/ledger')['ledger']
        self.assertEqual(LEDGER, set(ledger), role)
        for node in ledger['nodes']:
            self.assertEqual(NODE, set(node), role)
            # Node names are Nova's hostIds to all but admins.
            self.assertEqual(role == 'admin', node['name'] in self.NODES,
                             (role, node['name']))
            self.assertEqual(role == 'admin', node['capacity'] is not None,
                             role)
        for free in ledger['free']:
            self.assertEqual(FREE, set(free), role)
        return [a for n in ledger['nodes'] for a in n['allocations']]

    def test_leases_calendar_and_servers(self):
        # A running capacity reservation of the owner, shared, with a
        # server of each project in it; a maintenance window of an admin.
        lease, rid = self.running_shared()
        mine = self.boot_into(rid).body['server']['id']
        theirs = self.boot_into(rid, api=self.shared_api).body['server'][
            'id']
        self.node_of(mine)
        self.node_of(theirs)
        self.run_engine()
        # What is the owner's own: its trust, a reason that names its
        # server.
        with db_api.get_engine().begin() as conn:
            conn.execute(sa.update(models.Lease).where(
                models.Lease.id == lease['id']).values(
                trust_id=uuidutils.generate_uuid(),
                status_reason='server %s of lease l is in ERROR' % mine))
        window = self.roles['admin']('POST', '/leases', {
            'name': 'rack 7', 'start_date': base.soon(3 * 3600),
            'end_date': base.soon(4 * 3600),
            'reservations': [{'resource_type': 'maintenance',
                              'hosts': ['host3'], 'reason': 'PSU swap'}]})
        self.assertEqual(201, window.status_code, window.text)
        window = window.json()['lease']
        self.assertEqual(WINDOW_RESERVATION,
                         set(window['reservations'][0]))

        # The lease: shown and listed alike; an admin sees it whole.
        path = '/leases/%s' % lease['id']
        whole = self.get('admin', path)['lease']
        self.assertEqual(sorted([mine, theirs]),
                         sorted(whole['reservations'][0]['servers']))
        self.assertEqual((None, {OWNER: 1, SHARED: 1}), (
            whole['shared_by'],
            whole['reservations'][0]['slots_by_project']))
        self.assertIsNotNone(whole['trust_id'])
        owner_res = dict(whole['reservations'][0], servers=[mine])
        shared_res = dict(whole['reservations'][0], servers=[theirs],
                          slots_by_project={SHARED: 1})
        expected = {
            'admin': whole,
            # Only its own servers: Nova shows it no other project's.
            'owner member': dict(whole, reservations=[owner_res]),
            'owner reader': dict(whole, reservations=[owner_res]),
            # Not the owner's user, trust or reason.
            'shared member': dict(whole, user_id=None, trust_id=None,
                                  status_reason=None, shared_by=OWNER,
                                  reservations=[shared_res]),
        }
        expected['shared reader'] = expected['shared member']
        for role in ROLES:
            listed = [x for x in self.get(role, '/leases')['leases']
                      if x['id'] == lease['id']]
            if role == 'other member':
                self.assertEqual([], listed)
                self.get(role, path, 403)
                continue
            shown = self.get(role, path)['lease']
            self.assertEqual(LEASE, set(shown), role)
            self.assertEqual(INSTANCE_RESERVATION,
                             set(shown['reservations'][0]), role)
            for event in shown['events']:
                self.assertEqual(EVENT, set(event), role)
            self.assertEqual(expected[role], shown, role)
            self.assertEqual([shown], listed, role)

        # The calendar: each project its own and shared slots, with its
        # own servers, and the window with its reason only; an admin
        # every slot whole.
        wid = window['reservations'][0]['id']
        for role in ROLES:
            found = self.slots(role)
            for a in found:
                self.assertEqual(
                    WINDOW_SLOT if a['type'] == 'maintenance' else SLOT,
                    set(a), (role, a))
            [shown_window] = [a for a in found
                              if a['type'] == 'maintenance']
            self.assertEqual(('PSU swap', window['start_date']), (
                shown_window['reason'], shown_window['start']), role)
            self.assertEqual(
                (window['id'], 'rack 7', wid, ADMIN_PROJECT, None)
                if role == 'admin' else (None,) * 5, (
                    shown_window['lease_id'], shown_window['lease_name'],
                    shown_window['reservation_id'],
                    shown_window['project_id'],
                    shown_window['shared_by']), role)
            leased = sorted(
                ((a['lease_id'], a['lease_name'], a['reservation_id'],
                  a['project_id'], a['shared_by'], a['server_id'] or '')
                 for a in found if a['type'] != 'maintenance'),
                key=str)
            if role == 'other member':
                self.assertEqual([], leased)
                continue
            seen = {'admin': (None, [mine, theirs]),
                    'owner member': (None, [mine, '']),
                    'owner reader': (None, [mine, '']),
                    'shared member': (OWNER, [theirs, '']),
                    'shared reader': (OWNER, [theirs, ''])}[role]
            self.assertEqual(sorted([
                (lease['id'], lease['name'], rid, OWNER, seen[0], server)
                for server in seen[1]], key=str), leased, role)

        # The servers' views, to their own projects: the lease they run
        # in (shared with the project, so it sees it too).
        for api, uuid in ((self.api, mine), (self.shared_api, theirs)):
            server = api.get_server(uuid)
            self.assertEqual(SERVER_VIEW_RESERVATION,
                             set(server['reservation']), uuid)
            self.assertEqual((lease['id'], lease['name'], rid, False), (
                server['reservation']['lease_id'],
                server['reservation']['lease_name'],
                server['reservation']['reservation_id'],
                server['reservation']['fallback']))
        for api, uuid in ((self.api, theirs), (self.shared_api, mine),
                          (self.third_api, mine)):
            self.assertEqual(404, api.api_get(
                '/servers/%s' % uuid, check_response_status=False).status)

    def test_other_kinds_and_admin_views(self):
        admin = self.roles['admin']
        address = '172.24.4.200'
        resp = admin('POST', '/floatingips', {
            'floating_network_id': embedded.NeutronFixture.public_network[
                'id'], 'floating_ip_address': address})
        self.assertEqual(201, resp.status_code, resp.text)
        resp = admin('POST', '/os-hosts', {'name': 'host3'})
        self.assertEqual(201, resp.status_code, resp.text)
        host_id = resp.json()['host']['id']
        # A future lease of the owner: a host reservation shared, and
        # floating IPs.
        resp = self.rsv('POST', '/leases', {
            'name': 'kinds', 'start_date': base.soon(3600),
            'end_date': base.soon(7200), 'reservations': [
                {'resource_type': 'physical:host', 'min': 1, 'max': 1,
                 'shared_with': [SHARED]},
                {'resource_type': 'virtual:floatingip', 'amount': 1,
                 'network_id': embedded.NeutronFixture.public_network[
                     'id']}]})
        self.assertEqual(201, resp.status_code, resp.text)
        lease = resp.json()['lease']
        kinds = {'physical:host': HOST_RESERVATION,
                 'virtual:floatingip': FLOATINGIP_RESERVATION}
        # A server lease (lease_params) of the owner.
        booted = self.boot(base.params(base.when(60), base.when(120)))
        self.assertEqual(202, booted.status, booted.content)
        server = booted.body['server']
        self.assertEqual(BOOT_RESERVATION,
                         set(server['reservation']))
        server = self.api.get_server(server['id'])
        self.assertEqual(SERVER_VIEW_RESERVATION,
                         set(server['reservation']))
        self.assertEqual({'reservation:lease_id': server['reservation'][
            'lease_id'], 'reservation:lease_name': 'l1'},
            server['metadata'])
        server_lease = server['reservation']['lease_id']

        path = '/leases/%s' % lease['id']
        for role in ROLES:
            if role == 'other member':
                self.get(role, path, 403)
                continue
            shown = self.get(role, path)['lease']
            self.assertEqual(LEASE, set(shown), role)
            # A project it is shared with sees the shared reservation
            # only.
            self.assertEqual(
                ['physical:host'] if role in SHARERS else
                sorted(kinds), sorted(r['resource_type']
                                      for r in shown['reservations']),
                role)
            for res in shown['reservations']:
                self.assertEqual(kinds[res['resource_type']], set(res),
                                 role)
            if role not in SHARERS:
                shown = self.get(role, '/leases/%s' % server_lease)[
                    'lease']
                self.assertEqual(SERVER_RESERVATION,
                                 set(shown['reservations'][0]), role)
                self.assertEqual([server['id']],
                                 shown['reservations'][0]['servers'])

        # The calendar's addresses: the owner's own, every one to an
        # admin, none to others.
        for role in ROLES:
            ledger = self.get(role, '/ledger')['ledger']
            addresses = ledger['floatingips']
            if role in OWNERS + ('admin',):
                [shown] = addresses
                self.assertEqual(ADDRESS, set(shown), role)
                self.assertEqual(address, shown['address'])
                [held] = shown['allocations']
                self.assertEqual(ADDRESS_SLOT, set(held), role)
                self.assertEqual((lease['id'], OWNER), (
                    held['lease_id'], held['project_id']))
            else:
                self.assertEqual([], addresses, role)

        # Availability: free capacity only, to every project.
        query = '/availability?' + urllib.parse.urlencode({
            'flavor_id': base.ONE_PER_NODE, 'amount': 1,
            'duration': '30m'})
        for role in ROLES:
            self.assertEqual(AVAILABILITY, set(self.get(
                role, query)['availability']), role)

        # The quota of the owner: its members and readers, admins.
        for role in ROLES:
            if role in OWNERS + ('admin',):
                self.assertEqual(QUOTA, set(self.get(
                    role, '/quotas/%s' % OWNER)['quota']), role)
            else:
                self.get(role, '/quotas/%s' % OWNER, 403)

        # Reservable hosts, their allocations and the registered
        # addresses: admins only.
        admin_only = {
            '/os-hosts': lambda b: [HOST] * len(b['hosts']) == [
                set(h) for h in b['hosts']],
            '/os-hosts/%s' % host_id: lambda b: HOST == set(b['host']),
            # The host, and the shared pool's node of the flavor lease.
            '/os-hosts/allocations': lambda b: [HOST_ALLOCATION] * 2 == [
                set(a) for a in b['allocations']] and [
                HOST_ALLOCATION_RESERVATION] * 2 == [
                set(r) for a in b['allocations']
                for r in a['reservations']],
            '/os-hosts/%s/allocation' % host_id: lambda b: (
                HOST_ALLOCATION == set(b['allocation'])),
            '/os-hosts/properties': lambda b: b == {
                'resource_properties': []},
            '/floatingips': lambda b: [FLOATINGIP] == [
                set(f) for f in b['floatingips']]}
        for role in ROLES:
            for where, check in admin_only.items():
                if role == 'admin':
                    body = self.get(role, where)
                    self.assertTrue(check(body), (where, body))
                else:
                    self.get(role, where, 403)
