"""Two machines as one platform (issue 26): two homes, nothing shared on disk, each in processes of its own,
one PostgreSQL database, one bucket of a real S3 API on loopback.

Separate processes, not separate network namespaces: inside ``unshare -n`` neither PostgreSQL on
127.0.0.1 nor the S3 server is reachable without a forwarder of our own into the namespace, which would
test the forwarder; what is shared here is only what the processes reach through the database and the
bucket (each home is a folder of its own, and nothing in either is read by the other).

A publishes and is killed mid-round (its rows written, its runs not yet marked filed); B's page, query and
maintenance see and file the same rows, none doubled or lost; A files while B compacts; a third home
pointed at another bucket refuses to start; no output shows a credential."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qsolve_pipeline.storage.state import connect
from tests.conftest import WorkflowDir
from tests.s3server import KEY_ID, SECRET, S3Server

REPO = Path(__file__).resolve().parents[3]
NOTE = "measured on two machines"


class Machine:
    """A home of its own; the database and the bucket in its environment."""

    def __init__(self, root: Path, database_url: str, server: S3Server, bucket: str) -> None:
        root.mkdir(parents=True)
        self.home = root / "home"
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "QSOLVE_", "PREFECT_"))}
        self.env = {
            **keep,
            **server.environment(bucket),
            "QSOLVE_HOME": str(self.home),
            "QSOLVE_DATABASE_URL": database_url,
            "PREFECT_HOME": str(root / "prefect"),
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PYTHONPATH": str(REPO),
        }
        self.said: list[str] = []

    def start(self, *argv: str, **env: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, *argv],
            cwd=REPO,
            env={**self.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, *argv: str, code: int | None = 0, **env: str) -> str:
        process = self.start(*argv, **env)
        out, err = process.communicate(timeout=600)
        self.said += [out, err]
        if code is not None:
            assert process.returncode == code, err[-3000:]
        return out

    def act(self, *args: str, code: int | None = 0, **env: str) -> str:
        return self.run("-m", "tests.storage.state.shared_home", *args, code=code, **env)

    def qsolve(self, *args: str, code: int | None = 0) -> str:
        return self.run("-m", "qsolve.cli", *args, code=code)


def query(machine: Machine, sql: str) -> list[dict]:
    return json.loads(machine.qsolve("query", sql, "--format", "json"))


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_homes_on_one_database_and_one_bucket_behave_as_one_platform(
    database_url, s3_server, tmp_path, monkeypatch
):
    bucket = s3_server.new_bucket()
    for variable, value in s3_server.environment(bucket).items():  # this process reads as they do
        monkeypatch.setenv(variable, value)
    a = Machine(tmp_path / "a", database_url, s3_server, bucket)
    b = Machine(tmp_path / "b", database_url, s3_server, bucket)
    wf = WorkflowDir(tmp_path / "tiny")
    wf.manifest["metric"]["note"] = NOTE
    wf.save()

    # A publishes, ends 6 runs and is killed between writing their rows and marking them filed.
    first = json.loads(a.act("publish", str(wf.root), "6", code=-9, QSOLVE_FAILPOINT="runs.filed"))
    with connect(database_url, home=b.home) as db:
        assert db.count_unfiled() == 6

    # B's page reads A's rows and A's published archive (the manifest's note) from the bucket.
    page = json.loads(b.qsolve("page", "tiny", "--json"))
    assert {r["run_id"] for r in page["track_record"]} == set(first)
    assert page["metric_note"] == NOTE

    # B's maintenance pass takes the round over: the same rows, filed once (the same object).
    report = json.loads(b.act("maintenance"))
    assert sorted(report["filed"]) == sorted(first) and report["waiting"] == 0
    assert report["compaction"].startswith("merged 1 file")

    # A files round after round while B compacts, at once; then B rebuilds it all from the database.
    filing = a.start("-m", "tests.storage.state.shared_home", "file-loop", "5", "6")
    compacting = b.start("-m", "tests.storage.state.shared_home", "compact-loop", "5")
    for p in (filing, compacting):
        out, err = p.communicate(timeout=600)
        a.said += [out, err]
        assert p.returncode == 0, err[-3000:]
    with connect(database_url, home=a.home) as db:
        assert db.count_unfiled() == 0
        wanted = db.filed_run_ids()
    assert len(wanted) == 21
    seen = (
        "SELECT (SELECT list(run_id ORDER BY run_id) FROM rows) AS rows, (SELECT count(*) FROM current) AS"
        " current, (SELECT count(*) FROM filed_rows) AS filed, (SELECT count(*) FROM history) AS history"
    )
    counted = {"rows": sorted(wanted), "current": 21, "filed": 21, "history": 0}  # 21 cases, a row each
    assert query(a, seen) == [counted]  # nothing doubled, nothing lost
    b.qsolve("maintenance", "--rebuild")
    assert query(b, seen) == [counted]

    # A third home pointed at another bucket refuses to start, in one line naming both.
    c = Machine(tmp_path / "c", database_url, s3_server, s3_server.new_bucket())
    c.qsolve("page", "tiny", code=2)
    refused = c.said[-1].strip().splitlines()
    assert len(refused) == 1 and "first used with" in refused[0] and bucket in refused[0]

    for text in a.said + b.said + c.said:
        assert KEY_ID not in text and SECRET not in text
    assert not (a.home / "blobs").exists() and not (b.home / "trackrecord").exists()
