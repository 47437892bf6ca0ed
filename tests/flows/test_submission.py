"""The submission flow end to end: publish max-cut with its track record, resubmit it, reject a gate
failure, count a history case the platform could not price.

The flow tests share one home (``qsolve_home``) and a resubmission of a published name and version runs no
gate (issue 37): a test that needs the gates to run submits in a fresh home of its own (``home``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLING_MODULE, WorkflowDir
from tests.flows.cheap_max_cut import copy_cheap_max_cut


def submit(folder: Path):
    from qsolve_pipeline.flows.submission import report_of, submission_flow

    # as dev, the local operator of these tests (conftest), named: a module's fixture runs before it is set
    state = submission_flow(str(folder), account="dev", return_state=True)
    return state, report_of(state)


def rows(home: Path, workflow: str, columns: str = "case_name, target, passed", order: str = "case_name"):
    """``workflow``'s rows, read as ``qsolve query`` reads them (a filing leaves ``trackrecord.duckdb`` as
    it was: a reading command brings it up to date over the files the state database recorded)."""
    from qsolve_pipeline.storage.trackrecord.sql import run_sql

    assert workflow.replace("-", "").isalnum()  # quoted below as it is
    table = run_sql(f"select {columns} from rows where workflow = '{workflow}' order by {order}", home)
    return [tuple(r.values()) for r in table.to_pylist()]


@pytest.fixture(scope="module")
def max_cut(tmp_path_factory) -> Path:
    """max-cut, its six cases at cheaper QAOA params: the subject is the flow, not QAOA (the shipped
    max-cut's own gates are ``qsolve test``'s, tests/qsolve/test_cli.py); each submission whose gates or
    history stage run pays its cases."""
    return copy_cheap_max_cut(tmp_path_factory.mktemp("wf") / "max-cut")


@pytest.fixture(scope="module")
def first_submit(prefect, qsolve_home: Path, max_cut: Path):
    """max-cut submitted once in this process's home: its state, its report, the rows it filed and the
    latest artifacts of max-cut's keys right after (the tests of this file that submit max-cut share a
    worker of the suite's, an xdist group, in this file's order: it is submitted once, first, and its gates
    run once: the full max-cut's gates are the file's costliest step)."""
    from prefect.client.orchestration import get_client

    state, report = submit(max_cut)
    with get_client(sync_client=True) as client:  # read at once: a later flow of max-cut writes its own
        artifacts = {a.key: a.data for a in client.read_latest_artifacts() if a.key.startswith("max-cut-")}
    return state, report, rows(qsolve_home, "max-cut"), artifacts


@pytest.mark.xdist_group("max-cut-submitted")
def test_submit_publishes_and_builds_the_track_record(first_submit) -> None:
    state, report, recorded, _ = first_submit
    assert state.is_completed(), report.markdown()
    assert report.accepted and report.published.created and report.published.name == "max-cut"
    assert [g.passed for g in report.gates] == [True] * 8
    assert report.history.status == "ran" and report.history.not_run == []
    assert len(recorded) == 6 == len(report.history.recorded)
    assert {t for _, t, _ in recorded} == {"sim-cpu", "fake:fez@1.6"}


@pytest.mark.xdist_group("max-cut-submitted")
def test_a_second_submit_changes_nothing(first_submit, qsolve_home: Path, max_cut: Path) -> None:
    from qsolve_pipeline.flows.submission import GATES_SKIPPED

    before = first_submit[2]
    assert len(before) == 6
    state, report = submit(max_cut)
    assert state.is_completed()
    assert report.published.created is False
    assert report.gates == [] and report.cases == []  # said before the gates, not after their half minute
    assert report.sandbox is None  # no workflow process started
    assert GATES_SKIPPED in report.warnings
    assert "already published with identical content; nothing changed" in report.markdown()
    assert report.history.status == "already recorded"
    assert rows(qsolve_home, "max-cut") == before


@pytest.mark.xdist_group("max-cut-submitted")
def test_other_content_under_a_published_version_is_refused(
    first_submit, max_cut: Path, tmp_path: Path
) -> None:
    changed = tmp_path / "max-cut"
    shutil.copytree(max_cut, changed)
    (changed / "examples" / "extra.json").write_text('{"nodes": 2, "edges": [[0, 1, 2.0]]}')
    state, report = submit(changed)
    assert state.is_failed() and report.failed_stage == "publication"
    assert report.gates == [] and report.cases == [] and report.sandbox is None  # refused before them
    assert "already published with other content" in report.reasons[0]


#: the argument lists of the workflow processes started while a test listens (an audit hook: hooks stay)
STARTED: list[list[str]] | None = None


def _listen(event: str, args: tuple) -> None:
    if event == "subprocess.Popen" and STARTED is not None and "qsolve.sandbox.child" in list(args[1]):
        STARTED.append(list(args[1]))


@pytest.mark.xdist_group("max-cut-submitted")
def test_qsolve_submit_of_a_published_version_runs_no_gate_and_starts_no_sandbox(
    first_submit, max_cut: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Issue 37: ``qsolve submit`` of a published name and version says so before the gates, and starts
    no workflow process (not even the one it starts ahead for the gates): the same content is already
    published (exit 0), other content is refused with publication's line (exit 1)."""
    global STARTED
    from prefect.settings import PREFECT_API_URL

    from qsolve.cli import main
    from qsolve.sandbox.process import JobProcess

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())  # the harness's server
    changed = tmp_path / "max-cut"
    shutil.copytree(max_cut, changed)
    (changed / "examples" / "extra.json").write_text('{"nodes": 2, "edges": [[0, 1, 2.0]]}')
    sys.addaudithook(_listen)
    STARTED = []
    try:
        JobProcess().close()  # what the hook hears when a workflow process starts
        assert len(STARTED) == 1
        STARTED.clear()
        capsys.readouterr()
        assert main(["submit", str(max_cut)]) == 0
        same = capsys.readouterr().out
        assert main(["submit", str(changed)]) == 1
        other = capsys.readouterr().out
        started = list(STARTED)
    finally:
        STARTED = None
    assert started == []
    assert "max-cut 1.0.0: already published with identical content; nothing changed" in same
    assert "the gates did not run: this version is already published" in same
    assert "**Rejected at the publication stage.**" in other
    assert "max-cut 1.0.0 is already published with other content" in other
    for out in (same, other):
        assert "## Gates" not in out and "Sandbox:" not in out


