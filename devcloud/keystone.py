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

"""A stand-in of Keystone for the embedded cloud, which Nova's harness runs
without one: the few calls of its v3 API that nova-reservation makes with
the service credentials of ``[reservation]`` (a token for a password, a
project by its id, the trusts given to the engine's user), served in this
process by wsgi-intercept, as Nova's harness serves nova-api.
"""

import datetime
import json
from typing import Iterable

import fixtures
from keystoneauth1 import loading as ks_loading
from oslo_config import fixture as config_fixture
from oslo_utils.fixture import uuidsentinel as uuids
from wsgi_intercept import interceptor

from nova_reservation.clients import keystone_projects
from nova_reservation import conf

USER = 'nova-reservation'
SERVICE_PROJECT = 'service-project'
TOKEN = 'service-token'


def _reply(start_response, status: str, body=None, headers=()) -> list:
    data = json.dumps(body).encode() if body is not None else b''
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))] +
                   list(headers))
    return [data]


class Keystone(fixtures.Fixture):
    """Keystone at ``url``, knowing the projects of ``projects`` (a set
    that tests add to), and ``[reservation]``'s credentials set to its
    service user; set up before the cloud (its cleanup resets the
    configuration).  ``failing``: every call is answered 503.  ``asked``:
    the project ids it was asked for; ``tokens``: how many tokens it
    issued; ``listed``: how many times it listed its projects.
    """

    def __init__(self, projects: Iterable[str] = ()) -> None:
        super().__init__()
        self.projects = set(projects) | {SERVICE_PROJECT}
        self.failing = False
        self.asked: list = []
        self.tokens = 0
        self.listed = 0

    def _version(self) -> dict:
        return {'id': 'v3.14', 'status': 'stable',
                'updated': '2020-04-07T00:00:00Z',
                'links': [{'rel': 'self', 'href': self.url + '/v3/'}],
                'media-types': [{
                    'base': 'application/json',
                    'type': 'application/vnd.openstack.identity-v3+json'}]}

    def _token(self) -> dict:
        now = datetime.datetime.now(datetime.timezone.utc)
        domain = {'id': 'default', 'name': 'Default'}
        return {'token': {
            'methods': ['password'],
            'user': {'id': uuids.keystone_user, 'name': USER,
                     'domain': domain},
            'project': {'id': SERVICE_PROJECT, 'name': 'service',
                        'domain': domain},
            'roles': [{'id': uuids.keystone_admin_role, 'name': 'admin'}],
            'catalog': [{'type': 'identity', 'name': 'keystone',
                         'id': uuids.keystone_service, 'endpoints': [{
                             'id': uuids.keystone_endpoint,
                             'interface': 'public', 'region': 'RegionOne',
                             'region_id': 'RegionOne',
                             'url': self.url + '/v3'}]}],
            'issued_at': now.isoformat(),
            'expires_at': (now + datetime.timedelta(hours=1)).isoformat()}}

    @staticmethod
    def _project(project_id: str) -> dict:
        return {'id': project_id, 'name': project_id, 'enabled': True,
                'domain_id': 'default', 'tags': []}

    def _app(self, environ, start_response) -> list:
        method, path = environ['REQUEST_METHOD'], environ['PATH_INFO']
        path = path.rstrip('/')
        if self.failing:
            return _reply(start_response, '503 Service Unavailable', {
                'error': {'code': 503, 'message': 'Keystone is failing'}})
        if path == '':
            return _reply(start_response, '300 Multiple Choices', {
                'versions': {'values': [self._version()]}})
        if path == '/v3':
            return _reply(start_response, '200 OK',
                          {'version': self._version()})
        if (method, path) == ('POST', '/v3/auth/tokens'):
            self.tokens += 1
            return _reply(start_response, '201 Created', self._token(),
                          [('X-Subject-Token', TOKEN)])
        if environ.get('HTTP_X_AUTH_TOKEN') != TOKEN:
            return _reply(start_response, '401 Unauthorized', {
                'error': {'code': 401, 'message': 'no valid token'}})
        if (method, path) == ('GET', '/v3/projects'):
            self.listed += 1
            return _reply(start_response, '200 OK', {'projects': [
                self._project(p) for p in sorted(self.projects)]})
        if method == 'GET' and path.startswith('/v3/projects/'):
            project_id = path[len('/v3/projects/'):]
            self.asked.append(project_id)
            if project_id not in self.projects:
                return _reply(start_response, '404 Not Found', {
                    'error': {'code': 404, 'message': 'Could not find '
                              'project: %s.' % project_id}})
            return _reply(start_response, '200 OK', {
                'project': self._project(project_id)})
        if (method, path) == ('GET', '/v3/OS-TRUST/trusts'):
            return _reply(start_response, '200 OK', {'trusts': []})
        return _reply(start_response, '404 Not Found', {
            'error': {'code': 404, 'message': 'not in this stand-in'}})

    def _setUp(self) -> None:
        self.url = 'http://%s:80' % uuids.keystone_host
        intercept = interceptor.RequestsInterceptor(lambda: self._app,
                                                    url=self.url)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        # The plugin's options are registered as it is loaded; they are
        # set here first, and go with the fixture (some are required).  Its
        # cleanup resets the configuration: it is set up before the cloud.
        options = self.useFixture(config_fixture.Config(conf.CONF))
        options.register_opts(ks_loading.get_auth_plugin_conf_options(
            'password'), group=conf.GROUP)
        options.config(group=conf.GROUP, auth_type='password',
                       auth_url=self.url + '/v3', username=USER,
                       password='%s-secret' % USER,
                       user_domain_name='Default', project_name='service',
                       project_domain_name='Default')
        # Projects found in another cloud's Keystone are not this one's.
        keystone_projects.forget()
        self.addCleanup(keystone_projects.forget)
