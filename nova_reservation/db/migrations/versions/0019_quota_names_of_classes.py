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

"""A quota's name as long as a resource class's limit needs
(``CUSTOM_BAREMETAL_GOLD_hours_per_month``): a class name is up to 255
characters in Placement.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from alembic import op
import sqlalchemy as sa

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rsv_quotas') as batch:
        batch.alter_column('name', existing_type=sa.String(32),
                           type_=sa.String(255), existing_nullable=False)
