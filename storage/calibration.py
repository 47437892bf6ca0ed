"""Task results kept: rows in the state database, figure bytes as blobs (DESIGN.md §6).

A figure is named in its result by SHA-256 (its identity for evaluations) and stored as a blob under
the blob store's own digest (BLAKE3), kept in the result's figure as ``blob``. The blobs are written
first: a result is recorded only once its figures are safely stored, and a figure written for a result
that did not get recorded is harmless (content-addressed, unreferenced).

The store is given its state database and blob store (``storage.state.StateDB``, ``storage.blobs.
BlobStore``); :func:`open_store` opens those of ``QSOLVE_HOME``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from qsolve.calibration.task_result import FigureRef, TaskResult
from qsolve_pipeline.storage.bounds import FIGURE_BYTES


class Blobs(Protocol):
    def put(self, data: bytes) -> str: ...
    def get(self, digest: str, *, limit: int | None = None) -> bytes: ...


class FigureMissing(LookupError):
    """A figure's bytes are not where its result says, or are not the bytes it names."""


class CalibrationStore:
    def __init__(self, db: Any, blobs: Blobs) -> None:
        self.db = db
        self.blobs = blobs

    def __enter__(self) -> CalibrationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def record(self, result: TaskResult, figures: Mapping[str, bytes]) -> TaskResult:
        """Store ``figures`` (bytes by SHA-256), then the result naming them."""
        return self.record_all([(result, figures)])[0]

    def record_all(self, batch: Iterable[tuple[TaskResult, Mapping[str, bytes]]]) -> list[TaskResult]:
        """Every result of ``batch`` in one transaction, after all their figures are stored."""
        sizes: dict[str, int] = {}
        ready = [self._with_blobs(result, figures, sizes) for result, figures in batch]
        self.db.record_blob_sizes(sizes)  # so that a read of each stops at its size (storage.bounds)
        return self.db.record_task_results(ready)

    def figure_bytes(self, figure: FigureRef) -> bytes:
        if figure.blob is None:
            raise FigureMissing(f"figure {figure.name} ({figure.sha256[:12]}) was never stored")
        try:
            data = self.blobs.get(figure.blob, limit=self.db.blob_limit(figure.blob, FIGURE_BYTES))
        except (OSError, ValueError) as e:
            raise FigureMissing(f"figure {figure.name}: blob {figure.blob[:12]} does not read: {e}") from e
        if hashlib.sha256(data).hexdigest() != figure.sha256:
            raise FigureMissing(f"figure {figure.name}: blob {figure.blob[:12]} is not its SHA-256")
        return data

    def get(self, result_id: str) -> TaskResult:
        return self.db.get_task_result(result_id)

    def list(self, **filters: str | None) -> list[TaskResult]:
        return self.db.list_task_results(**filters)

    def latest(self, task: str, chip: str) -> list[TaskResult]:
        return self.db.latest_task_results(task, chip)

    def _with_blobs(
        self, result: TaskResult, figures: Mapping[str, bytes], sizes: dict[str, int]
    ) -> TaskResult:
        stored = []
        for figure in result.figures:
            data = figures.get(figure.sha256)
            if data is None:
                if figure.blob is None:
                    raise FigureMissing(f"{result.task} {result.qid}: no bytes for figure {figure.name}")
                stored.append(figure)
                continue
            if hashlib.sha256(data).hexdigest() != figure.sha256:
                raise FigureMissing(f"{result.task} {result.qid}: figure {figure.name} is not its SHA-256")
            blob = self.blobs.put(data)
            sizes[blob] = len(data)
            stored.append(figure.model_copy(update={"blob": blob}))
        return result.model_copy(update={"figures": stored})


def open_store(home: Path | None = None) -> CalibrationStore:
    """The store of ``home`` (default ``QSOLVE_HOME``); a context manager (or ``close()`` it)."""
    from qsolve.home import qsolve_home
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.state import connect

    home = qsolve_home(home)
    return CalibrationStore(connect(home=home), BlobStore(home))
