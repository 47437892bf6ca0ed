"""``qsolve history --again`` over a published archive replaced by 1 GiB (issue 34, item 4), as the folder's
writer acts: the stage reads no more than the archive's recorded size, refuses it in one line naming it
(no traceback), runs nothing, and exits 1. Before, it took the process to 3.4 GB before the digest
refused the archive, and the store's error printed a Python traceback before the ``qsolve:`` line."""

from __future__ import annotations

from blake3 import blake3

from qsolve.cli import main

GIB = 1 << 30


def test_an_archive_larger_than_its_recorded_size_is_refused_in_one_line(prefect, home, wf, capsys) -> None:
    from qsolve.validation.checks import check_submission
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.tasks.publication import publish

    wf.manifest["name"] = "bounded-archive"
    wf.save()
    checks = check_submission(wf.root)
    published = publish(checks).published
    digest = published.digest
    assert digest == blake3(checks.snapshot.archive).hexdigest()
    with connect() as db:
        assert db.blob_size(digest) == len(checks.snapshot.archive)  # recorded where it was published
    path = BlobStore(home).path(digest)
    path.unlink()
    with open(path, "wb") as f:  # sparse: nothing written to the disk
        f.truncate(GIB)
    capsys.readouterr()
    assert main(["history", "bounded-archive", "--again"]) == 1
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if line.startswith("qsolve:")]  # Prefect's log lines aside
    assert said == [
        f"qsolve: the history stage failed: bounded-archive {published.version}: its archive: {path}: "
        f"{GIB} bytes, more than the {len(checks.snapshot.archive)} bytes it may have; not read"
    ]
    assert "Traceback" not in out + err  # (Prefect's own log lines go to its handler, not to capsys)
    with connect() as db:
        assert db.count_unfiled() == 0 and db.filed_run_ids() == set()
