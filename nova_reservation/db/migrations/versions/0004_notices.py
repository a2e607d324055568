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

"""Notices: event notifications kept until they are sent.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'rsv_notices',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('lease_id', sa.String(36), nullable=False),
        sa.Column('event_type', sa.String(64), nullable=False),
        sa.Column('payload', sa.Text, nullable=False),
        sa.Column('created_at', TS, nullable=False),
        sa.Column('claimed_by', sa.String(255)),
        sa.Column('claim_expires', TS))
    op.create_index('ix_rsv_notices_created_at', 'rsv_notices',
                    ['created_at'])
    op.create_index('ix_rsv_notices_claim_expires', 'rsv_notices',
                    ['claim_expires'])
