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

"""Passes: the promised nodes a scheduler let an ordinary boot onto, and
the lock that the schedulers take to decide one after the other.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'rsv_passes',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False,
                  index=True),
        sa.Column('node', sa.String(255), nullable=False),
        sa.Column('vcpus', sa.Float, nullable=False),
        sa.Column('memory_mb', sa.Float, nullable=False),
        sa.Column('disk_gb', sa.Float, nullable=False),
        sa.Column('created_at', TS, nullable=False, index=True),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin')
    op.create_table(
        'rsv_locks',
        sa.Column('name', sa.String(64), primary_key=True),
        sa.Column('taken', sa.BigInteger, nullable=False),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin')
