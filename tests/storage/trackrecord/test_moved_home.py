"""A copied or moved QSOLVE_HOME (issue 11): trackrecord.duckdb names its files by absolute path, so any
qsolve command that reads the track record rebuilds it for the folder it is in now (a filing leaves it
as it was: issue 34). After one, the
copy's database shows the copy's rows, never the other home's, and never fails to bind."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from qsolve.cli.trackrecord import add_commands
from qsolve_pipeline.storage.trackrecord import compact, ensure_views, file_rows, page
from tests.once import built_once

from .builders import row
from .test_analyst import analyst, as_a_new_process


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def _query(home: Path) -> set[str]:
    assert run("query", "SELECT 1") == 0
    return set()


def _page_command(home: Path) -> set[str]:
    assert run("page", "max-cut") == 0
    return set()


def _page(home: Path) -> set[str]:
    assert page("max-cut", home=home).track_record
    return set()


def _filing(home: Path) -> set[str]:
    assert file_rows([row("filed-in-copy", case="new", minute=9)], home).new
    # a filing leaves trackrecord.duckdb as it was (issue 34: it stays quick); the next command that
    # reads the track record rebinds it, with the row filed
    assert run("query", "SELECT 1") == 0
    return {"filed-in-copy"}


def _compaction(home: Path) -> set[str]:
    compact(home)
    return set()


def _ensure_views(home: Path) -> set[str]:
    assert ensure_views(home)  # rebuilt: it was made for the other folder
    return set()


#: what an analyst or the platform might run first in the copy; each returns the run ids it added
COMMANDS: dict[str, Callable[[Path], set[str]]] = {
    "qsolve query": _query,
    "qsolve page": _page_command,
    "page()": _page,
    "filing": _filing,
    "compaction": _compaction,
    "ensure_views": _ensure_views,
}


def filed_home(home: Path) -> None:
    file_rows([row("a", case="one"), row("b", case="two")], home)
    compact(home)
    file_rows([row("c", case="one", minute=5)], home)
    ensure_views(home)  # what any reading command does: a filing leaves the database as it was


def _file_template(root: Path) -> Path:
    template = root / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QSOLVE_HOME", str(template))
        for name in ("QSOLVE_DATABASE_URL", "QSOLVE_STORAGE_URL"):
            mp.delenv(name, raising=False)
        filed_home(template)
    as_a_new_process()
    return template


@pytest.fixture(scope="module")
def _filed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A filed home, built once for the run; the tests change their copies of it, never it."""
    return built_once(tmp_path_factory, "moved-home-template", _file_template)


@pytest.fixture
def filed(_filed_template: Path, home: Path) -> Path:
    """This test's ``home``, filed as :func:`filed_home` files it: the module's filed home copied, and its
    trackrecord.duckdb bound to this folder's files by a reading command, as after :func:`filed_home`."""
    shutil.copytree(_filed_template, home)
    as_a_new_process()
    assert ensure_views(home)  # rebuilt for this folder: it named the template's files
    return home


def database_rows(home: Path, cwd: Path) -> set[str]:
    """The rows plain DuckDB reads from the home's trackrecord.duckdb (asserts it binds)."""
    return set(analyst(home / "trackrecord.duckdb", ["rows"], cwd)["rows"])


ANALYST_HOMES = """
import json, sys
import duckdb
out = []
for path in sys.argv[1:]:
    con = duckdb.connect(path, read_only=True)
    out.append(sorted(r[0] for r in con.sql("SELECT run_id FROM rows").fetchall()))
    con.sql("SELECT * FROM workflow_cards").fetchall()
    con.sql("SELECT * FROM versions").fetchall()
    con.close()
print(json.dumps(out))
"""


def databases_rows(homes: list[Path], cwd: Path) -> list[set[str]]:
    """:func:`database_rows` of several homes, read by one plain-DuckDB process (no qsolve code)."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", ANALYST_HOMES, *(str(h / "trackrecord.duckdb") for h in homes)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [set(rows) for rows in json.loads(done.stdout)]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_moved_home_is_rebound_by_any_command(filed, tmp_path, monkeypatch, command):
    home = filed
    moved = tmp_path / "moved"
    shutil.copytree(home, moved)
    shutil.rmtree(home)
    as_a_new_process()
    monkeypatch.setenv("QSOLVE_HOME", str(moved))
    added = COMMANDS[command](moved)
    assert database_rows(moved, tmp_path) == {"a", "b", "c"} | added
    assert not (tmp_path / "home").exists()  # nothing written where the home was


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_copy_never_shows_the_original_homes_rows(filed, tmp_path, monkeypatch, command):
    home = filed
    copy = tmp_path / "copy"
    shutil.copytree(home, copy)
    file_rows([row("only-in-original", case="three", minute=7)], home)  # the original goes on
    compact(home)
    as_a_new_process()
    monkeypatch.setenv("QSOLVE_HOME", str(copy))
    added = COMMANDS[command](copy)
    in_copy, in_original = databases_rows([copy, home], tmp_path)
    assert in_copy == {"a", "b", "c"} | added
    assert in_original == {"a", "b", "c", "only-in-original"}


def test_before_any_command_the_sql_file_works_from_the_moved_home(filed, tmp_path):
    """trackrecord.sql names the files relative to the home, so a copy reads its own files at once."""
    home = filed
    moved = tmp_path / "moved"
    shutil.copytree(home, moved)
    shutil.rmtree(home)
    script = "import duckdb; con = duckdb.connect(); con.execute(open('trackrecord.sql').read());"
    script += "print(sorted(r[0] for r in con.sql('SELECT run_id FROM rows').fetchall()))"
    done = subprocess.run([sys.executable, "-I", "-c", script], cwd=moved, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "['a', 'b', 'c']\n"
    # trackrecord.duckdb still names the old home's files until a command runs there: it fails loudly.
    stale = subprocess.run(
        [sys.executable, "-I", "-c", ANALYST_ROWS, str(moved / "trackrecord.duckdb")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert stale.returncode != 0 and "IO Error" in stale.stderr


ANALYST_ROWS = """
import sys, duckdb
print(duckdb.connect(sys.argv[1], read_only=True).sql("SELECT count(*) FROM rows").fetchall())
"""


def test_a_home_reached_by_another_path_is_not_rebuilt(filed, tmp_path):
    home = filed
    link = tmp_path / "link"
    link.symlink_to(home)
    as_a_new_process()
    assert not ensure_views(link)  # the same folder: its database stands
    assert database_rows(link, tmp_path) == {"a", "b", "c"}
