"""Task results in the state database (SQLite and PostgreSQL), figures as blobs."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.calibration import CalibrationStore, FigureMissing
from qsolve_pipeline.storage.state import NotFound, StateError, connect
from tests.qsolve.calibration.calibration_runs import calibrated, made
from tests.storage.state.conftest import database_url, default_settings  # noqa: F401 - the fixture


@pytest.fixture
def store(database_url: str, tmp_path: Path) -> Iterator[CalibrationStore]:  # noqa: F811
    with connect(database_url, home=tmp_path, settings=default_settings()) as db:
        yield CalibrationStore(db, BlobStore(tmp_path))


def test_a_result_is_recorded_with_its_figures_as_blobs(store: CalibrationStore) -> None:
    done = calibrated("CheckT1", 1)
    recorded = store.record(done.result, done.figures)
    (figure,) = recorded.figures
    assert figure.blob is not None
    assert store.figure_bytes(figure) == done.figures[figure.sha256]
    got = store.get(recorded.id)
    assert got == recorded
    assert got.evidence() == done.result.evidence()
    assert got.outputs == done.result.outputs and got.sweep == done.result.sweep
    assert got.fit == done.result.fit
    assert got.created_at == done.result.created_at


def test_recording_again_is_a_no_op_and_other_content_is_refused(store: CalibrationStore) -> None:
    result, figures = made("Q01")
    first = store.record(result, figures)
    assert store.record(result, figures) == first
    assert len(store.list()) == 1
    with pytest.raises(StateError, match="other content"):
        store.record(result.model_copy(update={"message": "changed"}), figures)


def test_a_batch_is_recorded_whole_or_not_at_all(store: CalibrationStore) -> None:
    kept, figures = made("Q01")
    store.record(kept, figures)
    fresh = made("Q02")
    clash = (kept.model_copy(update={"status": "failed"}), figures)
    with pytest.raises(StateError):
        store.record_all([fresh, clash])
    assert [r.qid for r in store.list()] == ["Q01"]


def test_listing_filters_by_task_chip_qubit_and_day(store: CalibrationStore) -> None:
    rows = [
        made("Q00", minutes=1),
        made("Q01", minutes=2),
        made("Q00", task="CheckRabi", minutes=3),
        made("Q00", chip="fake:fez@1.6", minutes=4),
        made("Q00", day="2026-12-02", minutes=5),
    ]
    store.record_all(rows)
    assert len(store.list()) == 5
    assert [r.created_at for r in store.list()] == sorted(r.created_at for r, _ in rows)
    assert len(store.list(task="CheckT1")) == 4
    assert len(store.list(task="CheckT1", chip="fake:fez", qid="Q00")) == 2
    assert [r.day for r in store.list(day="2026-12-02")] == ["2026-12-02"]
    with pytest.raises(NotFound):
        store.get("0" * 32)


def test_the_latest_evaluable_result_per_qubit(store: CalibrationStore) -> None:
    store.record_all(
        [
            made("Q00", minutes=1),
            made("Q00", minutes=5, true_status="SWEEP_TOO_SHORT", fault="sweep_too_short"),
            made("Q01", minutes=2),
            made("Q01", minutes=6, status="failed"),  # not evaluable: failed
            made("Q02", minutes=3),
            made("Q02", minutes=7, figure=None),  # not evaluable: no figure
            made("Q10", minutes=4),
            made("Q03-Q04", minutes=4, task="CheckT1"),
            made("Q03", minutes=9, task="CheckRabi"),  # another task
            made("Q03", minutes=9, chip="fake:fez@2"),  # another chip
            made("Q05", minutes=9, status="failed"),  # nothing evaluable at all
        ]
    )
    latest = store.latest("CheckT1", "fake:fez")
    assert [(r.qid, r.created_at.minute) for r in latest] == [
        ("Q00", 5), ("Q01", 2), ("Q02", 3), ("Q03-Q04", 4), ("Q10", 4)
    ]  # fmt: skip
    assert latest[0].fault == "sweep_too_short" and latest[0].figures
    assert store.latest("CheckT2Echo", "fake:fez") == []


def test_a_figure_whose_bytes_are_not_stored_is_reported(store: CalibrationStore, tmp_path: Path) -> None:
    result, figures = made("Q00")
    with pytest.raises(FigureMissing, match="no bytes"):
        store.record(result, {})
    with pytest.raises(FigureMissing, match="SHA-256"):
        store.record(result, {result.figures[0].sha256: b"other bytes"})
    recorded = store.record(result, figures)
    (figure,) = recorded.figures
    BlobStore(tmp_path).path(figure.blob).unlink()
    with pytest.raises(FigureMissing):
        store.figure_bytes(figure)
    assert hashlib.sha256(next(iter(figures.values()))).hexdigest() == figure.sha256
