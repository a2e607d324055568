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

"""The lease API fuzzed from its own OpenAPI description (schemathesis),
and hostile boots through the hook, on the local cloud with real Keystone
tokens: never a 5xx, and a refused request writes nothing.
"""

import json
import os
import time

import hypothesis
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session
import requests
import schemathesis

from devcloud.localcloud import cloud
from nova_reservation.tests.integration import base

# Requests per operation, and the time for all: about a minute in CI.
EXAMPLES = int(os.environ.get('NRSV_FUZZ_EXAMPLES', '25'))
BUDGET = 600
EMOJI = 'l\U0001F600 夜'
REPO_COPY = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                         'openapi.json')


def token(user: str) -> str:
    env = base.CLOUD.variables(user)
    auth = loading.get_plugin_loader('password').load_from_options(
        auth_url=env['OS_AUTH_URL'], username=user,
        password=env['OS_PASSWORD'], project_name=env['OS_PROJECT_NAME'],
        user_domain_name='Default', project_domain_name='Default')
    return ks_session.Session(auth=auth).get_token()


class FuzzTest(base.CloudTestCase):
    # Alone: the fuzzer, as admin on os-hosts, may enroll, change or
    # remove any lane's hosts, and its leases as alice land on any lane's
    # nodes; and what the lease API writes is compared cloud-wide
    # (`written`).
    ALONE = True

    def setUp(self) -> None:
        super().setUp()
        self.api = cloud.url('nova').rsplit('/', 1)[0] + '/reservation'
        self.tokens = {u: token(u) for u in ('alice', 'admin')}

    def written(self) -> tuple:
        """What the lease API writes: leases, reservations, hosts."""
        return (
            self.store('SELECT id, name, start_at, end_at, status IN '
                       "('DELETING', 'DELETED') AS gone FROM rsv_leases "
                       'ORDER BY id'),
            self.store('SELECT id, amount, min_count, max_count, deleted '
                       'FROM rsv_reservations ORDER BY id'),
            self.store('SELECT id, extra_capabilities FROM rsv_hosts '
                       'ORDER BY id'))

    def request(self, user, method, path, **kwargs):
        headers = dict(kwargs.pop('headers', {}),
                       **{'X-Auth-Token': self.tokens[user]})
        return requests.request(method, self.api + path, headers=headers,
                                timeout=60, **kwargs)

    def test_the_served_description_is_the_repository_copy(self):
        served = self.request('alice', 'GET', '/v1/openapi.json')
        self.assertEqual(200, served.status_code, served.text)
        with open(REPO_COPY) as f:
            self.assertEqual(json.load(f), served.json())

    def test_every_operation_fuzzed(self):
        doc = self.request('alice', 'GET', '/v1/openapi.json').json()
        schema = schemathesis.openapi.from_dict(doc)
        # A name in any script, through Nova's usual charset=utf8
        # connection of the local cloud.
        reservation = {'resource_type': 'virtual:instance', 'vcpus': 1,
                       'memory_mb': 512, 'disk_gb': 1, 'amount': 1}
        if self.on_lane():
            reservation['resource_properties'] = self.on_lane()
        own = self.request('alice', 'POST', '/v1/leases', json={
            'name': EMOJI + self.suffix, 'start_date': base.utc(3600),
            'end_date': base.utc(7200), 'reservations': [reservation]})
        self.assertEqual(201, own.status_code, own.text)
        lease_id = own.json()['lease']['id']
        self.addCleanup(self.delete_lease, lease_id)
        self.assertEqual(EMOJI + self.suffix, self.request(
            'alice', 'GET', '/v1/leases/' + lease_id).json()['lease']['name'])
        seen = {}
        started = time.time()
        for result in schema.get_all_operations():
            if time.time() - started > BUDGET:
                self.fail('fuzzing took more than %d s' % BUDGET)
            operation = result.ok()
            user = 'admin' if 'os-hosts' in operation.path else 'alice'
            cases = operation.as_strategy()
            if operation.body:
                # Bodies that break the schema, besides those that keep it.
                cases |= operation.as_strategy(
                    schemathesis.GenerationMode.NEGATIVE)

            @hypothesis.settings(
                max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(hypothesis.HealthCheck))
            @hypothesis.given(case=cases,
                              real_id=hypothesis.strategies.booleans())
            def fuzz(case, real_id):
                # Half the changes are of a lease that exists.
                if real_id and case.method != 'DELETE' and \
                        '/leases/{id}' in case.path:
                    case.path_parameters = dict(case.path_parameters,
                                                id=lease_id)
                before = self.written()
                resp = case.call(base_url=self.api, headers={
                    'X-Auth-Token': self.tokens[user]})
                what = '%s %s %s' % (case.method, case.formatted_path,
                                     str(case.body)[:300])
                self.assertLess(resp.status_code, 500, '%s: %s' % (
                    what, resp.text[:500]))
                seen[resp.status_code] = seen.get(resp.status_code, 0) + 1
                if resp.status_code >= 400:
                    self.assertEqual(before, self.written(), what)
            fuzz()
        # The fuzzing reached both answers.
        self.assertTrue(any(code < 300 for code in seen), seen)
        self.assertTrue(seen.get(400), seen)

    def test_hostile_boots(self):
        """Through the boot hook, as a script would send them."""
        nova = cloud.url('nova')
        flavor = self.flavor_ref(self.flavor('m1.tiny'))
        image = self.image_ref()

        def boot(hints, **server):
            body = {'server': dict(dict(
                name='h-' + self.suffix, flavorRef=flavor, imageRef=image,
                networks='auto'), **server), 'os:scheduler_hints': hints}
            return requests.post(nova + '/servers', data=json.dumps(body),
                                 headers={'X-Auth-Token': self.tokens[
                                     'alice'], 'Content-Type':
                                     'application/json',
                                     'OpenStack-API-Version':
                                     'compute 2.91'}, timeout=60)

        def params(**fields):
            values = dict(name='h', start=base.utc(3600),
                          end=base.utc(7200))
            values.update(fields)
            return json.dumps(values)

        for hints, field in (
                ({'lease_params': params(
                    start='9999-12-31T23:59:59-01:00')},
                 'lease_params.start'),
                ({'lease_params': params(
                    end='0001-01-01T00:00:00+01:00')}, 'lease_params.end'),
                ({'lease_params': '[' * 2000 + ']' * 2000},
                 'lease_params'),
                ({'lease_params': params(name=['x'])}, 'lease_params.name'),
                ({'lease_params': params(start=base.utc(3600) + '\x00')},
                 'lease_params.start'),
                ({'reservation': EMOJI}, 'reservation'),
                ({'lease_params': None}, 'lease_params')):
            before = self.written()
            resp = boot(hints)
            self.assertEqual(400, resp.status_code, (hints, resp.text))
            message = resp.json()['badRequest']['message']
            self.assertTrue(message.startswith(field + ':'), message)
            self.assertEqual(before, self.written())

        # A name in any script, through Nova's usual charset=utf8
        # connection of the local cloud.
        resp = boot({'lease_params': params(name=EMOJI)})
        self.assertEqual(202, resp.status_code, resp.text)
        server = resp.json()['server']
        self.addCleanup(self.delete_server, server['id'])
        self.addCleanup(self.delete_lease, server['reservation']['lease_id'])
        shown = self.request('alice', 'GET', '/v1/leases/%s'
                             % server['reservation']['lease_id'])
        self.assertEqual(EMOJI, shown.json()['lease']['name'])
        for path in ('/v1/leases/' + EMOJI, '/v1/leases/%F0%9F%98%80'):
            self.assertEqual(404, self.request('alice', 'GET',
                                               path).status_code)
