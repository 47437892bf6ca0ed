"""``qsolve history --again`` on a second machine (issue 26): home A publishes max-cut, its archive a blob in
the bucket; home B (another folder, the same PostgreSQL database and bucket) runs the history stage from
that archive and files its rows into the bucket, where A reads them. Before issue 26, B failed with a raw
FileNotFoundError for the archive, which existed only in A's ``blobs/``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord.sql import run_sql
from tests.flows.cheap_max_cut import CASES, copy_cheap_max_cut
from tests.s3server import KEY_ID, SECRET, S3Server, serving
from tests.storage.state.conftest import postgres_schema


@pytest.fixture
def s3_server(tmp_path: Path) -> Iterator[S3Server]:
    yield from serving(tmp_path / "moto.log")


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_schema("qsolve_shared") as url:
        yield url


def test_history_again_on_a_second_home_runs_from_the_bucket(
    prefect, database, s3_server, tmp_path, monkeypatch
):
    from prefect.settings import PREFECT_API_URL

    from qsolve.validation.checks import check_submission
    from qsolve_pipeline.tasks.publication import publish

    bucket = s3_server.new_bucket()
    shared = {**s3_server.environment(bucket), "QSOLVE_DATABASE_URL": database}
    folder = copy_cheap_max_cut(tmp_path / "max-cut")  # the subject is the shared storage, not QAOA
    a, b = tmp_path / "a", tmp_path / "b"
    for name, value in {**shared, "QSOLVE_HOME": str(a)}.items():
        monkeypatch.setenv(name, value)
    assert publish(check_submission(folder)).published.created  # A: the archive into the bucket

    env = {**os.environ, **shared, "QSOLVE_HOME": str(b), "PREFECT_API_URL": PREFECT_API_URL.value()}
    b.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "qsolve.cli", "history", "max-cut", "--again"],
        env=env,
        cwd=b,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert KEY_ID not in done.stdout + done.stderr and SECRET not in done.stdout + done.stderr
    with connect(home=a) as db:
        assert db.count_unfiled() == 0 and len(db.filed_run_ids()) == CASES
    current = run_sql("SELECT run_id FROM current WHERE workflow = 'max-cut'", a).column("run_id")
    assert len(current) == CASES  # B's rows, read by A from the bucket
    assert not (b / "blobs").exists() and not (b / "trackrecord").exists()
