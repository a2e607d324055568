"""``nova-reservation-manage``: ``db sync`` and ``db version``."""

import sys

import nova.conf  # noqa: F401  (registers [api_database])
from nova import config as nova_config
from oslo_config import cfg

from nova_reservation.db import migration

CONF = cfg.CONF


def _add_commands(subparsers) -> None:
    db = subparsers.add_parser('db', help='The tables of nova-reservation '
                                          'in Nova\'s API database.')
    actions = db.add_subparsers(dest='action')
    actions.required = True
    sync = actions.add_parser('sync', help='Create or upgrade the tables.')
    sync.add_argument('version', nargs='?', default='head')
    actions.add_parser('version', help='Print the schema revision.')


def main(argv=None) -> int:
    CONF.register_cli_opt(cfg.SubCommandOpt('category',
                                            handler=_add_commands))
    nova_config.parse_args(argv or sys.argv, init_rpc=False,
                           prog='nova-reservation-manage')
    if CONF.category.action == 'sync':
        migration.db_sync(version=CONF.category.version)
        print('nova-reservation tables at revision %s'
              % migration.db_version())
    else:
        print(migration.db_version())
    return 0
