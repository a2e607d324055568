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

"""What a slot holds beyond vCPU, RAM and disk: its amounts of other
resource classes, per provider of its node's tree, and what each slot of a
reservation holds so (JSON; NULL: none, as every row written before).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from alembic import op
import sqlalchemy as sa

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rsv_allocations') as batch:
        batch.add_column(sa.Column('extras', sa.Text))
    with op.batch_alter_table('rsv_reservations') as batch:
        batch.add_column(sa.Column('extras', sa.Text))
