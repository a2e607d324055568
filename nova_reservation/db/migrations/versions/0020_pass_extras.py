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

"""What a boot's pass takes beyond vCPU, RAM and disk (a GPU), so that
another scheduler counts it too (JSON, as a slot's extras; NULL: none, as
every row written before).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""

from alembic import op
import sqlalchemy as sa

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rsv_passes') as batch:
        batch.add_column(sa.Column('extras', sa.Text))