@pytest.mark.xdist_group("max-cut-submitted")
def test_the_flows_account_reaches_publication(first_submit, max_cut: Path, tmp_path: Path) -> None:
    """A second account submits a higher version of max-cut (published above by the local operator's
    account): the flow's ``account`` is what publication judges, and it is refused there, naming the
    rule and the name's developers; the current version stays."""
    from qsolve.home import local_account
    from qsolve_pipeline.storage.state import connect

    higher = tmp_path / "max-cut"
    shutil.copytree(max_cut, higher)
    manifest = higher / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1.0.0", "version: 1.0.1"))
    from qsolve_pipeline.flows.submission import report_of, submission_flow

    state = submission_flow(str(higher), run_history=False, account="mallory", return_state=True)
    report = report_of(state)
    assert state.is_failed() and report.failed_stage == "publication"
    (reason,) = report.reasons
    assert reason.startswith("max-cut belongs to its developers (dev): account mallory may not")
    assert local_account() == "dev"  # what a submission naming no account publishes as
    with connect() as db:
        assert db.get_version("max-cut").version == "1.0.0"


GATE_FAILING = SAMPLING_MODULE  # no noise-model case in the tiny workflow: fidelity_checked fails


def test_a_workflow_failing_a_gate_is_not_published(prefect, home: Path, wf: WorkflowDir) -> None:
    wf.write("workflow.py", GATE_FAILING)  # no noise-model case: fidelity_checked fails
    state, report = submit(wf.root)
    assert state.is_failed()
    assert report.failed_stage == "gates" and report.published is None
    (reason,) = report.reasons
    assert reason.startswith(
        "fidelity_checked: no case sets a non-zero min_fidelity on a fake: or ibm: target"
    )
    assert "Rejected at the gates stage" in report.markdown()
    assert rows(home, "tiny") == []
    # a clean Failed run: Prefect resolves its data into an exception (no TypeError in the engine)
    from prefect.states import get_state_exception

    from qsolve.validation.submission import SubmissionRejected

    rejected = get_state_exception(state)
    assert isinstance(rejected, SubmissionRejected) and rejected.report == report
    assert state.message == str(rejected) == f"rejected at the gates stage: {reason}"


