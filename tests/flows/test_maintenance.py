"""The maintenance flow and `qsolve maintenance`: ended runs filed, the report returned and published."""

from __future__ import annotations

import json
from pathlib import Path

from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from tests.storage.trackrecord.builders import result


def ended_runs(home: Path, n: int) -> list[str]:
    with connect(home=home) as db:
        version = db.publish_version("max-cut", "1.0.0", "e2" * 32, [])[0]
        ids = []
        for i in range(n):
            run = db.create_run(version, f"case-{i}", "sim-cpu", "hardware")
            db.start_run(run.id)
            db.finish_run(run.id, "finished", result=result(name=f"case-{i}", target="sim-cpu").model_dump())
            ids.append(run.id)
        return ids


def test_a_pass_files_ended_runs_and_publishes_its_report(prefect, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client

    from qsolve_pipeline.flows.maintenance import maintenance_flow

    ids = ended_runs(tmp_path, 2)
    state = maintenance_flow(home=str(tmp_path), return_state=True)
    report = state.result(_sync=True)
    assert state.is_completed()
    assert (report.filed, report.waiting, report.abandoned, report.released) == (ids, 0, [], [])
    assert report.compaction == "merged 1 file into the latest rows (2) and older rows (0)"
    assert sorted(run_sql("select run_id from rows", tmp_path).column("run_id").to_pylist()) == sorted(ids)

    with get_client(sync_client=True) as client:
        artifact = client.read_latest_artifacts()
        kept = {a.key: a for a in artifact}
    assert "filed 2 runs into the track record" in kept["maintenance-report"].data


def test_the_command_runs_one_pass(prefect, tmp_path: Path, monkeypatch, capsys) -> None:
    from qsolve.cli import main

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    ids = ended_runs(tmp_path, 1)
    assert main(["maintenance", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["filed"] == ids
    assert main(["maintenance"]) == 0
    assert "filed 0 runs into the track record" in capsys.readouterr().out


def test_the_automation_that_crashes_silent_runs_is_made_once(prefect) -> None:
    from qsolve_pipeline.deployments.automations import NAME, SILENT_AFTER, crash_silent_runs

    first = crash_silent_runs()
    again = crash_silent_runs()
    assert first.id == again.id and first.name == NAME
    trigger = again.trigger
    assert trigger.posture == "Proactive" and trigger.within == SILENT_AFTER
    assert "prefect.flow-run.heartbeat" in trigger.after and "prefect.flow-run.Completed" in trigger.expect
    (action,) = again.actions
    assert action.type == "change-flow-run-state" and action.state == "CRASHED"
