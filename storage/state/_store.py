"""An engine, credit settings given (else the database's), and the two kinds of transaction the state
database opens."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import sqlalchemy as sa

from storage.state._config import CreditSettings
from storage.state._engine import READ_ONLY


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
    def _read(self) -> Iterator[sa.Connection]:
        with self.engine.connect().execution_options(**{READ_ONLY: True}) as connection, connection.begin():
            yield connection
