"""An engine, credit settings given (else the database's), and the two kinds of transaction the state
database opens."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import sqlalchemy as sa

from qsolve_pipeline.storage.state._config import CreditSettings
from qsolve_pipeline.storage.state._engine import READ_ONLY


class Store:
    def __init__(self, engine: sa.Engine, settings: CreditSettings | None = None) -> None:
        self.engine = engine
        self._settings = settings  # None: the database's (``_credit_table``), read when asked
        self.home: Path | None = None  # the home it was opened for (connect): what this machine keeps

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.engine.url.render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        """A writing transaction (``BEGIN IMMEDIATE`` on SQLite: writers queue, none fails midway)."""
        with self.engine.begin() as connection:
            yield connection

    @contextmanager
    def _write_durable_later(self) -> Iterator[sa.Connection]:
        """:meth:`_write` whose commit on a SQLite file waits for no fsync (``synchronous = NORMAL`` for
        this transaction alone). It is as atomic as any, and it becomes durable with the next commit that
        is (any process's: each fsyncs the write-ahead log, every commit before it with it) or at the
        next checkpoint; a machine losing power before then loses it together with every commit after
        it and nothing before (the log's frames are checksummed in a chain: what survives is a prefix).
        Only for a change whose loss, as a suffix, leaves a state a crash could leave anyway. PostgreSQL:
        an ordinary :meth:`_write`."""
        if self.engine.dialect.name != "sqlite":
            with self._write() as connection:
                yield connection
            return
        with self.engine.connect() as connection:
            raw = connection.connection.driver_connection
            level = raw.execute("PRAGMA synchronous").fetchone()[0]
            raw.execute("PRAGMA synchronous = NORMAL")
            try:
                with connection.begin():
                    yield connection
            finally:
                try:
                    raw.execute(f"PRAGMA synchronous = {int(level)}")
                except Exception:  # never back in the pool with commits that skip their fsync
                    connection.invalidate()
                    raise

    def _durable_now(self) -> None:
        """Make every commit so far durable (those of :meth:`_write_durable_later` included): the
        write-ahead log of a SQLite file fsynced, as a durable commit would (PostgreSQL: nothing to do)."""
        import os

        if self.engine.dialect.name != "sqlite" or self.engine.url.database in (None, "", ":memory:"):
            return
        path = f"{self.engine.url.database}-wal"
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # checkpointed (fsynced then) and removed: durable already
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @contextmanager
    def _read(self) -> Iterator[sa.Connection]:
        with self.engine.connect().execution_options(**{READ_ONLY: True}) as connection, connection.begin():
            yield connection
