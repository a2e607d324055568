"""Event accounting: when an event was due, ran, finished, and how often.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

TS = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    with op.batch_alter_table('rsv_events') as batch:
        batch.add_column(sa.Column('scheduled_at', TS))
        batch.add_column(sa.Column('started_at', TS))
        batch.add_column(sa.Column('finished_at', TS))
        batch.add_column(sa.Column('runs', sa.Integer, nullable=False,
                                   server_default='0'))
