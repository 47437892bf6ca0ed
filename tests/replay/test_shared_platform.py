"""A bundle exported from a platform whose state database is PostgreSQL and whose blobs and track record
are in an S3 bucket (issue 40, "Done when") replays in a fresh home with no database and no bucket:
every row reproduced or recomputed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from qsolve.cli import main
from tests.replay.building import WORKFLOW, build
from tests.s3server import S3Server, serving
from tests.storage.state.conftest import postgres_schema


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    yield from serving(tmp_path / "moto.log")


def test_a_bundle_from_postgresql_and_a_bucket_replays_where_neither_is(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from tests.qsolve.receipts.roots import trust_root

    with postgres_schema("qsolve_replay") as url:
        trust_root(monkeypatch)
        monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
        monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "platform"))
        monkeypatch.setenv("QSOLVE_DATABASE_URL", url)
        for name, value in s3.environment(s3.new_bucket()).items():
            monkeypatch.setenv(name, value)
        built = build(tmp_path / "platform", tmp_path / "work")
        assert not (tmp_path / "platform" / "trackrecord").is_dir() or not list(
            (tmp_path / "platform" / "trackrecord").glob("*.parquet")
        )  # the track record's files are in the bucket
        bundle = tmp_path / "bundle.zip"
        assert main(["export", WORKFLOW, "--out", str(bundle)]) == 0
    for name in ("QSOLVE_DATABASE_URL", "QSOLVE_STORAGE_URL", "QSOLVE_RECEIPT_ROOT", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "reader"))
    capsys.readouterr()
    code = main(["replay", str(bundle), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert len(report["rows"]) == built.rows
    assert {r["outcome"] for r in report["rows"]} <= {"reproduced", "close", "recomputed"}
    assert any(r["outcome"] == "recomputed" for r in report["rows"])
    assert not (tmp_path / "reader" / "state.db").exists()
