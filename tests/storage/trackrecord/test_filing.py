"""Filing: whole Parquet files, read back as filed; the same runs filed twice are seen once."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from qsolve_pipeline.storage.trackrecord import SCHEMA, Layout, compact, connect, file_rows, file_table
from qsolve_pipeline.storage.trackrecord.row import from_table, to_table

from .builders import row


def run_ids(home: Path, view: str = "rows") -> list[str]:
    con = connect(home)
    try:
        return [r[0] for r in con.sql(f"SELECT run_id FROM {view} ORDER BY run_id").fetchall()]
    finally:
        con.close()


def test_filed_rows_read_back(home):
    rows = [row("a", case="one"), row("b", case="two", passed=False, accuracy=0.5, fidelity=0.9)]
    filed = file_rows(rows, home)
    assert filed.new and filed.rows == 2 and filed.path.parent == home / "trackrecord"
    assert filed.path.name.startswith("b-") and filed.path.suffix == ".parquet"
    assert pq.read_schema(filed.path).equals(SCHEMA, check_metadata=False)
    con = connect(home)
    back = from_table(con.sql("SELECT * FROM rows ORDER BY run_id").to_arrow_table())
    con.close()
    assert back == rows


def test_the_same_runs_filed_twice_are_seen_once(home):
    rows = [row("a", case="one"), row("b", case="two")]
    first = file_rows(rows, home)
    again = file_rows(list(reversed(rows)), home)
    assert again.path == first.path and not again.new
    assert len(Layout(home).files()) == 1
    # A run filed again in another batch, even with another recorded time, is one row.
    file_rows([row("b", case="two", minute=9), row("c", case="three")], home)
    assert run_ids(home) == ["a", "b", "c"]
    assert run_ids(home, "filed_rows") == ["a", "b", "b", "c"]
    con = connect(home)
    assert con.sql("SELECT recorded_at FROM rows WHERE run_id = 'b'").fetchall()[0][0].minute == 9
    con.close()
    # Still once after compaction, and after filing a compacted batch again.
    compact(home)
    file_rows(rows, home)
    assert run_ids(home) == ["a", "b", "c"]


def test_a_run_twice_in_one_batch_is_filed_once(home):
    filed = file_table(to_table([row("a", minute=1), row("a", minute=2), row("b")]), home)
    assert filed.rows == 2
    table = pq.read_table(filed.path)
    assert sorted(table.column("run_id").to_pylist()) == ["a", "b"]


def test_nothing_to_file(home):
    filed = file_rows([], home)
    assert (filed.path, filed.rows, filed.new) == (None, 0, False)


def test_views_work_with_no_files_and_typed_columns(home):
    con = connect(home)
    for view in [
        "rows",
        "current",
        "history",
        "track_record",
        "on_hardware",
        "earlier_results",
        "workflow_cards",
        "nondeterministic",
    ]:
        assert con.sql(f"SELECT count(*) FROM {view}").fetchall() == [(0,)]
    types = dict(con.sql("SELECT column_name, column_type FROM (DESCRIBE current)").fetchall())
    con.close()
    assert types["recorded_at"] == "TIMESTAMP WITH TIME ZONE"
    assert types["passed"] == "BOOLEAN" and types["shots"] == "BIGINT" and types["accuracy"] == "DOUBLE"
    assert "filename" not in types


def test_temporary_and_stray_files_are_not_read(home):
    file_rows([row("a")], home)
    folder = home / "trackrecord"
    (folder / ".tmp-b-0123.parquet.99.abcd").write_bytes(b"PAR1 half a file")
    (folder / "notes.txt").write_text("not a track record file")
    assert run_ids(home) == ["a"]


def test_compaction_keeps_every_row_and_removes_batches(home):
    for i in range(5):
        file_rows([row(f"r{i}", case=f"c{i % 2}", minute=i)], home)
    done = compact(home)
    layout = Layout(home)
    assert done.merged_files == 5 and (done.heads, done.older) == (2, 3)
    assert [p.name[0] for p in layout.files()] == ["h", "o"]
    assert run_ids(home) == [f"r{i}" for i in range(5)]
    assert run_ids(home, "current") == ["r3", "r4"]
    assert compact(home).skipped == "no batch files"


def test_small_older_files_are_merged(home):
    for i in range(4):
        file_rows([row(f"a{i}", minute=2 * i), row(f"b{i}", minute=2 * i + 1)], home)
        compact(home, older_files_limit=2)
    layout = Layout(home)
    assert len(layout.files("o")) <= 2
    assert run_ids(home) == sorted([f"a{i}" for i in range(4)] + [f"b{i}" for i in range(4)])
    assert run_ids(home, "current") == ["b3"]


def test_rows_filed_out_of_time_order_around_compactions(home):
    file_rows([row("t10", minute=10)], home)
    compact(home)
    file_rows([row("t5", minute=5)], home)  # finished earlier, filed later
    assert run_ids(home, "current") == ["t10"]
    compact(home)
    file_rows([row("t1", minute=1), row("t20", minute=20)], home)
    assert run_ids(home, "current") == ["t20"]
    compact(home)
    assert run_ids(home, "current") == ["t20"]
    assert run_ids(home, "history") == ["t1", "t10", "t5"]


def test_a_filing_leaves_every_other_commit_of_its_database_durable(home):
    """A filing's log entry skips its own fsync on SQLite (it follows the batch's durable record); the
    connection goes back to the pool fsyncing every commit again, so a ledger's or a run's commit on it
    is never one a power cut could take back. The log's entries are all there, in order."""
    from qsolve_pipeline.storage.state import connect as connect_state

    with connect_state(home=home) as db:
        for n in range(3):
            file_rows([row(f"r{n}", case=f"case-{n}")], home, db.record_trackrecord_file, db=db)
        with db.engine.connect() as connection:
            level = connection.exec_driver_sql("PRAGMA synchronous").scalar()
        documents = db.trackrecord_log_documents()
        live = db.trackrecord_live_files()
    assert level == 2  # FULL: each commit fsyncs the write-ahead log
    assert len(documents) == 3 and len(live) == 3
    assert run_ids(home) == ["r0", "r1", "r2"]
