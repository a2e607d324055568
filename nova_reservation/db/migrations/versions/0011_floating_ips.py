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

"""Floating IP reservations: the registered addresses of external
networks, and a reservation's network and required addresses.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'rsv_floatingips',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('floating_network_id', sa.String(36), nullable=False),
        sa.Column('subnet_id', sa.String(36), nullable=False),
        sa.Column('floating_ip_address', sa.String(64), nullable=False),
        sa.Column('reservable', sa.Boolean, nullable=False),
        sa.Column('created_at', TS, nullable=False),
        sa.Column('updated_at', TS),
        sa.UniqueConstraint('floating_network_id', 'floating_ip_address',
                            name='rsv_floatingips_address_uc'),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin')
    with op.batch_alter_table('rsv_reservations') as batch:
        batch.add_column(sa.Column('network_id', sa.String(36)))
        batch.add_column(sa.Column('required_floatingips', sa.Text))
