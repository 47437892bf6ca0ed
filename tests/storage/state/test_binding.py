"""No silent split (issue 26, item 4): the state database records the storage it was first used with, and a
home whose storage disagrees (another folder, another bucket or prefix) refuses to start, in one line
naming both. The same folder by another path is the same; a SQLite database inside its home moves with it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from qsolve_pipeline.storage.objects import StorageError
from qsolve_pipeline.storage.state import StorageMismatch, connect
from tests.s3server import KEY_ID, SECRET


@pytest.fixture
def home_database(database_url, monkeypatch) -> str:
    """The database as every home names it: ``QSOLVE_DATABASE_URL`` (a url given to ``connect`` is not
    checked: its caller names the database on purpose)."""
    monkeypatch.setenv("QSOLVE_DATABASE_URL", database_url)
    return database_url


def test_another_folder_refuses_to_start_naming_both(home_database, tmp_path, monkeypatch):
    database_url = None
    monkeypatch.delenv("QSOLVE_STORAGE_URL", raising=False)
    (tmp_path / "a").mkdir()
    connect(database_url, home=tmp_path / "a").close()
    connect(database_url, home=tmp_path / "a").close()  # the same home again: fine
    (tmp_path / "link").symlink_to(tmp_path / "a")
    connect(database_url, home=tmp_path / "link").close()  # the same folder by another path
    with pytest.raises(StorageMismatch) as caught:
        connect(database_url, home=tmp_path / "b")
    said = str(caught.value)
    assert (tmp_path / "a").as_uri() in said and (tmp_path / "b").as_uri() in said and "\n" not in said


def test_a_database_named_by_its_caller_is_not_checked(database_url, tmp_path, monkeypatch):
    monkeypatch.delenv("QSOLVE_STORAGE_URL", raising=False)
    monkeypatch.setenv("QSOLVE_DATABASE_URL", database_url)
    connect(home=tmp_path / "a").close()
    connect(database_url, home=tmp_path / "b").close()  # a tool's or a test's own connection
    with pytest.raises(StorageMismatch):
        connect(home=tmp_path / "b")


def test_a_sqlite_home_moved_elsewhere_still_starts(tmp_path, monkeypatch):
    monkeypatch.delenv("QSOLVE_STORAGE_URL", raising=False)
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    connect(home=tmp_path / "a").close()
    shutil.move(tmp_path / "a", tmp_path / "moved")
    connect(home=tmp_path / "moved").close()


def test_another_bucket_or_prefix_refuses_to_start(home_database, bucket, s3_server, tmp_path, monkeypatch):
    database_url = None
    connect(database_url, home=tmp_path / "a").close()
    connect(database_url, home=tmp_path / "b").close()  # another machine's home, the same bucket: fine
    other = s3_server.new_bucket()
    for url in (f"s3://{other}/qsolve", bucket + "/elsewhere"):
        monkeypatch.setenv("QSOLVE_STORAGE_URL", url)
        with pytest.raises(StorageMismatch, match="first used with") as caught:
            connect(database_url, home=tmp_path / "c")
        assert url in str(caught.value) and bucket in str(caught.value)
    monkeypatch.delenv("QSOLVE_STORAGE_URL")
    with pytest.raises(StorageMismatch):  # the local folder, with the database bound to the bucket
        connect(database_url, home=tmp_path / "a")


def test_the_command_line_says_it_in_one_line_with_no_credential(home_database, bucket, s3_server, tmp_path):
    database_url = home_database
    connect(home=tmp_path / "a").close()
    env = {**s3_env(s3_server, f"s3://{s3_server.new_bucket()}/x"), "QSOLVE_DATABASE_URL": database_url}
    env["QSOLVE_HOME"] = str(tmp_path / "c")
    done = subprocess.run(
        [sys.executable, "-m", "qsolve.cli", "page", "max-cut"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "first used with" in lines[0] and bucket in lines[0], done.stderr
    assert KEY_ID not in done.stderr + done.stdout and SECRET not in done.stderr + done.stdout


def s3_env(server, url: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "QSOLVE_"))}
    bucket, prefix = url.removeprefix("s3://").split("/", 1)
    return {**env, **server.environment(bucket, prefix), "PYTHONPATH": str(Path(__file__).parents[3])}


def test_the_same_bucket_name_on_another_s3_server_refuses_to_start(
    home_database, bucket, s3_server, tmp_path, monkeypatch
):
    """Finding (issue 26 tester), fixed: the binding records ``s3://BUCKET/PREFIX`` without the server
    behind it (the endpoint is each machine's own way there), so a home whose ``AWS_ENDPOINT_URL`` named
    another S3 server with a bucket of that name started on the same database, its blobs and track record
    landing elsewhere. The first binding writes a marker object whose token the database keeps; a store
    without it, or with another's, refuses to start in one line naming both."""
    from tests.s3server import start, stop

    connect(home=tmp_path / "a").close()  # bound to the bucket on the first server, its marker written
    name, prefix = bucket.removeprefix("s3://").split("/", 1)
    marker = f"{prefix}/qsolve-binding"
    token = s3_server.client().get_object(Bucket=name, Key=marker)["Body"].read().decode().strip()
    with sa.create_engine(home_database).connect() as connection:
        assert connection.execute(sa.text("SELECT token FROM storage_binding")).scalar_one() == token
    other = start(tmp_path / "other-moto.log")
    try:
        other.client().create_bucket(Bucket=name)  # the same name, another store
        monkeypatch.setenv("AWS_ENDPOINT_URL", other.endpoint)
        with pytest.raises(StorageMismatch) as caught:
            connect(home=tmp_path / "b")
        said = str(caught.value)
        assert "has no binding marker" in said and other.endpoint in said and token[:12] in said, said
        assert bucket in said and "\n" not in said and KEY_ID not in said and SECRET not in said
        assert other.client().list_objects_v2(Bucket=name)["KeyCount"] == 0  # nothing written there
        # a store another database was bound to: its marker's token is named beside the database's
        other.client().put_object(Bucket=name, Key=marker, Body=b"0123456789abcdef0123456789abcdef\n")
        with pytest.raises(
            StorageMismatch, match=f"holds binding marker 0123456789ab.*holding marker {token[:12]}"
        ):
            connect(home=tmp_path / "b")
        monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
        connect(home=tmp_path / "b").close()  # the database's own server: starts
    finally:
        stop(other.process)


def test_a_binding_made_before_the_marker_gets_one_at_the_next_start(
    home_database, bucket, s3_server, tmp_path, monkeypatch
):
    """A database bound before migration 0010 has no token: the next start writes the marker and records
    its token, and from then on a store without it is refused."""
    import qsolve_pipeline.storage.state._binding as binding

    connect(home=tmp_path / "a").close()
    name, prefix = bucket.removeprefix("s3://").split("/", 1)
    _unmarked(home_database, s3_server, name, prefix)
    monkeypatch.setattr(binding, "_checked", set())  # a new process
    connect(home=tmp_path / "b").close()
    token = s3_server.client().get_object(Bucket=name, Key=f"{prefix}/qsolve-binding")["Body"].read()
    with sa.create_engine(home_database).connect() as connection:
        assert (
            connection.execute(sa.text("SELECT token FROM storage_binding")).scalar_one()
            == token.decode().strip()
        )
    s3_server.client().delete_object(Bucket=name, Key=f"{prefix}/qsolve-binding")
    monkeypatch.setattr(binding, "_checked", set())
    with pytest.raises(StorageMismatch, match="has no binding marker"):
        connect(home=tmp_path / "b")


def test_two_stores_racing_to_mark_an_old_binding_one_wins_and_the_other_is_refused(
    home_database, bucket, s3_server, tmp_path, monkeypatch
):
    """Machines on two S3 servers (one bucket name) start at once on a binding with no token yet: each
    writes its own store's marker, the database's conditional update takes one token, and every home on
    the other server is refused; none of the same server is."""
    import threading

    import qsolve_pipeline.storage.state._binding as binding
    from qsolve_pipeline.storage.objects import S3Objects
    from tests.s3server import start, stop

    connect(home=tmp_path / "a").close()
    name, prefix = bucket.removeprefix("s3://").split("/", 1)
    _unmarked(home_database, s3_server, name, prefix)
    monkeypatch.setattr(binding, "_checked", set())
    other = start(tmp_path / "other-moto.log")
    try:
        other.client().create_bucket(Bucket=name)
        stores = []
        for server in (s3_server, other, s3_server, other):
            monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
            store = S3Objects(bucket)
            assert store.store is not None  # its client made now, on this server
            stores.append(store)
        databases = [connect(home_database, home=tmp_path / f"h{i}") for i in range(len(stores))]
        ready = threading.Barrier(len(stores))
        outcome: list[str | None] = [None] * len(stores)

        def start_home(i: int) -> None:
            ready.wait()
            try:
                databases[i].bind_storage(bucket, stores[i])
                outcome[i] = "started"
            except StorageMismatch:
                outcome[i] = "refused"

        threads = [threading.Thread(target=start_home, args=(i,)) for i in range(len(stores))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for db in databases:
            db.close()
        assert sorted(outcome) == ["refused", "refused", "started", "started"], outcome
        assert outcome[0] == outcome[2] and outcome[1] == outcome[3]  # by server, never split within one
        winner = s3_server if outcome[0] == "started" else other
        marked = winner.client().get_object(Bucket=name, Key=f"{prefix}/qsolve-binding")["Body"].read()
        with sa.create_engine(home_database).connect() as connection:
            assert (
                connection.execute(sa.text("SELECT token FROM storage_binding")).scalar_one()
                == marked.decode().strip()
            )
    finally:
        stop(other.process)


def _unmarked(database_url: str, server, name: str, prefix: str) -> None:
    """The binding as a database migrated before 0010 holds it: no token, no marker in the store."""
    engine = sa.create_engine(database_url)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE storage_binding SET token = NULL"))
    engine.dispose()
    server.client().delete_object(Bucket=name, Key=f"{prefix}/qsolve-binding")


@pytest.mark.parametrize("drift", [timedelta(minutes=10), timedelta(minutes=-10)])
def test_a_host_whose_clock_is_off_neither_takes_a_live_claim_nor_loses_its_own(
    database_url, tmp_path, monkeypatch, host_clock, drift
):
    """Finding (issue 26 tester), fixed: a claim's expiry was written and judged by each machine's own
    clock, so a host whose clock ran ten minutes ahead found another's 5-minute compaction claim lapsed and
    took it (two machines compacting at once), and one running behind wrote a claim that had lapsed already.
    The database's clock writes and judges it (``_rows.clock``)."""
    monkeypatch.delenv("QSOLVE_STORAGE_URL", raising=False)
    with connect(database_url, home=tmp_path / "a") as a, connect(database_url, home=tmp_path / "b") as b:
        assert a.claim("trackrecord-compaction", "host-a:1:x", 300)
        host_clock(drift)  # host B's clock, ten minutes off (this process plays both)
        assert not b.claim("trackrecord-compaction", "host-b:1:y", 300)
        assert b.claim("trackrecord-compaction", "host-a:1:x", 300)  # renewed by its holder, wherever
        a.release_claim("trackrecord-compaction", "host-a:1:x")
        assert b.claim("trackrecord-compaction", "host-b:1:y", 60)
        host_clock(timedelta(0))
        assert not a.claim("trackrecord-compaction", "host-a:1:x", 300)  # B's second has not lapsed


@pytest.mark.parametrize("url", ["{bucket}/a/../qsolve", "{bucket}/./qsolve", "{bucket}/a//qsolve"])
def test_a_prefix_the_client_cannot_use_is_refused_before_the_database_is_bound_to_it(
    home_database, bucket, tmp_path, monkeypatch, url
):
    """Finding (issue 26 tester), fixed: ``QSOLVE_STORAGE_URL=s3://bucket/a/../qsolve`` was bound into the
    state database at the first start (the client refuses the prefix only at its first request), so the
    operator who then corrected the URL to ``s3://bucket/qsolve`` found every home refused for good, "first
    used with s3://bucket/a/../qsolve"."""
    bucket = bucket.removesuffix("/qsolve")
    monkeypatch.setenv("QSOLVE_STORAGE_URL", url.format(bucket=bucket))
    with pytest.raises(StorageError, match="segment") as caught:
        connect(home=tmp_path / "a")
    assert "\n" not in str(caught.value)
    monkeypatch.setenv("QSOLVE_STORAGE_URL", f"{bucket}/qsolve")
    connect(home=tmp_path / "a").close()  # the corrected URL starts (and binds)
