"""Track-record rows as a replay reads them: from the Parquet files the log signed, as plain JSON values
(the exporter writes ``rows.json`` with the same function, so a row is compared as the same text), and
the few members a replay uses, as a model."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

SIMULATED = ("sim-", "fake:")


class MethodNumber(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    kind: str
    objective: float | None = None
    available: bool = True
    reason: str | None = None


class Row(BaseModel):
    """What a replay reads of a row (``storage.trackrecord.row.TrackRecordRow`` is the whole of it)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    workflow: str
    version: str
    case_name: str
    target: str
    source: str
    run_id: str
    status: str
    passed: bool
    quantum: float | None = None
    baseline: float | None = None
    gap: float | None = None
    abs_error: float | None = None
    accuracy: float | None = None
    accuracy_pm: float | None = None
    verdict: str | None = None
    fidelity: float | None = None
    coverage: float | None = None
    postselection: float | None = None
    max_two_qubit_gates: int | None = None
    circuits: int = 0
    shots: int = 0
    seed: int = 0
    params: str = "{}"
    result_hash: str = ""
    receipt_digest: str = ""
    measured: bool | None = None
    expect: str | None = None
    methods: list[MethodNumber] = []

    @property
    def simulated(self) -> bool:
        return self.target.startswith(SIMULATED)

    @property
    def receipts(self) -> list[str]:
        return [d for d in self.receipt_digest.split(",") if d]

    @property
    def run_params(self) -> dict[str, Any]:
        return json.loads(self.params)


def file_rows(data: bytes) -> list[dict[str, Any]]:
    """Every row of a track record's Parquet file, as JSON values (times as ISO 8601 text, UTC)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data), use_threads=False)
    return [_plain(r) for r in table.to_pylist()]


def version_rows(data: bytes, workflow: str, version: str) -> list[dict[str, Any]]:
    return [r for r in file_rows(data) if r.get("workflow") == workflow and r.get("version") == version]


def file_run_ids(data: bytes) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data), columns=["run_id"], use_threads=False)
    return [str(i) for i in table.column("run_id").to_pylist()]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return value
