"""The storage seam (storage/objects.py) against a real S3 API on loopback and a local folder: creates never
overwrite (S3: If-None-Match: *), errors are one line naming the address and never a credential, and the
blobs go where QSOLVE_STORAGE_URL says (issue 26, item 1)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.objects import LocalFolder, S3Objects, StorageError, parse_s3_url, storage_of
from tests.s3server import KEY_ID, SECRET


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "local":
        return LocalFolder(tmp_path / "store")
    request.getfixturevalue("bucket")
    return storage_of(tmp_path)


def test_a_create_never_overwrites(store):
    assert store.create("blobs/ab/one", b"first")
    assert not store.create("blobs/ab/one", b"second")
    assert store.get("blobs/ab/one") == b"first"
    assert [e.key for e in store.children("blobs/ab")] == ["blobs/ab/one"]
    assert store.get_range("blobs/ab/one", 1, 3) == b"ir"
    store.delete("blobs/ab/one")
    store.delete("blobs/ab/one")  # already gone: no error
    with pytest.raises(FileNotFoundError):
        store.get("blobs/ab/one")


def test_of_many_writers_racing_for_one_key_one_wins_and_its_bytes_stay(store):
    made: dict[int, bool] = {}
    start = threading.Barrier(8)

    def write(i: int) -> None:
        start.wait()
        made[i] = store.create("trackrecord/b-race.parquet", f"writer {i}".encode())

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, ok in made.items() if ok]
    assert len(winners) == 1
    assert store.get("trackrecord/b-race.parquet") == f"writer {winners[0]}".encode()


def test_blobs_live_in_the_bucket_named_by_their_hash(bucket, tmp_path):
    blobs = BlobStore(tmp_path / "home")
    digest = blobs.put(b"a published archive")
    assert blobs.put(b"a published archive") == digest
    assert blobs.where(digest) == f"{bucket}/blobs/{digest[:2]}/{digest}"
    assert blobs.get(digest) == b"a published archive"
    assert not (tmp_path / "home").exists()  # nothing of it in the home
    BlobStore(tmp_path / "other").store.delete(blobs.key(digest))
    blobs.store.create(blobs.key(digest), b"tampered")
    with pytest.raises(ValueError, match="does not match its name"):
        blobs.get(digest)


def test_without_the_setting_blobs_stay_in_the_home(tmp_path, monkeypatch):
    monkeypatch.delenv("QSOLVE_STORAGE_URL", raising=False)
    blobs = BlobStore(tmp_path)
    digest = blobs.put(b"x")
    assert blobs.path(digest).read_bytes() == b"x"
    assert blobs.where(digest) == str(blobs.path(digest))


def test_a_missing_bucket_is_one_line_naming_it_and_no_credential(bucket, s3_server, tmp_path, monkeypatch):
    monkeypatch.setenv("QSOLVE_STORAGE_URL", "s3://qsolve-no-such-bucket/p")
    store = storage_of(tmp_path)
    with pytest.raises(OSError) as caught:
        store.create("blobs/x", b"1")
    said = str(caught.value)
    assert "s3://qsolve-no-such-bucket/p/blobs/x" in said and "\n" not in said
    assert KEY_ID not in said and SECRET not in said


def test_a_refused_credential_is_one_line_without_it(bucket, s3_server, tmp_path, monkeypatch):
    store = S3Objects(bucket)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint + "/nowhere/")  # a server that says 404/400
    with pytest.raises(OSError) as caught:
        store.get("blobs/x")
    said = str(caught.value)
    assert "\n" not in said and KEY_ID not in said and SECRET not in said


@pytest.mark.parametrize(
    "url", ["s3://", "http://bucket/p", f"s3://{KEY_ID}:{SECRET}@bucket/p", "s3://bucket/p?x=1"]
)
def test_a_storage_url_that_is_not_s3_bucket_prefix_is_refused_without_echoing_a_key(url):
    with pytest.raises(StorageError, match="QSOLVE_STORAGE_URL") as caught:
        parse_s3_url(url)
    assert SECRET not in str(caught.value)


def test_the_prefix_is_optional_and_trimmed():
    assert parse_s3_url("s3://bucket") == ("bucket", "")
    assert parse_s3_url("s3://bucket/a/b/") == ("bucket", "a/b")


def test_duckdb_reads_a_large_object_whole_through_the_client(bucket, tmp_path):
    import io

    import duckdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 200_000  # a few MB: past what one read of a buffered file returns
    table = pa.table({"a": np.arange(n), "s": pa.array([f"row-{i:08d}" * 3 for i in range(n)])})
    out = io.BytesIO()
    pq.write_table(table, out, compression="snappy")
    assert len(out.getvalue()) > 2 << 20
    store = storage_of(tmp_path)
    store.create("trackrecord/large.parquet", out.getvalue())
    con = duckdb.connect()
    store.attach(con)
    got = con.sql(f"SELECT count(*), sum(a), max(s) FROM '{store.address('trackrecord/large.parquet')}'")
    assert got.fetchall() == [(n, n * (n - 1) // 2, f"row-{n - 1:08d}" * 3)]
    con.close()


def test_an_endpoint_with_a_user_part_never_shows_it_in_an_error(tmp_path, monkeypatch):
    """Finding (issue 26 tester), fixed: with ``AWS_ENDPOINT_URL=http://KEY:SECRET@host:port`` (how some
    MinIO guides write it) an unreachable store's error, passed on in the StorageError, read "Error
    performing GET http://KEY:SECRET@127.0.0.1:.../...": the secret on the operator's terminal and in every
    log."""
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for variable, value in {
        "AWS_ENDPOINT_URL": f"http://{KEY_ID}:{SECRET}@127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(OSError) as caught:
        S3Objects("s3://qsolve-unreachable/p").get("blobs/x")
    said = str(caught.value)
    assert "s3://qsolve-unreachable/p/blobs/x" in said and "\n" not in said
    assert KEY_ID not in said and SECRET not in said, said


def test_a_foreign_object_squatting_a_blobs_name_is_replaced_when_the_blob_is_put(store, tmp_path):
    """Finding (issue 26 tester), fixed: anyone who could write the bucket (or a damaged copy) could put
    other bytes under a blob's name first; ``put`` then saw the name taken, returned the digest as stored,
    and every later read of that receipt or archive failed "does not match its name": the run's receipt was
    lost for good, since no later put could write it."""
    from blake3 import blake3

    blobs = BlobStore(tmp_path / "home", store=store)
    data = b'{"a receipt": "sealed on host A"}'
    digest = blake3(data).hexdigest()
    assert store.create(blobs.key(digest), b'{"a receipt": "forged"}')  # the squatter comes first
    assert blobs.put(data) == digest
    assert blobs.get(digest) == data


@pytest.fixture
def silent_store(monkeypatch):
    """A loopback server that takes every connection and never answers (a store behind a stuck proxy, a
    half-dead MinIO), and this process's S3 settings pointed at it, the endpoint with a user part."""
    import socket

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    taken: list[socket.socket] = []

    def take() -> None:
        while True:
            try:
                connection, _ = listening.accept()
            except OSError:
                return
            taken.append(connection)

    threading.Thread(target=take, daemon=True).start()
    endpoint = f"http://127.0.0.1:{listening.getsockname()[1]}"
    for variable, value in {
        "AWS_ENDPOINT_URL": endpoint.replace("//", f"//{KEY_ID}:{SECRET}@"),
        "AWS_ACCESS_KEY_ID": KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "QSOLVE_STORAGE_URL": "s3://qsolve-silent/p",
        "QSOLVE_STORAGE_TIMEOUT_S": "1",
    }.items():
        monkeypatch.setenv(variable, value)
    yield endpoint
    listening.close()
    for connection in taken:
        connection.close()


