"""One machine's part in tests/storage/state/test_two_homes.py, in a process of its own (its own home; the
database and the bucket from the environment): ``python -m tests.storage.state.shared_home ACTION ...``.

    publish DIR N             pack the workflow folder, keep it as a blob, publish its version; end N
                              runs of it and file them (a failpoint may kill it on the way); prints the
                              run ids (JSON) before filing
    maintenance               a maintenance pass's steps, as the flow runs them (no Prefect: it costs a
                              minute of a busy machine and tests nothing of the storage)
    file-loop K START         K rounds of: 3 ended runs, filed
    compact-loop K            K compactions
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from qsolve.home import qsolve_home
from qsolve.workflow.folder import load_workflow
from qsolve.workflow.publication import pack
from qsolve_pipeline.storage import maintenance
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import compact
from tests.storage.state.test_rebuild import ended

NAME, VERSION = "tiny", "1.0.0"


def main(action: str, *args: str) -> None:
    home = qsolve_home().resolve()
    with connect(home=home) as db:
        if action == "publish":
            folder = Path(args[0])
            workflow = load_workflow(folder)
            digest = BlobStore(home).put(pack(folder))
            version = db.publish_version(workflow.manifest.name, workflow.manifest.version, digest, [])[0]
            print(json.dumps(ended(db, version, int(args[1]))), flush=True)
            maintenance.file_ended_runs(db, home)
        elif action == "maintenance":
            report = maintenance.MaintenanceReport(
                abandoned=maintenance.end_abandoned_runs(db),
                refiled=len(maintenance.refile_lost_runs(db, home).runs),
                filed=maintenance.file_ended_runs(db, home)[0],
                waiting=db.count_unfiled(),
                compaction=maintenance.compact_track_record(db, home),
            )
            print(report.model_dump_json())
        elif action == "file-loop":
            start = int(args[1])
            for k in range(int(args[0])):
                ended(db, db.get_version(NAME, VERSION), 3, start + 3 * k)
                maintenance.file_ended_runs(db, home)
        elif action == "compact-loop":
            for _ in range(int(args[0])):
                compact(home, db=db)
        else:
            raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    main(*sys.argv[1:])
