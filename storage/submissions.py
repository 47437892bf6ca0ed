"""Submissions started from the web pages (issue 33, item 2): who started each, the process running it,
and its report, kept in the home's store (``storage.objects``: ``QSOLVE_HOME``, or the bucket of
``QSOLVE_STORAGE_URL``) under ``submissions/<id>/``, so that its page shows it after a restart. Three
objects, each written once (created where absent, never overwritten):

    request.json    {id, account, file_name, created_at}       before its process starts
    process.json    {host, pid, started}                        once its process is started
    outcome.json    {finished_at, report | crashed}             by the process at its end, or by the web
                                                                process that sees it end without one

    submissions = Submissions(home)
    record = submissions.new("dev1", "max-cut.zip")     # its id: 32 random hex digits
    submissions.started(record.id, pid)
    submissions.finish(record.id, report=report)        # or crashed="one line"; False if one was there
    submissions.get(record.id)                          # Submission: .status, .report, .crashed

No table and no migration: the report is the submission flow's own :class:`SubmissionReport`, as JSON. A
writer of the store can change what a submission's page says; what was published, and the workflow's
page, come from the state database and the track record, never from here.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from qsolve.home import host_name, qsolve_home
from qsolve.runtime.janitor import start_time
from qsolve.validation.submission import SubmissionReport
from qsolve_pipeline.storage.objects import ObjectStore, storage_of

FOLDER = "submissions"
_ID = re.compile(r"^[0-9a-f]{32}$")

Status = Literal["starting", "running", "done", "crashed", "lost"]


class SubmissionNotFound(LookupError):
    """No submission of that id."""


class Request(BaseModel):
    id: str
    account: str
    file_name: str
    created_at: str


class Process(BaseModel):
    host: str
    pid: int
    started: int | None = None  #: its start time in clock ticks since boot, which a reused pid does not have


class Outcome(BaseModel):
    finished_at: str
    report: SubmissionReport | None = None
    crashed: str | None = None  #: the flow did not end in a report: why, in one line


class Submission(BaseModel):
    request: Request
    process: Process | None = None
    outcome: Outcome | None = None

    @property
    def id(self) -> str:
        return self.request.id

    @property
    def report(self) -> SubmissionReport | None:
        return self.outcome.report if self.outcome else None

    @property
    def status(self) -> Status:
        """``starting`` (no process yet), ``running``, ``done`` (its report kept), ``crashed`` (no report:
        ``outcome.crashed`` says why) or ``lost`` (its process, on this host, is gone without an outcome)."""
        if self.outcome is not None:
            return "done" if self.outcome.report is not None else "crashed"
        if self.process is None:
            return "starting"
        if self.process.host == host_name() and not _alive(self.process):
            return "lost"
        return "running"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _alive(process: Process) -> bool:
    now = start_time(process.pid)
    return now is not None and (process.started is None or now == process.started)


class Submissions:
    """The web pages' submissions of ``home`` (default ``QSOLVE_HOME``)."""

    def __init__(self, home: Path | str | None = None, store: ObjectStore | None = None) -> None:
        self.store = store if store is not None else storage_of(qsolve_home(home))

    def _key(self, submission_id: str, name: str) -> str:
        return f"{FOLDER}/{submission_id}/{name}"

    def _write(self, submission_id: str, name: str, model: BaseModel) -> bool:
        data = (model.model_dump_json(indent=2) + "\n").encode()
        return self.store.create(self._key(submission_id, name), data)

    def _read(self, submission_id: str, name: str, model: type[BaseModel]) -> BaseModel | None:
        try:
            data = self.store.get(self._key(submission_id, name))
        except FileNotFoundError:
            return None
        try:
            return model.model_validate(json.loads(data))
        except (ValueError, ValidationError) as e:
            raise SubmissionNotFound(f"submission {submission_id}: its {name} does not read ({e})") from None

    def new(self, account: str, file_name: str) -> Request:
        """A new submission of ``account``'s, before its process starts."""
        request = Request(id=secrets.token_hex(16), account=account, file_name=file_name, created_at=_now())
        self._write(request.id, "request.json", request)
        return request

    def started(self, submission_id: str, pid: int) -> None:
        """Its process, started on this host."""
        self._write(
            submission_id, "process.json", Process(host=host_name(), pid=pid, started=start_time(pid))
        )

    def finish(
        self, submission_id: str, *, report: SubmissionReport | None = None, crashed: str | None = None
    ) -> bool:
        """Its outcome, once: whether this call wrote it (False when one was written first)."""
        return self._write(
            submission_id, "outcome.json", Outcome(finished_at=_now(), report=report, crashed=crashed)
        )

    def get(self, submission_id: str) -> Submission:
        """The submission of that id; :class:`SubmissionNotFound` when there is none."""
        if not _ID.match(submission_id):
            raise SubmissionNotFound(f"no submission {submission_id!r} (an id is 32 hex digits)")
        request = self._read(submission_id, "request.json", Request)
        if request is None:
            raise SubmissionNotFound(f"no submission {submission_id}")
        return Submission(
            request=request,
            process=self._read(submission_id, "process.json", Process),
            outcome=self._read(submission_id, "outcome.json", Outcome),
        )
