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

"""Reservation quotas: a project's own limits, set by admins.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'rsv_quotas',
        sa.Column('project_id', sa.String(64), primary_key=True),
        sa.Column('name', sa.String(32), primary_key=True),
        sa.Column('most', sa.BigInteger, nullable=False),
        sa.Column('updated_at', TS, nullable=False),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin')
