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

"""Events as Blazar shows them: a UUID each (the integer id stays the
key the engine uses) and when it was made; events made before this take
their lease's creation time.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""
import uuid

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    with op.batch_alter_table('rsv_events') as batch:
        batch.add_column(sa.Column('uuid', sa.String(36)))
        batch.add_column(sa.Column('created_at', TS))
    events = sa.table('rsv_events', sa.column('id', sa.Integer),
                      sa.column('uuid', sa.String))
    connection = op.get_bind()
    for (event_id,) in connection.execute(sa.select(events.c.id)).all():
        connection.execute(events.update().where(
            events.c.id == event_id).values(uuid=str(uuid.uuid4())))
    op.execute('UPDATE rsv_events SET created_at = (SELECT created_at FROM '
               'rsv_leases WHERE rsv_leases.id = rsv_events.lease_id)')
    with op.batch_alter_table('rsv_events') as batch:
        batch.alter_column('uuid', existing_type=sa.String(36),
                           nullable=False)
        batch.create_unique_constraint('rsv_events_uuid_uc', ['uuid'])
