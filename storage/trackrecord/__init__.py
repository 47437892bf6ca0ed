"""The track record: one row per recorded run, in Parquet files under ``QSOLVE_HOME/trackrecord/``, and
the DuckDB views over them (issue 4; DESIGN.md §6; benchmarks-and-gates.md, "How results enter the
track record" and "What the workflow page shows").

    row          TrackRecordRow, the fixed Arrow schema
    layout       where the files live and how they are named
    filing       file_rows / file_table: whole files, never rewritten, the same runs never twice
    compaction   compact: merge batch files, keep the latest rows apart (what makes ``current`` quick)
    views        the views, in trackrecord.duckdb for analysts and in memory for the commands
    page         the workflow page's four sections, headline accuracy and verdicts
    query        SQL over the views, as a table, CSV, JSON or Parquet
    commands     ``qsolve query`` and ``qsolve page`` (add_commands)
    errors       the error tree
"""

from .compaction import Compacted, compact
from .errors import NotRecorded, QueryFailed, TrackRecordError, UnknownWorkflow
from .filing import Filed, file_rows, file_table
from .layout import Layout, qsolve_home
from .page import WorkflowPage, page, render_page
from .query import FORMATS, query
from .row import SCHEMA, TrackRecordRow
from .views import connect, ensure_views

__all__ = [
    "Compacted",
    "FORMATS",
    "Filed",
    "Layout",
    "NotRecorded",
    "QueryFailed",
    "SCHEMA",
    "TrackRecordError",
    "TrackRecordRow",
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
