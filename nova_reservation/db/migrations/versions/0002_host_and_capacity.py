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

"""Host and capacity reservations; the reservable hosts; lease versions.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    with op.batch_alter_table('rsv_leases') as batch:
        batch.add_column(sa.Column('version', sa.Integer, nullable=False,
                                   server_default='0'))
        batch.add_column(sa.Column('degraded', sa.Boolean, nullable=False,
                                   server_default=sa.false()))
    with op.batch_alter_table('rsv_reservations') as batch:
        batch.add_column(sa.Column('min_count', sa.Integer))
        batch.add_column(sa.Column('max_count', sa.Integer))
        batch.add_column(sa.Column('affinity', sa.Boolean))
        batch.add_column(sa.Column('hypervisor_properties', sa.Text))
        batch.add_column(sa.Column('resource_properties', sa.Text))
        batch.add_column(sa.Column('before_end', sa.String(32)))
        batch.add_column(sa.Column('aggregate_id', sa.Integer))
        batch.add_column(sa.Column('created_at', TS))
        batch.add_column(sa.Column('updated_at', TS))
    op.create_table(
        'rsv_hosts',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('hypervisor_hostname', sa.String(255), nullable=False,
                  unique=True),
        sa.Column('service_name', sa.String(255), nullable=False),
        sa.Column('hypervisor_type', sa.String(255)),
        sa.Column('hypervisor_version', sa.BigInteger),
        sa.Column('vcpus', sa.Integer, nullable=False),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('local_gb', sa.Integer, nullable=False),
        sa.Column('cpu_info', sa.Text),
        sa.Column('extra_capabilities', sa.Text, nullable=False),
        sa.Column('reservable', sa.Boolean, nullable=False),
        sa.Column('created_at', TS, nullable=False),
        sa.Column('updated_at', TS),
    )
