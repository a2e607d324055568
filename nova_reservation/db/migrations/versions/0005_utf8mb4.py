"""Full UTF-8 on MySQL/MariaDB: names in every script and emoji.

The tables were made in the database's default character set, which may
be utf8mb3 (three bytes a character).  Converting keeps every row; keys
stay within InnoDB's limit (255 characters x 4 bytes).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

TABLES = ('rsv_leases', 'rsv_reservations', 'rsv_allocations', 'rsv_ledger',
          'rsv_events', 'rsv_notices', 'rsv_server_bindings', 'rsv_hosts')


def upgrade():
    if op.get_bind().dialect.name != 'mysql':
        return   # SQLite and PostgreSQL store any Unicode already.
    # Keys that reference each other change together.
    op.execute('SET FOREIGN_KEY_CHECKS = 0')
    for table in TABLES:
        op.execute('ALTER TABLE %s CONVERT TO CHARACTER SET utf8mb4 '
                   'COLLATE utf8mb4_bin' % table)
    op.execute('SET FOREIGN_KEY_CHECKS = 1')
