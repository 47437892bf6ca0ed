"""A run's result as a track-record row: the seed's fields, status rules, platform failures refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pyarrow as pa
import pytest
from pydantic import ValidationError

from qsolve_pipeline.storage.trackrecord import SCHEMA, NotRecorded, TrackRecordRow
from qsolve_pipeline.storage.trackrecord.row import PLATFORM_FAILURES, from_table, to_table

from .builders import at, result, row

KW = dict(
    workflow="max-cut", version="1.0.0", source="history", run_id="run-1", device="fake_fez", credits=0.5
)


def test_from_result_carries_every_field():
    res = result()
    r = TrackRecordRow.from_result(res, **KW, run_seconds=2.0, recorded_at=at(3))
    assert (r.case_name, r.target, r.device, r.seed) == ("ring-6", "fake:fez@1.6", "fake_fez", 1)
    assert (r.status, r.passed, r.message) == ("passed", True, None)
    assert (r.quantum, r.baseline, r.gap, r.abs_error) == (-9.0, -9.0, 0.0, 0.0)
    assert (r.accuracy, r.verdict, r.fidelity, r.coverage, r.max_two_qubit_gates) == (
        1.0,
        res.verdict,
        0.98,
        1.0,
        18,
    )
    assert (r.circuits, r.shots, r.credits, r.run_seconds) == (2, 8000, 0.5, 2.0)
    assert json.loads(r.params) == {"shots": 4000, "layers": 1}
    assert r.params == '{"layers":1,"shots":4000}'  # canonical: sorted keys, no spaces
    assert r.result_hash == res.result_hash and r.receipt_digest == ""
    assert r.recorded_at == at(3)


def test_defaults_run_time_from_methods_and_time_now():
    before = datetime.now(UTC)
    r = TrackRecordRow.from_result(result(), **KW)
    assert r.run_seconds == 1.5
    assert before <= r.recorded_at <= datetime.now(UTC)


def test_failed_result_is_failed_and_workflow_failures_are_failed_rows():
    failed = result(passed=False, message="fidelity 0.91 < 0.97")
    assert TrackRecordRow.from_result(failed, **KW).status == "failed"
    crashed = result(passed=False, message="FAIL ValueError: x", ran=False, accuracy=None, verdict=None)
    for status in ("crash", "timeout"):
        r = TrackRecordRow.from_result(crashed, **KW, status=status)
        assert (r.status, r.passed) == (status, False)


@pytest.mark.parametrize("status", PLATFORM_FAILURES)
def test_platform_failures_are_not_recorded(status):
    with pytest.raises(NotRecorded, match="not recorded"):
        TrackRecordRow.from_result(result(passed=False), **KW, status=status)


def test_status_must_agree_with_the_result():
    with pytest.raises(ValueError, match="passed"):
        TrackRecordRow.from_result(result(), **KW, status="crash")
    with pytest.raises(ValueError, match="unknown status"):
        TrackRecordRow.from_result(result(), **KW, status="weird")
    with pytest.raises(ValidationError):
        row("x", passed=True, status="failed")


def test_times_are_utc_and_credits_may_be_decimal():
    r = TrackRecordRow.from_result(
        result(),
        **{**KW, "credits": Decimal("1.25")},
        recorded_at=datetime(2026, 1, 1, 9, tzinfo=timezone(timedelta(hours=9))),
    )
    assert r.recorded_at == datetime(2026, 1, 1, tzinfo=UTC) and r.recorded_at.utcoffset() == timedelta(0)
    assert r.credits == 1.25
    with pytest.raises(ValidationError):
        row("x", recorded_at=datetime(2026, 1, 1))  # a naive time is refused


def test_table_round_trip_has_the_fixed_schema():
    rows = [row("a"), row("b", passed=False, accuracy=None, fidelity=0.5, max_two_qubit_gates=7)]
    table = to_table(rows)
    assert table.schema.equals(SCHEMA, check_metadata=False)
    assert from_table(table) == rows
    assert to_table([]).num_rows == 0 and to_table([]).schema.equals(SCHEMA, check_metadata=False)
    assert (
        pa.types.is_timestamp(SCHEMA.field("recorded_at").type)
        and SCHEMA.field("recorded_at").type.tz == "UTC"
    )


def test_status_may_be_the_state_databases_enum():
    from enum import StrEnum

    class Reason(StrEnum):
        CRASH = "crash"
        CANCELLED = "cancelled"

    crashed = result(passed=False, message="FAIL RuntimeError: x")
    assert TrackRecordRow.from_result(crashed, **KW, status=Reason.CRASH).status == "crash"
    with pytest.raises(NotRecorded):
        TrackRecordRow.from_result(crashed, **KW, status=Reason.CANCELLED)


def test_every_methods_objective_is_in_the_row():
    from qsolve.judging.results import MethodOutcome

    res = result(
        methods=[
            MethodOutcome(name="qaoa", kind="quantum", objective=-9.0),
            MethodOutcome(name="reference", kind="classical", objective=-10.0),
            MethodOutcome(name="gurobi", kind="classical", unavailable="no licence"),
            MethodOutcome(name="silent", kind="classical"),
        ]
    )
    r = TrackRecordRow.from_result(res, **KW)
    got = [(m.name, m.kind, m.objective, m.available, m.reason) for m in r.methods]
    assert got == [
        ("qaoa", "quantum", -9.0, True, None),
        ("reference", "classical", -10.0, True, None),
        ("gurobi", "classical", None, False, "no licence"),
        ("silent", "classical", None, False, "no objective"),
    ]
    (back,) = from_table(to_table([r]))
    assert back.methods == r.methods


def test_measured_is_what_the_receipts_seal(tmp_path):
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.trackrecord.receipts_check import receipt_classes
    from qsolve_pipeline.storage.trackrecord.row import measured_of

    blobs = BlobStore(tmp_path)

    def sealed(cls: str) -> str:
        return blobs.put(json.dumps({"result": {"accuracy": {"class": cls}}}).encode())

    silicon, simulator = sealed("measured"), sealed("simulated")
    assert receipt_classes([silicon, simulator, "0" * 64], tmp_path) == ["measured", "simulated", None]
    assert measured_of("provider:lab", receipt_classes([silicon, silicon], tmp_path))
    assert not measured_of("provider:reference", receipt_classes([simulator], tmp_path))
    assert not measured_of("provider:lab", receipt_classes([silicon, simulator], tmp_path))  # not all
    assert not measured_of("provider:lab", receipt_classes(["0" * 64], tmp_path))  # a receipt not found
    assert not measured_of("sim-cpu", ["measured"]) and not measured_of("fake:fez@1.6", None)
    assert measured_of("ibm:ibm_fez") and not measured_of("provider:lab")  # no receipt: by the target
