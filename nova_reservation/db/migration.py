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

"""Schema migrations (alembic), applied by ``nova-reservation-manage db
sync``."""

import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import sqlalchemy as sa

from nova_reservation.db import api as db_api

VERSION_TABLE = 'rsv_alembic_version'


def _config(connection=None) -> alembic_config.Config:
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', os.path.join(
        os.path.dirname(__file__), 'migrations'))
    cfg.attributes['connection'] = connection
    return cfg


def head() -> str:
    """The newest revision of the schema."""
    return alembic_script.ScriptDirectory.from_config(
        _config()).get_current_head()


def db_sync(engine: sa.engine.Engine = None, version: str = 'head') -> None:
    """Bring the tables up to `version`, on Nova's API database by default."""
    engine = engine or db_api.get_engine()
    with engine.begin() as connection:
        alembic_command.upgrade(_config(connection), version)


def db_version(engine: sa.engine.Engine = None) -> str:
    engine = engine or db_api.get_engine()
    with engine.connect() as connection:
        ctx = alembic_migration.MigrationContext.configure(
            connection, opts={'version_table': VERSION_TABLE})
        return ctx.get_current_revision()