def test_the_flow_runs_final_state_names_a_methods_exception(prefect, home, wf: WorkflowDir) -> None:
    """Issue 23: the Prefect flow run's final state says what ``qsolve test`` says, the workflow's frame
    and all, not only "no headline metric"."""
    from tests.qsolve.test_failures import EXPECTED, MODULE

    wf.write("workflow.py", MODULE)
    wf.cases["cases"] = [{"name": "x1", "input": {"x": 1}}]
    wf.save()
    state, report = submit(wf.root)
    assert state.is_failed() and report.failed_stage == "gates"
    assert f"cases_pass: 1 of 1 cases fail: x1 ({EXPECTED[1]})" in state.message, state.message


def test_a_history_case_that_cannot_be_priced_is_counted_not_recorded(prefect, home, wf) -> None:
    estimate = """

def estimate(input, params):
    if input['x'] == 2:
        raise ValueError('too big to price')
    return {'circuits': 2, 'shots': 200}
"""
    wf.write("workflow.py", GATE_FAILING + estimate)
    wf.manifest["name"] = "priced"
    wf.cases["cases"] = [
        {"name": "one", "input": {"x": 1}, "target": "fake:fez@1.6", "expect": {"min_fidelity": 0.5}},
        {"name": "two", "input": {"x": 2}},
    ]
    wf.save()
    state, report = submit(wf.root)
    assert state.is_completed(), report.markdown()
    assert report.history.recorded == ["one"]
    assert [(n.case, n.reason) for n in report.history.not_run] == [
        (
            "two",
            "platform_error: the run could not be priced: estimate() failed: ValueError: too big to price"
            " (workflow.py:25)",  # the workflow's own frame
        )
    ]
    assert [r[0] for r in rows(home, "priced")] == ["one"]


def test_a_history_stage_that_fails_as_a_whole_shows_as_skipped(prefect) -> None:
    from qsolve_pipeline.flows.submission import _history

    outcome = _history("never-published", "0.0.1")
    assert outcome.status == "skipped"
    assert outcome.message.startswith("NotFound: no published version never-published 0.0.1")


def test_two_cases_of_one_name_each_run_on_their_own_target_once(prefect, home, wf) -> None:
    wf.write("workflow.py", GATE_FAILING)
    wf.manifest["name"] = "same-names"
    wf.cases["cases"] = [
        {"name": "same", "input": {"x": 1}, "target": "fake:fez@1.6", "expect": {"min_fidelity": 0.5}},
        {"name": "same", "input": {"x": 2}},
    ]
    wf.save()
    state, report = submit(wf.root)
    assert state.is_completed(), report.markdown()
    assert report.history.recorded == ["same", "same"] and report.history.not_run == []
    got = rows(home, "same-names", "target, quantum", "target")
    assert got == [("fake:fez@1.6", -1.0), ("sim-cpu", -2.0)]  # each case its own input and target


def test_a_folder_that_does_not_exist_is_said_so_not_as_lint_codes(prefect, tmp_path: Path) -> None:
    state, report = submit(tmp_path / "nowhere")
    assert state.is_failed() and report.failed_stage == "lint"
    assert report.reasons == [f"{tmp_path / 'nowhere'}: no such folder (on the machine running the flow)"]


@pytest.mark.xdist_group("max-cut-submitted")
def test_the_report_artifacts_are_keyed_by_workflow_and_escape_what_they_quote(first_submit) -> None:
    """The artifacts of the submission whose gates ran (and made the gates' table artifact): max-cut's
    first, in this worker's home."""
    state, report, _, artifacts = first_submit
    assert state.is_completed(), report.markdown()
    assert [g.passed for g in report.gates] == [True] * 8
    assert {"max-cut-submission-report", "max-cut-submission-gates"} <= set(artifacts)
    text = artifacts["max-cut-submission-report"]
    assert "fake:fez\\@1.6" in text and "fake:fez@1.6" not in text.replace("fake:fez\\@1.6", "")
