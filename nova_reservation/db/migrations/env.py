from alembic import context

from nova_reservation.db import models

VERSION_TABLE = 'rsv_alembic_version'


def run_migrations() -> None:
    connection = context.config.attributes['connection']
    context.configure(connection=connection,
                      target_metadata=models.Base.metadata,
                      version_table=VERSION_TABLE,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
