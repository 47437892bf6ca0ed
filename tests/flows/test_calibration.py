"""The calibration flow: one Prefect task per calibration task, its results recorded as it goes."""

from __future__ import annotations

from pathlib import Path

from qsolve_pipeline.storage.calibration import open_store


def test_the_flow_records_every_result_with_its_known_answer(prefect, tmp_path: Path) -> None:
    from prefect.artifacts import Artifact

    from qsolve_pipeline.flows.calibration import calibration_flow

    report = calibration_flow(
        chip="fake:fez",
        tasks="ReadoutClassification,CheckRabi",
        qubits="0-2",
        faults=True,
        day="2026-12-04",
        home=str(tmp_path),
    )
    rows = report["results"]
    assert report["day"] == "2026-12-04"
    assert [(r["task"], r["qid"], r["fault"]) for r in rows] == [
        ("ReadoutClassification", "Q00", None),
        ("ReadoutClassification", "Q01", None),
        ("ReadoutClassification", "Q01", "readout_near_half"),
        ("ReadoutClassification", "Q02", None),
        ("CheckRabi", "Q00", None),
        ("CheckRabi", "Q01", None),
        ("CheckRabi", "Q01", "too_few_points"),
        ("CheckRabi", "Q02", None),
        ("CheckRabi", "Q02", "no_drive"),
    ]
    store = open_store(tmp_path)
    try:
        recorded = {r.id: r for r in store.list(day="2026-12-04")}
        assert set(recorded) == {r["id"] for r in rows}
        assert {recorded[r["id"]].true_status for r in rows if r["fault"]} == {
            "POOR_READOUT", "NO_DRIVE", "TOO_FEW_POINTS"
        }  # fmt: skip
    finally:
        store.close()
    artifact = Artifact.get("calibration-report")
    assert artifact is not None and "CheckRabi" in artifact.data
