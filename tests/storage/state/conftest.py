"""Every storage test runs on SQLite and on PostgreSQL (skipped, saying why, when no server answers).

Each PostgreSQL test gets a schema of its own, dropped afterwards; ``QSOLVE_TEST_POSTGRES_URL`` names
the server (by default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from qsolve_pipeline.storage.state import CreditSettings, StateDB, connect

POSTGRES_URL = os.environ.get("QSOLVE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgresql"]


@functools.cache
def postgres_problem() -> str | None:
    """Why PostgreSQL cannot be used here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "the psycopg driver is not installed"
    engine = sa.create_engine(POSTGRES_URL, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))
    except Exception as e:  # any failure to answer means: no server for these tests
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    finally:
        engine.dispose()
    return None


@functools.cache
def _admin() -> sa.Engine:
    return sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")


@contextlib.contextmanager
def postgres_schema(prefix: str = "qsolve_test") -> Iterator[str]:
    """The URL of a fresh PostgreSQL schema of its own, dropped afterwards; the test is skipped, saying
    why, when no server answers."""
    problem = postgres_problem()
    if problem:
        server = sa.make_url(POSTGRES_URL)
        pytest.skip(f"no PostgreSQL server at {server.host}:{server.port or 5432}: {problem}")
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with _admin().connect() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = sa.make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with _admin().connect() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema of the test's own."""
    if request.param == "sqlite":
        yield f"sqlite:///{(tmp_path / 'state.db').as_posix()}"
        return
    with postgres_schema() as url:
        yield url


def default_settings(**changes) -> CreditSettings:
    """The documented defaults, whatever the environment says."""
    values = {
        "per_run_limit": Decimal(50),
        "history_run_limit": Decimal(20),
        "history_run_seconds": 900,
        "prices": {},
    }
    return CreditSettings(**(values | changes))


@pytest.fixture
def db(database_url: str, tmp_path: Path) -> Iterator[StateDB]:
    with connect(database_url, home=tmp_path, settings=default_settings()) as state:
        yield state


def assert_ledger_balanced(db: StateDB) -> None:
    """Double entry: every transfer is two entries summing to zero, so the whole ledger sums to zero."""
    with db.engine.connect() as connection:
        total = connection.execute(sa.text("SELECT COALESCE(SUM(microcredits), 0) FROM entries")).scalar_one()
        odd = connection.execute(
            sa.text(
                "SELECT t.id, COUNT(e.id), COALESCE(SUM(e.microcredits), 0) FROM transfers t "
                "LEFT JOIN entries e ON e.transfer_id = t.id GROUP BY t.id "
                "HAVING COUNT(e.id) <> 2 OR COALESCE(SUM(e.microcredits), 0) <> 0"
            )
        ).all()
        negative = connection.execute(
            sa.text(
                "SELECT account, SUM(microcredits) FROM entries WHERE account <> 'ledger:mint' "
                "GROUP BY account HAVING SUM(microcredits) < 0"
            )
        ).all()
    assert total == 0
    assert odd == []
    assert negative == []


@pytest.fixture
def host_clock(monkeypatch: pytest.MonkeyPatch):
    """Set this host's clock off the database's: ``host_clock(timedelta(minutes=10))`` makes every
    ``now()`` of the state database's code (``storage.state._rows.now``, wherever it is imported) run that
    far ahead (negative: behind), as on a machine whose clock has drifted."""
    import sys
    from datetime import UTC, datetime

    import qsolve_pipeline.storage.state._rows as rows

    true_now = rows.now
    shifted: list = []

    def shift(by) -> None:
        def drifted() -> datetime:
            return datetime.now(UTC) + by

        for name, module in list(sys.modules.items()):
            if name.startswith("qsolve_pipeline.storage.state") and getattr(module, "now", None) in (
                true_now,
                *shifted,
            ):
                monkeypatch.setattr(module, "now", drifted)
        shifted.append(drifted)

    return shift
