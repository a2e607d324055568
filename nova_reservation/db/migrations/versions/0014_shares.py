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

"""Reservations shared with other projects and matched by ordinary
boots; the project of a server bound to a reservation.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from alembic import op
import sqlalchemy as sa

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rsv_reservations') as batch:
        batch.add_column(sa.Column('shared_with', sa.Text))
        batch.add_column(sa.Column('matching', sa.String(16)))
    with op.batch_alter_table('rsv_server_bindings') as batch:
        batch.add_column(sa.Column('project_id', sa.String(255)))
