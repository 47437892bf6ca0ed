"""Submitting a workflow from the pages (issue 33, item 2): a developer uploads a workflow folder's zip,
the submission flow runs as that account, and the page follows it to the report and the workflow page.
Hostile uploads are refused with one line naming the rule, leaving nothing in the temporary folder, the
submissions or the blobs; a page without a login, a reviewer and a form without its token are refused."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from qsolve.workflow import upload
from tests.conftest import SAMPLING_MODULE, WorkflowDir
from tests.web.conftest import form_token_of


def zipped(folder: Path, *, top: str | None = None) -> bytes:
    """The folder as ``zip -r wf.zip NAME/`` (``top``) or ``cd NAME && zip -r ../wf.zip .`` (None) make it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                name = path.relative_to(folder).as_posix()
                zf.write(path, f"{top}/{name}" if top else name)
    return buffer.getvalue()


def with_entries(*entries: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folders' parent for this test (TMPDIR, as the web process has it)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def developer(client: TestClient, make_account, login) -> TestClient:
    login(client, "dev1", make_account("dev1", "developer", workflows=("tiny",)))
    return client


def post(client: TestClient, data: bytes, *, token: str | None = "page", name: str = "wf.zip"):
    form = {"_token": form_token_of(client) if token == "page" else token} if token is not None else {}
    return client.post("/submit", data=form, files={"file": (name, data, "application/zip")})


def ours(scratch: Path) -> list[Path]:
    """The temporary folders of uploads in ``scratch`` (the pages' own, of the track record, aside)."""
    return [p for p in scratch.iterdir() if p.name.startswith(upload.TEMPORARY_PREFIX)]


def nothing_left(home: Path, scratch: Path) -> None:
    assert ours(scratch) == []
    assert not (home / "submissions").exists()
    assert not (home / "blobs").exists() or not any((home / "blobs").rglob("*"))


# --- hostile uploads -------------------------------------------------------------------------------


def test_a_file_that_is_not_a_zip_is_refused(developer: TestClient, home: Path, scratch: Path) -> None:
    answer = post(developer, b"#!/bin/sh\nrm -rf /\n")
    assert answer.status_code == 422
    assert "workflow zip refused: not a zip file" in answer.text
    nothing_left(home, scratch)


def test_a_link_entry_is_refused(developer: TestClient, home: Path, scratch: Path, wf: WorkflowDir) -> None:
    link = zipfile.ZipInfo("tiny/examples/secret.json")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    data = with_entries(
        *[
            (f"tiny/{p.relative_to(wf.root).as_posix()}", p.read_bytes())
            for p in wf.root.rglob("*")
            if p.is_file()
        ],
        (link, b"/etc/passwd"),
    )
    answer = post(developer, data)
    assert answer.status_code == 422
    assert "entry &#39;tiny/examples/secret.json&#39;: a symbolic link" in answer.text
    assert "a workflow zip holds no links" in answer.text
    nothing_left(home, scratch)


def test_a_path_outside_the_folder_is_refused(developer: TestClient, home: Path, scratch: Path) -> None:
    answer = post(developer, with_entries(("manifest.yaml", b"name: x\n"), ("../../outside.py", b"boom")))
    assert answer.status_code == 422
    assert "&#39;..&#39; in its path, a path outside the workflow folder" in answer.text
    assert not (scratch.parent / "outside.py").exists()
    nothing_left(home, scratch)


def test_a_body_past_16_mib_is_refused_while_it_is_read(
    developer: TestClient, home: Path, scratch: Path
) -> None:
    token = form_token_of(developer)
    for size, status, said in (
        (upload.MAX_ZIP_BYTES + 70 * 1024, 413, "larger than this server reads (16 MiB)"),  # the body's bound
        (upload.MAX_ZIP_BYTES + 1, 422, "a workflow zip is at most 16,777,216 bytes (16 MiB)"),
    ):
        big = b"PK" + os.urandom(size - 2)
        answer = developer.post(
            "/submit", data={"_token": token}, files={"file": ("wf.zip", big, "application/zip")}
        )
        assert answer.status_code == status and said in answer.text, answer.text[:2000]
    nothing_left(home, scratch)


def test_a_zip_that_extracts_past_its_bound_is_refused_midway(
    developer: TestClient, home: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upload, "MAX_EXTRACTED_BYTES", 100_000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.yaml", b"name: bomb\n")
        zf.writestr("data.bin", b"\0" * 1_000_000)  # a kilobyte zipped
    answer = post(developer, buffer.getvalue())
    assert answer.status_code == 422
    assert "extracts to more than 100,000 bytes" in answer.text and "MAX_EXTRACTED_BYTES" in answer.text
    nothing_left(home, scratch)


def test_too_many_files_are_refused(developer: TestClient, home: Path, scratch: Path) -> None:
    many = [(f"cases/{i}.json", b"{}") for i in range(upload.MAX_ENTRIES)]
    answer = post(developer, with_entries(("manifest.yaml", b"name: x\n"), *many))
    assert answer.status_code == 422
    assert f"the zip has {upload.MAX_ENTRIES + 1} entries; a workflow zip holds at most" in answer.text
    nothing_left(home, scratch)


def test_a_folder_without_a_manifest_is_refused(
    developer: TestClient, home: Path, scratch: Path, wf: WorkflowDir
) -> None:
    wf.path("manifest.yaml").unlink()
    answer = post(developer, zipped(wf.root, top="tiny"))
    assert answer.status_code == 422
    assert "no tiny/manifest.yaml: the zip&#39;s one folder is not a workflow folder" in answer.text
    answer = post(developer, zipped(wf.root))
    assert answer.status_code == 422
    assert "a file at the zip&#39;s root but no manifest.yaml there" in answer.text
    nothing_left(home, scratch)


def test_both_layouts_of_a_zip_unpack_into_a_private_folder(scratch: Path, wf: WorkflowDir) -> None:
    for data, name in ((zipped(wf.root, top="tiny"), "tiny"), (zipped(wf.root), upload.DEFAULT_NAME)):
        with upload.unpacked(data) as folder:
            assert (
                folder.name == name
                and (folder / "manifest.yaml").read_bytes() == wf.path("manifest.yaml").read_bytes()
            )
            assert (folder / "examples/a.json").is_file()
            assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700 and folder.parent.parent == scratch
        assert ours(scratch) == []


# --- who may submit --------------------------------------------------------------------------------


def test_nobody_logged_in_and_a_reviewer_are_refused(
    client: TestClient, make_account, login, home: Path, scratch: Path, wf: WorkflowDir
) -> None:
    data = zipped(wf.root, top="tiny")
    assert client.get("/submit").status_code == 401
    answer = client.post("/submit", data={"_token": "x"}, files={"file": ("wf.zip", data, "application/zip")})
    assert answer.status_code == 401 and "/login?next=/submit" in answer.text
    login(client, "rev", make_account("rev", "reviewer"))
    assert client.get("/submit").status_code == 403
    assert "Submit a workflow" not in client.get("/workflows").text
    answer = post(client, data)
    assert answer.status_code == 403 and "only a developer (or an admin) submits workflows" in answer.text
    nothing_left(home, scratch)


def test_a_form_without_its_token_is_refused(
    developer: TestClient, home: Path, scratch: Path, wf: WorkflowDir
) -> None:
    assert 'href="/submit"' in developer.get("/workflows").text
    data = zipped(wf.root, top="tiny")
    for token in (None, "not-this-sessions"):
        answer = post(developer, data, token=token)
        assert answer.status_code == 403 and "the form&#39;s token is missing" in answer.text
    answer = developer.post(
        "/submit",
        data={"_token": form_token_of(developer)},
        files={"file": ("wf.zip", data, "application/zip")},
        headers={"Origin": "https://evil.example"},
    )
    assert answer.status_code == 403
    nothing_left(home, scratch)


def test_a_submission_page_is_its_accounts(client: TestClient, make_account, login, home: Path) -> None:
    from qsolve_pipeline.storage.submissions import Submissions

    record = Submissions(home).new("dev1", "wf.zip")
    login(client, "dev2", make_account("dev2", "developer", workflows=("other",)))
    answer = client.get(f"/submissions/{record.id}")
    assert answer.status_code == 403 and "is not account dev2&#39;s" in answer.text
    assert client.get("/submissions/" + "0" * 32).status_code == 404
    assert client.get("/submissions/..%2F..%2Fetc").status_code == 404


def test_a_publication_refusal_and_a_crash_show_as_rejections(developer: TestClient, home: Path) -> None:
    """The page shows what the flow recorded: a refusal at the publication stage (the rule of who may
    publish a name, in its one line) as any rejection, with the stages before it passed."""
    from qsolve.validation.gates import GateResult
    from qsolve.validation.submission import SubmissionReport
    from qsolve_pipeline.storage.submissions import Submissions

    submissions = Submissions(home)
    refused = submissions.new("dev1", "hwflow.zip")
    line = "hwflow: only its developers (dev0) publish a version of it; dev1 is not one"
    report = SubmissionReport(folder="/tmp/x", workflow="hwflow", version="0.0.1")
    report.gates = [GateResult(name=f"gate{i}", passed=True, message="ok") for i in range(8)]
    submissions.finish(refused.id, report=report.fail("publication", [line]))
    page = developer.get(f"/submissions/{refused.id}")
    assert page.status_code == 200 and 'data-accepted="no"' in page.text
    assert 'data-stage="publication"' in page.text and "Rejected at the publication stage" in page.text
    assert "only its developers (dev0) publish a version of it; dev1 is not one" in page.text
    assert 'id="workflow-link"' not in page.text and 'http-equiv="refresh"' not in page.text

    crashed = submissions.new("dev1", "wf.zip")
    submissions.started(crashed.id, os.getpid())
    assert (
        'http-equiv="refresh"' in developer.get(f"/submissions/{crashed.id}").text
    )  # running: this pid lives
    submissions.finish(crashed.id, crashed="the submission process ended (exit code -9) with no report")
    assert not submissions.finish(crashed.id, crashed="a second outcome")  # written once
    page = developer.get(f"/submissions/{crashed.id}")
    assert 'data-status="crashed"' in page.text and "exit code -9" in page.text

    lost = submissions.new("dev1", "wf.zip")
    gone = subprocess.Popen(["true"])
    gone.wait()
    submissions.started(lost.id, gone.pid)  # its process ended, no outcome written (killed, say)
    page = developer.get(f"/submissions/{lost.id}")
    assert 'data-status="lost"' in page.text and "Ended without a report" in page.text


# --- the honest path (runs the real flow, in a process of its own) ---------------------------------


def test_a_developer_submits_and_the_page_reaches_the_report(
    prefect,  # noqa: F811 - the harness's fixture, imported above
    developer: TestClient,
    home: Path,
    scratch: Path,
    wf: WorkflowDir,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect.settings import PREFECT_API_URL

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())  # the harness's server, for the child
    wf.write("workflow.py", SAMPLING_MODULE)  # passes the eight gates, with a noise-model case
    wf.cases["cases"] = [
        {"name": "one", "input": {"x": 1}, "target": "fake:fez@1.6", "expect": {"min_fidelity": 0.5}},
        {"name": "two", "input": {"x": 2}},
    ]
    wf.save()
    form = developer.get("/submit")
    assert form.status_code == 200 and 'name="_token"' in form.text
    answer = post(developer, zipped(wf.root))  # the folder's files at the zip's root
    assert answer.status_code == 303, answer.text
    page_url = answer.headers["location"]
    assert page_url.startswith("/submissions/")
    assert ours(scratch)  # the workflow folder, while it is submitted
    deadline = time.monotonic() + 600
    while True:
        page = developer.get(page_url)
        assert page.status_code == 200
        if 'data-status="starting"' not in page.text and 'data-status="running"' not in page.text:
            break
        assert 'http-equiv="refresh"' in page.text
        assert time.monotonic() < deadline, "the submission did not end in 10 minutes"
        time.sleep(1)
    assert 'data-accepted="yes"' in page.text, page.text
    assert "Accepted" in page.text and "tiny 1.0.0" in page.text
    assert page.text.count('<tr data-gate="') == 8
    assert '<tr data-case="one">' in page.text and '<tr data-case="two">' in page.text
    assert 'href="/workflows/tiny" id="workflow-link"' in page.text
    assert 'http-equiv="refresh"' not in page.text
    assert developer.get("/workflows/tiny").status_code == 200
    for _ in range(100):  # the child removes the folder before it records the report; its waiter ends
        if not ours(scratch):
            break
        time.sleep(0.1)
    assert ours(scratch) == []
