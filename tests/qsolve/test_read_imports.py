"""The read commands import what they read (issue 39, item 4): ``qsolve page``, ``query``, ``views-sql``,
``verify`` and ``receipts``, each run whole as the console script runs it, load no pandas, no Prefect and
no Qiskit, and no other area's command module; ``verify`` no state database either. What they cost is
measured in bench/imports.py (``--reads``), not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qsolve.cli import AREA_OF, AREAS, READS, WORKFLOW_COMMANDS, build_parser
from tests.conftest import REPO

#: what no read command may load: each module's own name and any of its submodules
NEVER = ("pandas", "prefect", "qiskit", "qiskit_aer", "qiskit_ibm_runtime")
#: what no read command may load of the pipeline (issue 36: under ``qsolve_pipeline``)
PIPELINE = ("qsolve_pipeline.flows", "qsolve_pipeline.tasks", "qsolve_pipeline.deployments")

#: runs ``qsolve ARGV`` as the console script does (``qsolve.cli.run``), then lists the modules it holds
LISTING = """
import atexit, sys
out, sys.argv = sys.argv[1], ["qsolve", *sys.argv[2:]]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
from qsolve.cli import run
run()
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small home: max-cut's rows filed (two versions, hardware rows among them), 1.1.0 published."""
    from qsolve_pipeline.storage.trackrecord import file_rows
    from tests.flows.hardware_setup import publish
    from tests.storage.trackrecord.builders import scenario

    root = tmp_path_factory.mktemp("reads")
    file_rows(scenario(), root / "home")
    publish(root / "home", root, name="max-cut", version="1.1.0")
    return root / "home"


def loaded(home: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    out = home.parent / "modules.txt"
    out.unlink(missing_ok=True)
    env = {**os.environ, "QSOLVE_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("QSOLVE_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", LISTING, str(out), *argv], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.exists(), done.stderr
    return done, set(out.read_text().split("\n"))


def forbidden(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in NEVER or m.startswith(PIPELINE))


def providers(modules: set[str]) -> list[str]:
    """The provider machinery loaded: its modules, the package's catalogue aside."""
    return sorted(m for m in modules if m.startswith("qsolve.providers."))


def test_page_loads_no_pandas_prefect_or_qiskit(home: Path) -> None:
    done, modules = loaded(home, "page", "max-cut")
    assert done.returncode == 0, done.stderr
    assert "max-cut 1.1.0 (current)" in done.stdout and "Earlier results" in done.stdout
    assert forbidden(modules) == []
    # a hardware row's receipts are checked (their run member: providers.sealing); no provider is asked
    assert providers(modules) == ["qsolve.providers.sealing"]
    assert {"qsolve.cli.providers", "qsolve.cli.server", "qsolve.cli.web"}.isdisjoint(modules)


def test_page_as_json_gives_times_as_it_did(home: Path) -> None:
    """pyarrow, told pandas is absent, still gives each time with its zone."""
    done, modules = loaded(home, "page", "max-cut", "--json")
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert page["track_record"] and all(r["recorded_at"].endswith("Z") for r in page["track_record"])
    assert forbidden(modules) == []


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_query_loads_no_pandas_prefect_or_qiskit(home: Path, fmt: str) -> None:
    sql = "SELECT run_id, recorded_at FROM rows ORDER BY run_id"
    done, modules = loaded(home, "query", sql, "--format", fmt)
    assert done.returncode == 0, done.stderr
    assert "r01" in done.stdout and "2026-01-01" in done.stdout
    assert forbidden(modules) == []


def test_query_of_an_empty_home_loads_no_pandas(tmp_path: Path) -> None:
    """Reading a home where nothing was filed writes a schema file of its own (an Arrow table built)."""
    done, modules = loaded(tmp_path / "home", "query", "select count(*) from current")
    assert done.returncode == 0, done.stderr
    assert "0 rows" not in done.stdout and "1 row" in done.stdout
    assert forbidden(modules) == []
    assert not (tmp_path / "home").exists()  # reading created nothing, its temporary file removed


def test_views_sql_loads_no_pandas_prefect_or_qiskit(home: Path) -> None:
    done, modules = loaded(home, "views-sql")
    assert done.returncode == 0, done.stderr
    assert "CREATE OR REPLACE VIEW current AS" in done.stdout
    assert forbidden(modules) == []


def test_verify_loads_no_state_database(home: Path) -> None:
    from qsolve.receipts.seal import seal
    from tests.qsolve.receipts.builders import KEY, request, result

    job = home.parent / "job.json"
    job.write_text(json.dumps(seal(request(), result(), KEY)))
    done, modules = loaded(home, "verify", str(job))
    assert done.returncode == 0, done.stderr
    assert ": valid" in done.stdout
    assert forbidden(modules) == []
    assert not any(m.split(".")[0] in ("sqlalchemy", "duckdb", "pyarrow") for m in modules)
    assert not any(m.split(".")[:2] == ["qsolve_pipeline", "storage"] for m in modules)


def test_receipts_loads_no_pandas_prefect_or_qiskit(home: Path) -> None:
    done, modules = loaded(home, "receipts", "no-such-run", "--out", str(home.parent / "receipts"))
    assert done.returncode == 2 and "qsolve receipts: " in done.stderr  # it read the state database
    assert forbidden(modules) == [] and providers(modules) == []


def test_the_registry_names_every_command_of_each_area() -> None:
    """``AREA_OF`` (a command line builds only its command's area) is what each area's parser adds."""
    import argparse
    import importlib

    for area in AREAS:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"qsolve.cli.{area}").add_commands(sub)
        assert sorted(sub.choices) == sorted(c for c, a in AREA_OF.items() if a == area), area
    assert set(AREA_OF) >= READS and set(AREA_OF).isdisjoint(WORKFLOW_COMMANDS)

    def commands(parser: argparse.ArgumentParser) -> list[str]:
        return sorted(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices)

    assert commands(build_parser("lint")) == sorted(WORKFLOW_COMMANDS)
    assert commands(build_parser("page")) == sorted(
        [*WORKFLOW_COMMANDS, "query", "views-sql", "receipts", "page", "trackrecord"]
    )
    assert (
        commands(build_parser()) == commands(build_parser("--help")) == sorted([*WORKFLOW_COMMANDS, *AREA_OF])
    )
