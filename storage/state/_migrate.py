"""Migrations, applied on connect with alembic, programmatically (no alembic.ini).

One process migrates at a time: on SQLite the migration runs inside a ``BEGIN IMMEDIATE`` transaction,
on PostgreSQL under a transaction-scoped advisory lock; whoever comes second finds the schema at head.
A database already at ``HEAD`` costs one query, and alembic is not even imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from qsolve_pipeline.storage.state._engine import READ_ONLY

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"
HEAD = "0016"  # the newest revision in migrations/versions (a test keeps this true)
ADVISORY_LOCK = 0x7173_7461_7465  # "qstate"


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """A Config for alembic's commands, on ``connection``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def current(connection: sa.Connection) -> tuple[str, ...]:
    if not sa.inspect(connection).has_table("alembic_version"):
        return ()
    return tuple(connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars())


def migrate(engine: sa.Engine) -> None:
    """Bring the database to the latest schema; a no-op when it is there already."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as probe:
        if current(probe) == (HEAD,):
            return
    from alembic import command

    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":  # another process migrating: wait for it longer
            connection.execute(sa.text("SET LOCAL lock_timeout = '300s'"))
            connection.execute(sa.text("SET LOCAL statement_timeout = '600s'"))
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK})
        if current(connection) != (HEAD,):
            command.upgrade(alembic_config(connection), "head")
