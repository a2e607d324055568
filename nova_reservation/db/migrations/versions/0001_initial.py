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

"""The lease, reservation, ledger, event and server binding tables.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""
import uuid

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'rsv_leases',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False, index=True),
        sa.Column('user_id', sa.String(255)),
        sa.Column('start_at', TS, nullable=False),
        sa.Column('end_at', TS, nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('status_reason', sa.Text),
        sa.Column('on_end', sa.String(16), nullable=False),
        sa.Column('before_end_minutes', sa.Integer),
        sa.Column('created_at', TS, nullable=False),
        sa.Column('updated_at', TS),
    )
    op.create_table(
        'rsv_reservations',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('lease_id', sa.String(36), sa.ForeignKey('rsv_leases.id'),
                  nullable=False, index=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource_type', sa.String(32), nullable=False),
        sa.Column('flavor_id', sa.String(255)),
        sa.Column('vcpus', sa.Integer, nullable=False),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('disk_gb', sa.Integer, nullable=False),
        sa.Column('amount', sa.Integer, nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('generation', sa.BigInteger, nullable=False, index=True),
        sa.Column('deleted', sa.Boolean, nullable=False),
    )
    op.create_table(
        'rsv_allocations',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('reservation_id', sa.String(36),
                  sa.ForeignKey('rsv_reservations.id'), nullable=False,
                  index=True),
        sa.Column('node', sa.String(255), nullable=False),
        sa.Column('host', sa.String(255)),
        sa.Column('start_at', TS, nullable=False),
        sa.Column('end_at', TS, nullable=False),
        sa.Column('vcpus', sa.Integer, nullable=False),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('disk_gb', sa.Integer, nullable=False),
        sa.Column('instance_uuid', sa.String(36)),
        sa.Column('generation', sa.BigInteger, nullable=False, index=True),
        sa.Column('deleted', sa.Boolean, nullable=False),
    )
    ledger = op.create_table(
        'rsv_ledger',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('generation', sa.BigInteger, nullable=False),
        sa.Column('epoch', sa.String(36), nullable=False),
    )
    op.bulk_insert(ledger, [{'id': 1, 'generation': 0,
                             'epoch': str(uuid.uuid4())}])
    op.create_table(
        'rsv_events',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('lease_id', sa.String(36), sa.ForeignKey('rsv_leases.id'),
                  nullable=False, index=True),
        sa.Column('event_type', sa.String(32), nullable=False),
        sa.Column('due_at', TS, nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('claimed_by', sa.String(255)),
        sa.Column('claim_expires', TS),
        sa.Column('attempts', sa.Integer, nullable=False),
        sa.Column('last_error', sa.Text),
        sa.Column('updated_at', TS),
    )
    op.create_index('rsv_events_status_due_idx', 'rsv_events',
                    ['status', 'due_at'])
    op.create_table(
        'rsv_server_bindings',
        sa.Column('instance_uuid', sa.String(36), primary_key=True),
        sa.Column('lease_id', sa.String(36), sa.ForeignKey('rsv_leases.id'),
                  nullable=False, index=True),
        sa.Column('reservation_id', sa.String(36), nullable=False),
        sa.Column('state', sa.String(32), nullable=False),
        sa.Column('image_id', sa.String(36)),
    )
