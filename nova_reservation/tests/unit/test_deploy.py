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

"""The configuration changes of nova.conf and api-paste.ini."""

import os
import sys

import testtools

from nova_reservation import deploy

NOVA_CONF = """[DEFAULT]
debug = True

[filter_scheduler]
enabled_filters = ComputeFilter,ImagePropertiesFilter

[glance]
region_name = RegionOne
"""
AUTH = dict(auth_url='http://keystone/v3', username='nova-reservation',
            password='secret', project_name='service')


class NovaConfTest(testtools.TestCase):

    def test_filter_and_credentials_are_added_once(self):
        text = deploy.add_to_nova_conf(NOVA_CONF, AUTH)
        self.assertEqual(['ComputeFilter,ImagePropertiesFilter,'
                          'ReservationFilter'],
                         deploy.get_ini(text, 'filter_scheduler',
                                        'enabled_filters'))
        # Listing one filter class drops Nova's default: it is kept.
        self.assertEqual(['nova.scheduler.filters.all_filters',
                          deploy.FILTER_CLASS],
                         deploy.get_ini(text, 'filter_scheduler',
                                        'available_filters'))
        for name, value in dict(AUTH, auth_type='password').items():
            self.assertEqual([value], deploy.get_ini(text, 'reservation',
                                                     name))
        self.assertEqual(['RegionOne'], deploy.get_ini(text, 'glance',
                                                       'region_name'))
        self.assertEqual(text, deploy.add_to_nova_conf(text, AUTH))

    def test_nova_s_default_filters_when_none_are_set(self):
        text = deploy.add_to_nova_conf('[DEFAULT]\n')
        enabled = deploy.get_ini(text, 'filter_scheduler',
                                 'enabled_filters')[0].split(',')
        self.assertIn('ComputeFilter', enabled)
        self.assertEqual('ReservationFilter', enabled[-1])
        self.assertEqual([], deploy.get_ini(text, 'reservation',
                                            'auth_type'))

    def test_set_ini_replaces_and_appends(self):
        text = '[a]\nx = 1\nx = 2\n\n[b]\ny = 1\n'
        text = deploy.set_ini(text, 'a', 'x', '3')
        self.assertEqual(['3'], deploy.get_ini(text, 'a', 'x'))
        text = deploy.set_ini(text, 'a', 'z', '4')
        self.assertEqual('[a]\nx = 3\nz = 4\n\n[b]\ny = 1\n', text)
        text = deploy.set_ini(text, 'c', 'w', '5')
        self.assertEqual(['5'], deploy.get_ini(text, 'c', 'w'))


class ApiPasteTest(testtools.TestCase):

    def test_shipped_file_gets_the_hook_and_the_api_once(self):
        path = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
        with open(path) as f:
            shipped = f.read()
        text = deploy.add_to_api_paste(shipped)
        self.assertIn(deploy.API_MOUNT, text)
        pipelines = [line for line in text.splitlines()
                     if line.startswith('keystone = ')]
        self.assertEqual(2, len(pipelines))
        for line in pipelines:
            self.assertIn('keystonecontext reservation ', line)
        self.assertEqual(text, deploy.add_to_api_paste(text))

    def test_noauth2_pipelines_get_the_hook_after_noauth2(self):
        # As Nova 31 (2025.1) ships them.
        shipped = (
            '[composite:openstack_compute_api_v21]\n'
            'use = call:nova.api.auth:pipeline_factory_v21\n'
            'keystone = cors faultwrap authtoken keystonecontext '
            'osapi_compute_app_v21\n'
            'noauth2 = cors faultwrap noauth2 osapi_compute_app_v21\n'
            '\n[filter:noauth2]\n'
            'paste.filter_factory = '
            'nova.api.openstack.auth:NoAuthMiddleware.factory\n')
        lines = deploy.add_to_api_paste(shipped).splitlines()
        self.assertIn('noauth2 = cors faultwrap noauth2 reservation '
                      'osapi_compute_app_v21', lines)
        self.assertIn('keystone = cors faultwrap authtoken keystonecontext '
                      'reservation osapi_compute_app_v21', lines)
        self.assertIn('[filter:noauth2]', lines)
