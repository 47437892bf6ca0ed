"""Migrations, applied on connect with alembic, programmatically (no alembic.ini).

One process migrates at a time: on SQLite the migration runs inside a ``BEGIN IMMEDIATE`` transaction,
on PostgreSQL under a transaction-scoped advisory lock; whoever comes second finds the schema at head.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from storage.state._engine import READ_ONLY

MIGRATIONS = Path(__file__).parent / "migrations"
ADVISORY_LOCK = 0x7173_7461_7465  # "qstate"


def alembic_config(connection: sa.Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@cache
def head() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current(connection: sa.Connection) -> tuple[str, ...]:
    return tuple(MigrationContext.configure(connection).get_current_heads())


def migrate(engine: sa.Engine) -> None:
    """Bring the database to the latest schema; a no-op when it is there already."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as probe:
        if current(probe) == (head(),):
            return
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK})
        if current(connection) != (head(),):
            command.upgrade(alembic_config(connection), "head")
