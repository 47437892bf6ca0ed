"""A submitted folder that links to a secret (issue 22): the submission flow refuses the link by name,
and the secret is in no report, artifact or flow state."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import WorkflowDir
from tests.qsolve.test_submitted_folder import SECRET, secret_file


def test_a_link_to_a_secret_is_refused_and_the_secret_kept_out_of_every_record(
    prefect, wf: WorkflowDir, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.states import get_state_exception

    from qsolve_pipeline.flows.submission import report_of, submission_flow

    os.symlink(secret_file(tmp_path), wf.path("examples/k.json"))
    state = submission_flow(str(wf.root), return_state=True)
    report = report_of(state)
    assert state.is_failed()
    assert any("examples/k.json" in r and "follows no link" in r for r in report.reasons), report.reasons
    with get_client(sync_client=True) as client:
        artifacts = [str(a.data) for a in client.read_artifacts()]
        run = client.read_flow_run(state.state_details.flow_run_id)
    kept = [report.markdown(), str(state.message), str(get_state_exception(state)), str(run.state)]
    kept += [*artifacts, report.model_dump_json() if hasattr(report, "model_dump_json") else repr(report)]
    assert artifacts, "the flow kept no artifact to look in"
    for text in kept:
        assert SECRET not in text and "ibm_quantum" not in text


def test_the_published_archive_is_the_folder_the_checks_read(qsolve_home: Path, wf: WorkflowDir) -> None:
    """The folder was read again at each stage: the checks and every gate's copy read it, and
    publication packed it once more. A submitter who changed workflow.py between the gates and
    publication published code no gate ran. The checks read it once now (a snapshot), and the gates
    and publication use that snapshot."""
    from qsolve.validation.checks import check_submission
    from qsolve.workflow.publication import digest_of, pack
    from qsolve_pipeline.tasks.publication import publish

    checks = check_submission(wf.root)
    assert checks.ok, checks.errors
    checked = digest_of(pack(wf.root))
    wf.write("workflow.py", wf.path("workflow.py").read_text() + "\n# changed after the gates passed\n")
    out = publish(checks)
    assert out.error is None and out.published.digest == checked
