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

"""Configuration of usage enforcement: the ``[enforcement]`` group of
nova.conf, with Blazar's option names and defaults (a blazar.conf's
``[enforcement]`` section works as it is) and a few of this project's own.
"""

from oslo_config import cfg

GROUP = 'enforcement'

enforcement_group = cfg.OptGroup(
    GROUP, title='Usage enforcement options',
    help='Rules a lease must pass to be created, changed and ended, as in '
         'Blazar: filters enabled by name, each with its own options.')

# Blazar's.
blazar_opts = [
    cfg.ListOpt('enabled_filters', default=[],
                help='The usage enforcement filters a lease must pass, by '
                     'name: MaxLeaseDurationFilter, ExternalServiceFilter. '
                     'An unknown name refuses every lease (503) until it is '
                     'corrected.'),
    cfg.IntOpt('max_lease_duration', default=-1, min=-1,
               help='MaxLeaseDurationFilter: the longest lease, in seconds; '
                    '-1: no limit. [reservation] max_lease_duration bounds '
                    'every lease of the cloud whatever this is.'),
    cfg.ListOpt('max_lease_duration_exempt_project_ids', default=[],
                help='MaxLeaseDurationFilter: the projects (ids) whose '
                     'leases it does not limit.'),
    cfg.StrOpt('external_service_base_endpoint',
               help='ExternalServiceFilter: the URL its check-create, '
                    'check-update and on-end endpoints are relative to (as '
                    'a browser joins URLs: end it with a slash, e.g. '
                    'http://policy.example.com/v1/).'),
    cfg.StrOpt('external_service_check_create_endpoint',
               help='ExternalServiceFilter: the URL of check-create, '
                    'instead of the one under the base endpoint.'),
    cfg.StrOpt('external_service_check_update_endpoint',
               help='ExternalServiceFilter: the URL of check-update, '
                    'instead of the one under the base endpoint.'),
    cfg.StrOpt('external_service_on_end_endpoint',
               help='ExternalServiceFilter: the URL of on-end, instead of '
                    'the one under the base endpoint.'),
    cfg.StrOpt('external_service_token', default='', secret=True,
               help='ExternalServiceFilter: the token sent as X-Auth-Token. '
                    'Empty: a token of the service user of the '
                    '[reservation] credentials, if there are any.'),
]

# This project's own.
own_opts = [
    cfg.FloatOpt('external_service_timeout', default=10.0, min=0.1,
                 help='ExternalServiceFilter: seconds to wait for the '
                      'service to connect, and again for its answer.'),
    cfg.StrOpt('external_service_on_failure', default='refuse',
               choices=[('refuse', 'the lease is refused (503), with the '
                                   'service and the reason named'),
                        ('accept', 'the lease is accepted and the failure '
                                   'logged')],
               help='ExternalServiceFilter: what a create or a change does '
                    'when the service does not answer, or answers other '
                    'than 204 or 403. The end of a lease never waits on '
                    'it: a failure there is logged.'),
    cfg.StrOpt('auth_url',
               help='The Keystone URL sent as context.auth_url; by default '
                    'the auth_url of the [reservation] credentials.'),
]

ALL_OPTS = blazar_opts + own_opts


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(enforcement_group)
    conf.register_opts(ALL_OPTS, group=enforcement_group)


def list_opts() -> list:
    return [(enforcement_group, ALL_OPTS)]
