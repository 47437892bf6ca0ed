"""Two maintenance passes filing the same runs at once each report only the runs they marked filed
themselves (issue 36, item 6): both wrote the same rows (the same file), one marked them."""

from __future__ import annotations

from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.state import StateDB

from .test_rebuild import ended, run_ids


def test_a_pass_reports_only_the_runs_it_filed_itself(db: StateDB, tmp_path) -> None:
    home = tmp_path / "home"
    version = db.publish_version("max-cut", "1.0.0", "d1" * 32, [])[0]
    ids = ended(db, version, 5)
    seen_by_both = db.unfiled_runs(20)  # both passes read the same unfiled runs before either marks them
    first = maintenance.file_runs(db, seen_by_both, home)
    second = maintenance.file_runs(db, seen_by_both, home)
    assert sorted(first) == sorted(ids) and second == []
    assert maintenance.file_ended_runs(db, home) == ([], 0)
    assert run_ids(home) == sorted(ids)  # each run's row once
