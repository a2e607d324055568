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

"""Maintenance windows: the nodes a maintenance reservation holds whole,
its reason, and the servers it could not move off them.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

from alembic import op
import sqlalchemy as sa

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rsv_reservations') as batch:
        batch.add_column(sa.Column('hosts', sa.Text))
        batch.add_column(sa.Column('reason', sa.String(255)))
        batch.add_column(sa.Column('unmoved_servers', sa.Text))