def test_a_store_that_never_answers_is_given_up_on_in_its_time_in_one_line(silent_store):
    """Finding (issue 26 tester), fixed: a store that takes the connection and never answers held every
    request for the client's own bounds (30 s a try, retried for three minutes: a `qsolve page` blocked
    ~180 s). Each request now has ``QSOLVE_STORAGE_TIMEOUT_S`` (30 s) and retries end when that much has
    passed; the error names the object, the server (no user part) and what did not answer."""
    import time

    store = S3Objects("s3://qsolve-silent/p")
    for call, address, request in (
        (lambda: store.get("blobs/x"), "s3://qsolve-silent/p/blobs/x", "GET"),
        (lambda: store.create("blobs/y", b"1"), "s3://qsolve-silent/p/blobs/y", "PUT"),
        (lambda: store.children("trackrecord"), "s3://qsolve-silent/p/trackrecord/", "list"),
    ):
        began = time.monotonic()
        with pytest.raises(StorageError) as caught:
            call()
        took = time.monotonic() - began
        said = str(caught.value)
        assert 0.9 < took < 5, (request, took)  # a second's bound, and its retries within it
        assert said == (
            f"{address} at {silent_store}: no answer to the {request} request within 1 s "
            "(QSOLVE_STORAGE_TIMEOUT_S)"
        ), said


