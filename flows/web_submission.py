"""A submission from the web pages, run in a process of its own (issue 33, item 2).

``flows.dispatch.start_submission`` unpacks the uploaded zip into a private temporary folder, records the
submission (``storage.submissions``) and starts this module as a child process:

    python -m qsolve_pipeline.flows.web_submission HOME SUBMISSION_ID TEMPORARY_FOLDER WORKFLOW_FOLDER

It runs the submission flow on the workflow folder as the account the submission records (on the Prefect
server every command uses: ``flows.dispatch.use_server``), records the flow's report as the submission's
outcome, and removes the temporary folder, whatever happened. A process and not a thread of the web
server: the flow runs the workflow's gates for minutes, imports qiskit_aer in its main thread (FACTS.md: a
simulation in a later thread segfaults), and a crash of it never takes the pages down.
"""

from __future__ import annotations

import sys

import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md: a later thread segfaults otherwise)

from qsolve.sandbox.calls import one_line
from qsolve.workflow.upload import remove
from qsolve_pipeline.storage.submissions import Submissions


def run(home: str, submission_id: str, temporary: str, folder: str) -> int:
    """The submission run and its outcome recorded; 0 when the flow gave a report (accepted or not)."""
    submissions = Submissions(home)
    try:
        account = submissions.get(submission_id).request.account
        from qsolve_pipeline.flows.dispatch import use_server

        use_server()
        from qsolve_pipeline.flows.submission import report_of, submission_flow

        state = submission_flow(folder, account=account, return_state=True)
        report = report_of(state)
    except BaseException as e:  # noqa: BLE001 - whatever it was, the page says it
        report = e
    finally:
        remove(temporary)
    if isinstance(report, BaseException):  # the flow itself crashed
        submissions.finish(submission_id, crashed=one_line(f"{type(report).__name__}: {report}"))
        return 1
    submissions.finish(submission_id, report=report)
    return 0


if __name__ == "__main__":
    sys.exit(run(*sys.argv[1:5]))
