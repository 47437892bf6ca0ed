"""The track record: one row per recorded run, in Parquet files under ``QSOLVE_HOME/trackrecord/``, and
the DuckDB views over them (issue 4; DESIGN.md §6; benchmarks-and-gates.md, "How results enter the
track record" and "What the workflow page shows").

    row            TrackRecordRow, the fixed Arrow schema
    layout         where the files live and how they are named
    inventory      which of the folder's files the views read: each checked from its footer
    known          which data files the state database knows, by name and content: a pass sets aside
                   the others
    log            the signed append-only log of every file filed or compacted, and its checkpoints
    live           what every reader reads: the log's live set, each file checked against its digest
    verify         qsolve trackrecord verify: the log, the files and every row's run, with a trust list
    writing        whole files: a temporary file, fsynced, linked into place; Parquet as the track
                   record writes it
    schema_file    the empty file every view reads first (made where absent, or in a temporary folder
                   for a reading command)
    filing         file_rows / file_table: whole files, never rewritten, the same runs never twice
    compaction     compact: merge batch files, keep the latest rows apart (what makes ``current`` quick)
    views          the views, in trackrecord.duckdb for analysts and in memory for the commands
    workflow_page  page: the workflow page's four sections, headline accuracy and verdicts
    published      published_page: the page as qsolve page and the web page build it (the published
                   version current, failing rows' bounds, hardware rows' receipts checked)
    receipts_check the receipts behind hardware rows, read and verified
    sql            query: SQL over the views, as a table, CSV, JSON or Parquet
    damaged        files damaged past their footer: found when a read fails, read around
    shared         the same files in object storage (QSOLVE_STORAGE_URL): filing, checks, reading
    analyst        the views as SQL over s3:// with the CREATE SECRET an endpoint needs (qsolve views-sql)
    errors         the error tree
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

# Names load on first use, so that ``qsolve`` building its parser (qsolve.cli.trackrecord) loads neither
# DuckDB nor Arrow: each name is found in its module.
_HOMES = {
    "Compacted": "compaction",
    "compact": "compaction",
    "NotRecorded": "errors",
    "QueryFailed": "errors",
    "QueryLimit": "errors",
    "TrackRecordError": "errors",
    "TrackRecordWarning": "errors",
    "UnknownWorkflow": "errors",
    "Filed": "filing",
    "file_rows": "filing",
    "file_table": "filing",
    "Layout": "layout",
    "qsolve_home": "layout",
    "WorkflowPage": "workflow_page",
    "page": "workflow_page",
    "render_page": "workflow_page",
    "FORMATS": "sql",
    "query": "sql",
    "SCHEMA": "row",
    "TrackRecordRow": "row",
    "connect": "views",
    "ensure_views": "views",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)

__all__ = [
    "Compacted",
    "FORMATS",
    "Filed",
    "Layout",
    "NotRecorded",
    "QueryFailed",
    "QueryLimit",
    "SCHEMA",
    "TrackRecordError",
    "TrackRecordRow",
    "TrackRecordWarning",
    "UnknownWorkflow",
    "WorkflowPage",
    "compact",
    "connect",
    "ensure_views",
    "file_rows",
    "file_table",
    "page",
    "qsolve_home",
    "query",
    "render_page",
]