def test_a_command_on_a_store_that_never_answers_ends_in_its_time(silent_store, tmp_path):
    import os
    import subprocess
    import sys
    import time

    env = {**os.environ, "QSOLVE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(Path(__file__).parents[2])}
    env.pop("QSOLVE_DATABASE_URL", None)
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "qsolve.cli", "page", "max-cut"], capture_output=True, text=True, env=env
    )
    took = time.monotonic() - began
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no answer to the" in lines[0] and silent_store in lines[0], done.stderr
    assert KEY_ID not in done.stderr and SECRET not in done.stderr
    assert took < 30, took  # the process's own start, and a second (or two) for the store


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "1e9"])
def test_a_timeout_that_does_not_read_is_one_line_naming_the_variable(silent_store, monkeypatch, value):
    monkeypatch.setenv("QSOLVE_STORAGE_TIMEOUT_S", value)
    with pytest.raises(StorageError) as caught:
        S3Objects("s3://qsolve-silent/p").get("blobs/x")
    said = str(caught.value)
    assert said == f"QSOLVE_STORAGE_TIMEOUT_S={value!r}: a number of seconds from 0.1 to 3600", said


def test_a_bounded_get_stops_at_its_bound_with_one_line_naming_the_object(store):
    from qsolve_pipeline.storage.objects import ObjectTooLarge

    store.create("blobs/ab/ten", b"0123456789")
    assert store.get("blobs/ab/ten", limit=10) == b"0123456789"
    assert store.get("blobs/ab/ten", limit=10**9) == b"0123456789"
    with pytest.raises(ObjectTooLarge) as refused:
        store.get("blobs/ab/ten", limit=9)
    said = str(refused.value)
    assert "\n" not in said and store.address("blobs/ab/ten") in said and "9 bytes" in said
    assert isinstance(refused.value, StorageError)
    import pickle

    assert str(pickle.loads(pickle.dumps(refused.value))) == said  # as a task's error crosses processes
    with pytest.raises(FileNotFoundError):
        store.get("blobs/ab/none", limit=9)
    store.create("blobs/ab/empty", b"")
    assert store.get("blobs/ab/empty", limit=0) == b""


def test_a_blob_read_with_its_size_as_bound_refuses_a_larger_object(store, tmp_path):
    from qsolve_pipeline.storage.objects import ObjectTooLarge

    blobs = BlobStore(tmp_path / "home", store)
    digest = blobs.put(b"a receipt")
    assert blobs.get(digest, limit=9) == blobs.get(digest) == b"a receipt"
    with pytest.raises(ObjectTooLarge):
        blobs.get(digest, limit=8)
