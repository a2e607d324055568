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

"""python-blazarclient's `openstack reservation ...` commands, unchanged,
against the lease API in nova-api."""

import contextlib
import datetime
import io
import json
import os

import fixtures
from nova import context as nova_context
from openstackclient import shell

from devcloud import embedded
from nova_reservation.db import api as db_api
from nova_reservation.tests.functional import base


def at(minutes: float) -> str:
    return (db_api.utcnow() + datetime.timedelta(minutes=minutes)).strftime(
        '%Y-%m-%d %H:%M')


class BlazarClientTest(base.ReservationTestCase):
    NODES = ('host1', 'host2', 'host3')

    def setUp(self) -> None:
        super().setUp()
        # The CLI authenticates with a token; the harness's stand-in for
        # Keystone reads it as "user:project:role,role".
        stub = nova_context.RequestContext

        def from_token(env, **kwargs):
            if 'HTTP_X_AUTH_TOKEN' not in env:   # Nova's own test clients
                user, project, roles = (env['HTTP_X_AUTH_USER'],
                                        env['HTTP_X_AUTH_PROJECT_ID'],
                                        env['HTTP_X_ROLES'])
            else:
                user, project, roles = env['HTTP_X_AUTH_TOKEN'].split(':')
            return stub(user, project, is_admin='admin' in roles,
                        roles=roles.split(','), **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.auth.NovaKeystoneContext._create_context',
            from_token))
        self.endpoint = self.api_fixture.base_url.rsplit('/', 1)[0] + \
            '/reservation/v1'
        # The CLI reads the OS_* variables of a shell's cloud as well.
        for name in [n for n in os.environ if n.startswith('OS_')]:
            self.useFixture(fixtures.EnvironmentVariable(name))

    def openstack(self, *args):
        # One identity per test: the CLI, run in this process, keeps the
        # first token it is given.
        token = 'admin:%s:reader,member,admin' % base.nova_fixtures.PROJECT_ID
        out = io.StringIO()
        with contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(out):
            try:
                rc = shell.main(['--os-auth-type', 'admin_token',
                                 '--os-token', token, '--os-endpoint',
                                 self.endpoint, 'reservation'] + list(args))
            except SystemExit as e:
                rc = e.code
        text = out.getvalue()
        self.assertIn(rc, (0, None), text)   # `set` returns None
        start = min(i for i in (text.find('{'), text.find('['))
                    if i >= 0) if ('{' in text or '[' in text) else None
        return json.loads(text[start:]) if start is not None else text

    def test_leases_of_every_type_and_hosts(self):
        host = self.openstack('host', 'create', '--extra', 'gpu=yes',
                              'host3', '-f', 'json')
        self.assertEqual('host3', host['hypervisor_hostname'])
        hosts = self.openstack('host', 'list', '-f', 'json')
        self.assertEqual(['host3'], [h['hypervisor_hostname']
                                     for h in hosts])
        shown = self.openstack('host', 'show', str(host['id']), '-f',
                               'json')
        self.assertEqual('yes', shown['gpu'])

        start, end = at(60), at(120)
        made = {}
        made['host'] = self.openstack(
            'lease', 'create', '--start-date', start, '--end-date', end,
            '--reservation', 'resource_type=physical:host,min=1,max=1,'
            'resource_properties=["==", "$gpu", "yes"]', 'hosts-lease', '-f',
            'json')
        made['flavor'] = self.openstack(
            'lease', 'create', '--start-date', start, '--end-date', end,
            '--reservation', 'resource_type=flavor:instance,flavor_id=%s,'
            'amount=2' % base.ONE_PER_NODE, 'flavor-lease', '-f', 'json')
        made['virtual'] = self.openstack(
            'lease', 'create', '--start-date', start, '--end-date', end,
            '--reservation', 'resource_type=virtual:instance,vcpus=1,'
            'memory_mb=512,disk_gb=1,amount=1', 'virtual-lease', '-f',
            'json')
        for kind, lease in made.items():
            self.assertEqual('PENDING', lease['status'], kind)

        listed = self.openstack('lease', 'list', '-f', 'json')
        self.assertEqual(sorted(x['id'] for x in made.values()),
                         sorted(x['id'] for x in listed))

        self.openstack('lease', 'set', '--prolong-for', '1h',
                       made['flavor']['id'])
        shown = self.openstack('lease', 'show', made['flavor']['id'], '-f',
                               'json')
        # An hour more than the end it was made with (the same `end`: a
        # date computed again may fall in the next minute or hour).
        prolonged = datetime.datetime.strptime(
            end, '%Y-%m-%d %H:%M') + datetime.timedelta(hours=1)
        self.assertEqual(prolonged.strftime('%Y-%m-%dT%H:%M'),
                         shown['end_date'][:16])

        for lease in made.values():
            self.openstack('lease', 'delete', lease['id'])
        self.run_engine()
        self.assertEqual([], self.openstack('lease', 'list', '-f', 'json'))
        self.openstack('host', 'delete', str(host['id']))
        self.assertEqual([], self.openstack('host', 'list', '-f', 'json'))

    def test_floating_ips_and_their_leases(self):
        network = embedded.NeutronFixture.public_network['id']
        made = self.openstack('floatingip', 'create', network,
                              '172.24.4.200', '-f', 'json')
        self.assertEqual('172.24.4.200', made['floating_ip_address'])
        self.assertEqual(network, made['floating_network_id'])
        self.openstack('floatingip', 'create', network, '172.24.4.201')
        listed = self.openstack('floatingip', 'list', '-f', 'json')
        self.assertEqual(['172.24.4.200', '172.24.4.201'], sorted(
            f['floating_ip_address'] for f in listed))
        shown = self.openstack('floatingip', 'show', made['id'], '-f',
                               'json')
        self.assertEqual(made['subnet_id'], shown['subnet_id'])

        lease = self.openstack(
            'lease', 'create', '--start-date', at(60), '--end-date', at(120),
            '--reservation', 'resource_type=virtual:floatingip,network_id=%s,'
            'amount=2,required_floatingips=["172.24.4.201"]' % network,
            'fip-lease', '-f', 'json')
        self.assertEqual('PENDING', lease['status'])
        shown = self.openstack('lease', 'show', lease['id'], '-f', 'json')
        reservation = shown['reservations']
        if isinstance(reservation, str):   # the CLI shows it as text
            reservation = json.loads(reservation)
        reservation = reservation[0] if isinstance(reservation, list) \
            else reservation
        self.assertEqual('virtual:floatingip', reservation['resource_type'])
        self.assertEqual(2, reservation['amount'])
        self.assertEqual(['172.24.4.201'],
                         reservation['required_floatingips'])
        self.openstack('lease', 'set', '--reservation',
                       'id=%s,amount=2' % reservation['id'], lease['id'])

        self.openstack('lease', 'delete', lease['id'])
        self.run_engine()
        for fip in listed:
            self.openstack('floatingip', 'delete', fip['id'])
        self.assertEqual([], self.openstack('floatingip', 'list', '-f',
                                            'json'))
