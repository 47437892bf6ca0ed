"""The temporary server's database kept as a template (issue 39, item 1): a fresh ``PREFECT_HOME`` starts
from a copy of it only while its schema is the installed Prefect's head revision, read from the installed
migrations; never over a database that exists; and a database is kept only as built (no run in it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from qsolve_pipeline.flows.server import Template, _alembic_head, _revision


def migrations(folder: Path, chain: dict[str, str | None]) -> Path:
    folder.mkdir(parents=True)
    for revision, down in chain.items():
        down_line = "None" if down is None else repr(down)
        (folder / f"{revision}_step.py").write_text(f'revision = "{revision}"\ndown_revision = {down_line}\n')
    return folder


def database(path: Path, revision: str, runs: int = 0) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("create table alembic_version (version_num varchar(32) not null)")
        db.execute("insert into alembic_version values (?)", (revision,))
        for table in ("flow_run", "block_document", "variable", "deployment"):
            db.execute(f"create table {table} (id text)")
        db.executemany("insert into flow_run values (?)", [(str(i),) for i in range(runs)])
        db.execute("pragma journal_mode=wal")
    return path


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
    kept = database(tmp_path / "kept.db", "old")
    template = Template(home / "prefect.db", kept, head="new")
    assert not template.seed()  # a stale template: never used
    assert not (home / "prefect.db").exists()

    with sqlite3.connect(kept) as db:
        db.execute("update alembic_version set version_num = 'new'")
    assert template.seed()
    assert _revision(home / "prefect.db") == "new"
    assert sorted(p.name for p in home.iterdir()) == ["prefect.db"]  # no part copy left


def test_a_database_that_exists_is_never_replaced(tmp_path: Path) -> None:
    home = tmp_path / "prefect"
    home.mkdir()
    mine = database(home / "prefect.db", "mine", runs=3)
    template = Template(mine, database(tmp_path / "kept.db", "new"), head="new")
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
    assert [p.name for p in template.kept.parent.iterdir()] == (["prefect-key.db"] if kept else [])
    if kept:  # one file: a reader leaves no journal beside it
        with sqlite3.connect(template.kept) as db:
            assert db.execute("pragma journal_mode").fetchone() == ("delete",)


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
