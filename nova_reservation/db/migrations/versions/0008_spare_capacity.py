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

"""Capacity that would sit idle: preemptible servers (those that may use
capacity promised to leases that have not started, and what the engine did
with them), and since when a running lease is idle; the client token
that makes a retried lease creation give the same lease; and how many
times a lease may be, and was, extended at its end (on_end
extend_if_free).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'rsv_preemptibles',
        sa.Column('instance_uuid', sa.String(36), primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('on_preempt', sa.String(16), nullable=False),
        sa.Column('state', sa.String(32), nullable=False),
        sa.Column('node', sa.String(255)),
        sa.Column('deadline', TS),
        sa.Column('warned_for', TS),
        sa.Column('action', sa.String(16)),
        sa.Column('claimed_by', sa.String(255)),
        sa.Column('claim_expires', TS),
        sa.Column('created_at', TS, nullable=False),
        sa.Column('updated_at', TS),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin')
    with op.batch_alter_table('rsv_leases') as batch:
        batch.add_column(sa.Column('idle_since', TS))
        batch.add_column(sa.Column('idle_told', TS))
        batch.add_column(sa.Column('client_token', sa.String(64)))
        batch.add_column(sa.Column('request_digest', sa.String(64)))
        batch.add_column(sa.Column('max_extensions', sa.Integer))
        batch.add_column(sa.Column('extensions', sa.Integer))
        batch.create_unique_constraint('rsv_leases_client_token_uc',
                                       ['project_id', 'client_token'])
