"""The track record's errors, grouped by what callers catch.

TrackRecordError
├── NotRecorded        a run that failed for platform reasons: it says nothing about the workflow
├── QueryFailed        SQL that DuckDB refused (bad syntax, an unknown column or view)
│   └── QueryLimit     a query stopped by one of ``qsolve query``'s limits (its time-out, its memory)
└── UnknownWorkflow    a page asked for a workflow (or a version of it) with no recorded rows

TrackRecordWarning     a file left out of the views (qsolve did not write it, or it is damaged), or a
                       ``trackrecord.duckdb`` that could not be brought up to date; the query goes on
"""

from __future__ import annotations


class TrackRecordError(Exception):
    """Anything the track record refuses."""


class NotRecorded(TrackRecordError):
    """A run that failed for platform reasons is not recorded (benchmarks-and-gates.md, "How they run" 5)."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"run {run_id}: {status} is a platform failure and is not recorded")
        self.run_id, self.status = run_id, status


class QueryFailed(TrackRecordError):
    """DuckDB refused the SQL; the message is DuckDB's."""

    def __init__(self, sql: str, message: str) -> None:
        super().__init__(message)
        self.sql = sql


class QueryLimit(QueryFailed):
    """A query stopped by a limit of ``qsolve query``: the message names the limit and how to raise it."""

    def __init__(self, sql: str, message: str, limit: str) -> None:
        super().__init__(sql, message)
        self.limit = limit  # "timeout" or "memory"


class UnknownWorkflow(TrackRecordError):
    """No recorded rows for this workflow, or for this version of it."""

    def __init__(self, workflow: str, version: str | None = None, known: list[str] | None = None) -> None:
        what = f"{workflow} version {version}" if version else workflow
        hint = f" (recorded versions: {', '.join(known)})" if known else ""
        super().__init__(f"no track record for {what}{hint}")
        self.workflow, self.version = workflow, version


class TrackRecordWarning(UserWarning):
    """Something the track record went on without: the message names the file and why."""
