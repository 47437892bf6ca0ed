"""Object storage for the storage tests: a moto S3 server a module, a bucket a test (tests/s3server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.s3server import S3Server, serving


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    yield from serving(tmp_path_factory.mktemp("moto") / "moto.log")


@pytest.fixture
def bucket(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket, and this process's environment pointed at it (``QSOLVE_STORAGE_URL`` and the AWS
    settings); returns its ``s3://`` URL."""
    name = s3_server.new_bucket()
    environment = s3_server.environment(name)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    return environment["QSOLVE_STORAGE_URL"]
