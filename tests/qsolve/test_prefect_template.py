"""The temporary server's database kept as a template (issue 39, item 1): a fresh ``PREFECT_HOME`` starts
from a copy of it only while its schema is the installed Prefect's head revision, read from the installed
migrations; never over a database that exists; and a database is kept only as built (no run in it)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from qsolve_pipeline.flows.prefect_template import AS_BUILT, Template, _alembic_head, _revision


def migrations(folder: Path, chain: dict[str, str | None]) -> Path:
    folder.mkdir(parents=True)
    for revision, down in chain.items():
        down_line = "None" if down is None else repr(down)
        (folder / f"{revision}_step.py").write_text(f'revision = "{revision}"\ndown_revision = {down_line}\n')
    return folder


def database(path: Path, revision: str, runs: int = 0) -> Path:
    """A database as Prefect builds it (its revision, a block type and schema), with ``runs`` flow runs."""
    with sqlite3.connect(path) as db:
        db.execute("create table alembic_version (version_num varchar(32) not null)")
        db.execute("insert into alembic_version values (?)", (revision,))
        for table in ("flow_run", "block_document", "variable", "deployment", *AS_BUILT[1:]):
            db.execute(f"create table {table} (id text)")
        db.execute("insert into block_type values ('Secret')")
        db.execute("insert into block_schema values ('a schema')")
        db.executemany("insert into flow_run values (?)", [(str(i),) for i in range(runs)])
        db.execute("pragma journal_mode=wal")
    return path


def sealed(kept: Path) -> Path:
    """A file kept as ``keep`` keeps it: one file, its digest beside it, no one else may write either."""
    with sqlite3.connect(kept) as db:
        db.execute("pragma journal_mode=delete")
    template = Template(kept, kept, "")
    template.digest.write_text(hashlib.blake2b(kept.read_bytes()).hexdigest() + "\n")
    for file in (kept, template.digest):
        file.chmod(0o600)
    return kept


def test_the_head_is_the_one_revision_no_other_follows(tmp_path: Path) -> None:
    assert _alembic_head(migrations(tmp_path / "a", {"r1": None, "r2": "r1", "r3": "r2"})) == "r3"
    assert _alembic_head(migrations(tmp_path / "b", {"r1": None, "r2": "r1", "r3": "r1"})) is None  # 2 heads
    assert _alembic_head(tmp_path / "none") is None


def test_the_installed_prefects_head_is_what_its_migrations_leave(tmp_path: Path) -> None:
    import prefect
    from alembic.script import ScriptDirectory

    versions = Path(prefect.__file__).parent / "server/database/_migrations/versions/sqlite"
    script = ScriptDirectory(str(versions.parents[1]), version_locations=[str(versions)])
    assert _alembic_head(versions) == script.get_current_head()


def test_a_fresh_home_gets_a_copy_only_of_a_template_at_the_head(tmp_path: Path) -> None:
    home = tmp_path / "prefect"
    kept = sealed(database(tmp_path / "kept.db", "old"))
    template = Template(home / "prefect.db", kept, head="new")
    assert not template.seed()  # a stale template: never used
    assert not (home / "prefect.db").exists()

    with sqlite3.connect(kept) as db:
        db.execute("update alembic_version set version_num = 'new'")
    assert not template.seed()  # changed since its digest was recorded: never used
    assert not (home / "prefect.db").exists()
    sealed(kept)
    assert template.seed()
    assert _revision(home / "prefect.db") == "new"
    assert sorted(p.name for p in home.iterdir()) == ["prefect.db"]  # no part copy left


def test_a_database_that_exists_is_never_replaced(tmp_path: Path) -> None:
    home = tmp_path / "prefect"
    home.mkdir()
    mine = database(home / "prefect.db", "mine", runs=3)
    template = Template(mine, sealed(database(tmp_path / "kept.db", "new")), head="new")
    assert not template.seed()
    assert _revision(mine) == "mine"
    with sqlite3.connect(mine) as db:
        assert db.execute("select count(*) from flow_run").fetchone() == (3,)


@pytest.mark.parametrize(
    ("revision", "runs", "kept"), [("new", 0, True), ("old", 0, False), ("new", 1, False)]
)
def test_only_a_database_as_built_at_the_head_is_kept(
    tmp_path: Path, revision: str, runs: int, kept: bool
) -> None:
    built = database(tmp_path / "prefect.db", revision, runs=runs)
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head="new")
    template.keep()
    assert template.kept.exists() is kept
    listed = sorted(p.name for p in template.kept.parent.iterdir())
    assert listed == (["prefect-key.db", "prefect-key.db.blake2b"] if kept else [])
    assert template.kept.parent.stat().st_mode & 0o777 == 0o700  # the cache folder: the user's alone
    if kept:  # one file: a reader leaves no journal beside it
        with sqlite3.connect(template.kept) as db:
            assert db.execute("pragma journal_mode").fetchone() == ("delete",)
        digest = hashlib.blake2b(template.kept.read_bytes()).hexdigest()
        assert template.digest.read_text() == digest + "\n"
        again = Template(tmp_path / "again" / "prefect.db", template.kept, head="new")
        assert again.seed()  # what is kept is seeded
        assert again.database.read_bytes() == template.kept.read_bytes()


def test_nothing_is_kept_in_a_cache_folder_others_may_write(tmp_path: Path) -> None:
    built = database(tmp_path / "prefect.db", "new")
    (tmp_path / "cache").mkdir(mode=0o700)
    (tmp_path / "cache").chmod(0o770)
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head="new")
    template.keep()
    assert list(template.kept.parent.iterdir()) == []
    (tmp_path / "cache").chmod(0o700)
    template.keep()
    assert template.kept.exists()


def test_a_kept_file_reached_through_a_link_is_never_seeded(tmp_path: Path) -> None:
    real = sealed(database(tmp_path / "real.db", "new"))
    (tmp_path / "cache").mkdir(mode=0o700)
    kept = tmp_path / "cache" / "prefect-key.db"
    kept.symlink_to(real)
    os.link(Template(real, real, "").digest, Template(kept, kept, "").digest)
    template = Template(tmp_path / "home" / "prefect.db", kept, head="new")
    assert not template.seed() and not template.database.exists()
    kept.unlink()
    os.link(real, kept)  # a hard link to the user's own file: the same bytes, sealed
    assert template.seed()
    template.database.unlink()
    linked = tmp_path / "linked-cache"
    linked.symlink_to(tmp_path / "cache")  # the cache folder itself a link
    template = Template(tmp_path / "home" / "prefect.db", linked / "prefect-key.db", head="new")
    assert not template.seed() and not template.database.exists()


@pytest.mark.parametrize("table", ["block_type", "block_schema"])
def test_a_database_without_block_types_is_never_kept_nor_seeded(tmp_path: Path, table: str) -> None:
    built = database(tmp_path / "prefect.db", "new")
    with sqlite3.connect(built) as db:
        db.execute(f"delete from {table}")
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head="new")
    template.keep()
    assert not template.kept.exists()
    seeding = Template(tmp_path / "home" / "prefect.db", sealed(built), head="new")
    assert not seeding.seed() and not seeding.database.exists()


@pytest.mark.parametrize(
    "extra",
    [
        "create trigger t after insert on flow_run begin delete from variable; end",
        "create view v as select * from flow_run",
    ],
)
def test_a_database_with_a_trigger_or_view_is_never_kept_nor_seeded(tmp_path: Path, extra: str) -> None:
    built = database(tmp_path / "prefect.db", "new")
    with sqlite3.connect(built) as db:
        db.execute(extra)
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head="new")
    template.keep()
    assert not template.kept.exists()
    seeding = Template(tmp_path / "home" / "prefect.db", sealed(built), head="new")
    assert not seeding.seed() and not seeding.database.exists()


def test_a_database_holding_a_block_document_is_never_kept(tmp_path: Path) -> None:
    built = database(tmp_path / "prefect.db", "new")
    with sqlite3.connect(built) as db:
        db.execute("insert into block_document values ('a secret')")
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head="new")
    template.keep()
    assert not template.kept.exists()


def test_no_template_when_a_setting_names_another_database(tmp_path: Path, monkeypatch) -> None:
    import prefect

    packages = Path(prefect.__file__).parents[1]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("QSOLVE_CACHE", str(tmp_path / "cache"))
    for variable in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(variable, raising=False)
    template = Template.of(packages)
    assert template is not None and template.database == tmp_path / "prefect" / "prefect.db"
    assert template.kept.parent == tmp_path / "cache"

    monkeypatch.setenv("PREFECT_API_DATABASE_CONNECTION_URL", "postgresql+asyncpg://x/y")
    assert Template.of(packages) is None
    monkeypatch.delenv("PREFECT_API_DATABASE_CONNECTION_URL")
    (tmp_path / "prefect").mkdir()
    (tmp_path / "prefect" / "profiles.toml").write_text(
        '[profiles.default]\nPREFECT_API_DATABASE_CONNECTION_URL = "sqlite+aiosqlite:////elsewhere.db"\n'
    )
    assert Template.of(packages) is None
    (tmp_path / "prefect" / "profiles.toml").unlink()
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 110\n")  # no Prefect settings
    assert Template.of(packages) is not None
    (tmp_path / "prefect.toml").write_text('[server.database]\nconnection_url = "sqlite+aiosqlite:///x.db"\n')
    assert Template.of(packages) is None


@pytest.mark.parametrize(
    ("variable", "file", "text"),
    [
        ("prefect_server_database_name", None, ""),  # Prefect reads its variables in either case
        ("PREFECT_SERVER_DATABASE_DRIVER", None, ""),
        ("PREFECT_API_DATABASE_MIGRATE_ON_START", None, ""),
        ("prefect_home", None, ""),
        ("PREFECT_ANOTHER_HOME", None, ""),
        (None, ".env", "PREFECT_LOGGING_LEVEL=DEBUG\n"),  # any PREFECT_ line of a .env
        (None, ".env", "export prefect_home=/elsewhere\n"),
        (None, "prefect.toml", "# nothing yet\n"),  # any prefect.toml
        (None, "pyproject.toml", "[tool.prefect.server]\nport = 4201\n"),
        (None, "pyproject.toml", '[tool]\nprefect = { home = "/elsewhere" }\n'),
        (None, "pyproject.toml", "[tool.prefect\n"),  # unreadable: Prefect may read it otherwise
        (None, "prefect/profiles.toml", '[profiles.default]\nPREFECT_HOME = "/elsewhere"\n'),
    ],
)
def test_any_setting_that_may_move_the_database_means_no_template(
    tmp_path: Path, monkeypatch, variable: str | None, file: str | None, text: str
) -> None:
    import prefect

    packages = Path(prefect.__file__).parents[1]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("QSOLVE_CACHE", str(tmp_path / "cache"))
    for name in list(os.environ):
        upper = name.upper()
        if (
            upper.startswith("PREFECT_")
            and ("DATABASE" in upper or "HOME" in upper)
            and name != "PREFECT_HOME"
        ):
            monkeypatch.delenv(name)
    (tmp_path / "prefect").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["prefect"]\n')
    (tmp_path / ".env").write_text("OTHER=1\n")
    assert Template.of(packages) is not None  # the setting alone makes the difference
    if variable is not None:
        monkeypatch.setenv(variable, str(tmp_path / "elsewhere"))
    if file is not None:
        (tmp_path / file).write_text(text)
    assert Template.of(packages) is None


def test_a_kept_file_corrupt_where_no_count_reads_is_never_seeded(tmp_path: Path) -> None:
    kept = database(tmp_path / "kept.db", "new")
    with sqlite3.connect(kept) as db:  # a block schema's long text: pages a count of its rows never reads
        db.execute("pragma journal_mode=delete")
        db.execute("insert into block_schema values (?)", ("x" * 40_000,))
    data = bytearray(kept.read_bytes())
    page = 4096
    data[-page:] = b"\xff" * page  # the long text's last page
    kept.write_bytes(bytes(data))
    with sqlite3.connect(kept) as db:
        assert db.execute("select count(*) from block_schema").fetchone() == (2,)  # reads as ever
        assert db.execute("pragma integrity_check").fetchone() != ("ok",)
    template = Template(tmp_path / "home" / "prefect.db", sealed(kept), head="new")
    assert not template.seed() and not template.database.exists()


def test_the_servers_telemetry_session_is_not_kept(tmp_path: Path) -> None:
    built = database(tmp_path / "prefect.db", "new")
    with sqlite3.connect(built) as db:
        db.execute("create table configuration (id text, key text, value text)")
        db.execute(
            "insert into configuration values ('c1', 'TELEMETRY_SESSION', '{\"session_id\": \"s-1\"}')"
        )
    template = Template(built, tmp_path / "cache" / "prefect-key.db", head="new")
    template.keep()
    assert template.kept.exists() and b"s-1" not in template.kept.read_bytes()
    with sqlite3.connect(template.kept) as db:
        assert db.execute("select count(*) from configuration").fetchone() == (0,)
    with sqlite3.connect(built) as db:  # the server's own database: as it was
        assert db.execute("select key from configuration").fetchall() == [("TELEMETRY_SESSION",)]
        db.execute("insert into configuration values ('c2', 'ANOTHER', '{}')")
    template.kept.unlink()
    template.keep()
    assert not template.kept.exists()
