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

"""Blazar's fields: which extra capabilities of the hosts are private
(admins only), and an instance reservation's server group and private
flavor (a virtual:instance reservation's is its flavor_id until now).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'rsv_host_properties',
        sa.Column('name', sa.String(64), primary_key=True),
        sa.Column('private', sa.Boolean, nullable=False),
        sa.Column('updated_at', TS, nullable=False),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin')
    with op.batch_alter_table('rsv_reservations') as batch:
        batch.add_column(sa.Column('server_group_id', sa.String(36)))
        batch.add_column(sa.Column('private_flavor_id', sa.String(255)))
    op.execute("UPDATE rsv_reservations SET private_flavor_id = flavor_id "
               "WHERE resource_type = 'virtual:instance'")
