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

"""Full UTF-8 on MySQL/MariaDB: names in every script and emoji.

The tables were made in the database's default character set, which may
be utf8mb3 (three bytes a character).  Converting keeps every row; keys
stay within InnoDB's limit (255 characters x 4 bytes).  Binary collation:
ids and names compare exactly as given.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""
from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

TABLES = ('rsv_leases', 'rsv_reservations', 'rsv_allocations', 'rsv_ledger',
          'rsv_events', 'rsv_notices', 'rsv_server_bindings', 'rsv_hosts')


def upgrade():
    bind = op.get_bind()
    if bind.dialect.name != 'mysql':
        return   # SQLite and PostgreSQL store any Unicode already.
    # A column that a foreign key joins can not change its character set:
    # the keys are dropped and made again around the conversion.
    inspector = sa.inspect(bind)
    keys = [(table, fk) for table in TABLES
            for fk in inspector.get_foreign_keys(table)]
    for table, fk in keys:
        op.drop_constraint(fk['name'], table, type_='foreignkey')
    for table in TABLES:
        op.execute('ALTER TABLE %s CONVERT TO CHARACTER SET utf8mb4 '
                   'COLLATE utf8mb4_bin' % table)
    for table, fk in keys:
        op.create_foreign_key(fk['name'], table, fk['referred_table'],
                              fk['constrained_columns'],
                              fk['referred_columns'])
