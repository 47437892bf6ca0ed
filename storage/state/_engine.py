"""Engines: SQLite by default, PostgreSQL through ``QSOLVE_DATABASE_URL`` (DESIGN.md §6, §7).

SQLite is set up for several processes at once: WAL, a 30-second busy timeout, foreign keys on, and
every writing transaction opened with ``BEGIN IMMEDIATE``, so two writers queue for the lock instead of
one failing when it upgrades a read to a write. Reading transactions open with a plain ``BEGIN``.
PostgreSQL URLs without a driver (``postgresql://``, ``postgres://``) use psycopg 3. Every PostgreSQL
session qsolve opens has bounded waits (:data:`POSTGRES_TIMEOUTS`, issue 24): a lock waited for longer
than ``lock_timeout``, a statement running longer than ``statement_timeout`` fail; a session idle inside
a transaction for longer than ``idle_in_transaction_session_timeout`` (a frozen or stuck process) is
ended by the server, and its locks with it, so no frozen holder stalls the others.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import StaticPool

from qsolve_pipeline.storage.state._errors import StateError

BUSY_TIMEOUT_S = 30
#: PostgreSQL's bounds on every wait of a qsolve session (docs/storage.md, "Bounded waits")
POSTGRES_TIMEOUTS = {
    "lock_timeout": "10s",
    "statement_timeout": "1min",
    "idle_in_transaction_session_timeout": "20s",
}
READ_ONLY = "qsolve_read_only"  # execution option: open the transaction with a deferred BEGIN


def resolve_url(url: str) -> URL:
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def make_engine(url: str) -> Engine:
    parsed = resolve_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed)
    try:
        engine = sa.create_engine(parsed, pool_pre_ping=True)
    except ImportError as e:
        raise StateError(
            f"{parsed.render_as_string(hide_password=True)}: its driver does not import ({e}); for "
            "PostgreSQL install psycopg 3: pip install 'psycopg[binary]'"
        ) from e
    if parsed.get_backend_name() == "postgresql":
        event.listen(engine, "connect", _bounded_waits)
    return engine


def _bounded_waits(dbapi_connection, _record) -> None:
    """Set the session's time-outs (:data:`POSTGRES_TIMEOUTS`) as it opens."""
    autocommit = dbapi_connection.autocommit
    dbapi_connection.autocommit = True
    try:
        with dbapi_connection.cursor() as cursor:
            for name, value in POSTGRES_TIMEOUTS.items():
                cursor.execute(f"SET {name} = '{value}'")
    finally:
        dbapi_connection.autocommit = autocommit


def read_only_file(url: URL) -> bool:
    """Whether a SQLite file exists in a folder this process cannot write (a read-only home)."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return False
    path = Path(url.database)
    return path.is_file() and not os.access(path.parent, os.W_OK)


def _sqlite_engine(url: URL) -> Engine:
    memory = url.database in (None, "", ":memory:")
    if read_only_file(url):
        return _read_only_engine(url)
    if not memory:
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(
        url,
        connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
        **({"poolclass": StaticPool} if memory else {}),
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if not memory:
            _write_ahead_log(cursor)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        read_only = connection.get_execution_options().get(READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


def _read_only_engine(url: URL) -> Engine:
    """A read-only home (issue 24): the file opened ``immutable`` (nothing can change it while the
    folder is read-only, and SQLite then needs no ``-shm`` file beside it), so every reading command
    works; a write fails with SQLite's "attempt to write a readonly database"."""
    path = Path(url.database).resolve()
    engine = sa.create_engine(
        url.set(database=f"file:{path.as_posix()}").update_query_dict({"immutable": "1", "uri": "true"}),
        connect_args={"check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        connection.exec_driver_sql("BEGIN")

    return engine


def _write_ahead_log(cursor: sqlite3.Cursor) -> None:
    """Switch a fresh file to WAL. The switch needs the file to itself and does not wait for it (no busy
    handler), so several processes opening a new database retry until one has switched it."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            if cursor.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal":
                return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise
        if time.monotonic() > deadline:
            raise sqlite3.OperationalError("database is locked: could not switch it to WAL")
        time.sleep(0.01)
