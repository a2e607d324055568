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

"""Waiting leases (if_busy wait): how a lease that did not fit waits for
room, how many times it was tried and when it is tried next; and
recurring leases: the series an occurrence belongs to (its first
occurrence's id) and its place in it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    for column in (sa.Column('if_busy', sa.String(16)),
                   sa.Column('flexible_start', sa.Boolean),
                   sa.Column('start_now', sa.Boolean),
                   sa.Column('start_before', TS),
                   sa.Column('retries', sa.Integer),
                   sa.Column('retry_interval', sa.Integer),
                   sa.Column('tries', sa.Integer),
                   sa.Column('next_try_at', TS),
                   sa.Column('series_id', sa.String(36)),
                   sa.Column('occurrence', sa.Integer)):
        op.add_column('rsv_leases', column)
    op.create_index('ix_rsv_leases_series_id', 'rsv_leases', ['series_id'])
