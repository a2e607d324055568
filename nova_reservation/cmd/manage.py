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

"""``nova-reservation-manage``: ``db sync``, ``db version`` and
``deploy configure`` (nova.conf and api-paste.ini of a Nova deployment).
"""

import sys

import nova.conf  # noqa: F401  (registers [api_database])
from oslo_config import cfg

from nova_reservation import compat
from nova_reservation.db import migration
from nova_reservation import deploy

CONF = cfg.CONF


def _add_commands(subparsers) -> None:
    db = subparsers.add_parser('db', help='The tables of nova-reservation '
                                          'in Nova\'s API database.')
    actions = db.add_subparsers(dest='action')
    actions.required = True
    sync = actions.add_parser('sync', help='Create or upgrade the tables.')
    sync.add_argument('version', nargs='?', default='head')
    actions.add_parser('version', help='Print the schema revision.')

    setup = subparsers.add_parser(
        'deploy', help='Plug nova-reservation into a Nova deployment.')
    actions = setup.add_subparsers(dest='action')
    actions.required = True
    configure = actions.add_parser(
        'configure', help='Add the scheduler filter and the engine\'s '
                          'credentials to nova.conf, the boot hook and the '
                          'lease API to api-paste.ini (idempotent).')
    configure.add_argument('--nova-conf', required=True)
    configure.add_argument('--api-paste', required=True)
    for name in ('auth-url', 'username', 'password', 'project-name',
                 'user-domain-name', 'project-domain-name', 'region-name'):
        configure.add_argument('--' + name,
                               help='[reservation] %s of the engine'
                               % name.replace('-', '_'))


def main(argv=None) -> int:
    CONF.register_cli_opt(cfg.SubCommandOpt('category',
                                            handler=_add_commands))
    compat.parse_args(argv or sys.argv, 'nova-reservation-manage',
                      init_rpc=False)
    if CONF.category.name == 'deploy':
        auth = {name: getattr(CONF.category, name) for name in (
            'auth_url', 'username', 'password', 'project_name',
            'user_domain_name', 'project_domain_name', 'region_name')
            if getattr(CONF.category, name)}
        deploy.configure(CONF.category.nova_conf, CONF.category.api_paste,
                         auth)
        print('nova-reservation added to %s and %s'
              % (CONF.category.nova_conf, CONF.category.api_paste))
    elif CONF.category.action == 'sync':
        migration.db_sync(version=CONF.category.version)
        print('nova-reservation tables at revision %s'
              % migration.db_version())
    else:
        print(migration.db_version())
    return 0
