"""Connecting: where the database is, SQLite's settings, migrations applied once and matching the tables."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from qsolve_pipeline.storage.state import SYSTEM_ACCOUNT, StateDB, connect
from qsolve_pipeline.storage.state._engine import resolve_url
from qsolve_pipeline.storage.state._migrate import HEAD, alembic_config
from qsolve_pipeline.storage.state._tables import metadata
from tests.storage.state.conftest import default_settings


def test_the_default_is_sqlite_in_qsolve_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    with connect(settings=default_settings()) as db:
        assert db.engine.url.database == str(tmp_path / "home" / "state.db")
    assert (tmp_path / "home" / "state.db").is_file()
    monkeypatch.delenv("QSOLVE_HOME")
    monkeypatch.chdir(tmp_path)
    with connect(settings=default_settings()) as db:
        assert Path(db.engine.url.database) == Path(".qsolve") / "state.db"
    assert (tmp_path / ".qsolve" / "state.db").is_file()


def test_qsolve_database_url_overrides_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("QSOLVE_DATABASE_URL", f"sqlite:///{tmp_path / 'elsewhere.db'}")
    with connect(home=tmp_path / "home", settings=default_settings()) as db:
        assert db.balance(SYSTEM_ACCOUNT) > 0
    assert (tmp_path / "elsewhere.db").is_file()
    assert not (tmp_path / "home" / "state.db").exists()


def test_postgresql_urls_without_a_driver_use_psycopg() -> None:
    assert resolve_url("postgresql://u@h:5432/d").drivername == "postgresql+psycopg"
    assert resolve_url("postgres://u@h/d").drivername == "postgresql+psycopg"
    assert resolve_url("postgresql+psycopg://u@h/d").drivername == "postgresql+psycopg"
    assert resolve_url("sqlite:///x.db").drivername == "sqlite"


def test_sqlite_is_set_for_several_processes(tmp_path: Path) -> None:
    with (
        connect(f"sqlite:///{tmp_path / 's.db'}", settings=default_settings()) as db,
        db.engine.connect() as c,
    ):
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000


def test_foreign_keys_are_enforced(db: StateDB) -> None:
    with pytest.raises(sa.exc.IntegrityError), db.engine.begin() as connection:
        connection.execute(
            sa.text("INSERT INTO entries (transfer_id, account, microcredits) VALUES (999, 'nobody', 0)")
        )


def test_the_migrations_build_exactly_the_tables(db: StateDB) -> None:
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert context.get_current_heads() == (HEAD,)
        assert compare_metadata(context, metadata) == []


def test_head_is_the_newest_migration() -> None:
    assert ScriptDirectory.from_config(alembic_config()).get_heads() == [HEAD]


def test_connecting_again_migrates_nothing_and_keeps_the_data(database_url: str, tmp_path: Path) -> None:
    with connect(database_url, home=tmp_path, settings=default_settings()) as db:
        db.grant("alice", 3)
    with connect(database_url, home=tmp_path, settings=default_settings()) as db:
        assert db.balance("alice") == 3
        assert db.balance(SYSTEM_ACCOUNT) == 1_000_000


def test_the_database_url_is_shown_without_its_password() -> None:
    db = StateDB(sa.create_engine("postgresql+psycopg://u:secret@h/d"), default_settings())
    assert "secret" not in repr(db)
