"""Issue 33, item 2, attacked by an independent tester as a hostile web user: zips that are not one
workflow folder (nested or doubled top folders, a manifest in a subfolder, names that meet on a
case-blind or Unicode-normalising file system, absolute, drive and backslash paths, a FIFO, a bomb,
setuid bits), read by the upload's safe reader; and the submission page of another account, read by a
reviewer and a second developer, and a hostile file name shown on it. What the attacker gets: nothing
unpacked (nothing left in the temporary folder), and no page."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from qsolve.workflow import upload
from tests.web.test_submit import ours, scratch  # noqa: F401 - the fixture

MANIFEST = b"name: tiny\nversion: 1.0.0\n"


def zipped(*entries: tuple[str | zipfile.ZipInfo, bytes], method: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def with_mode(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    return info


HOSTILE = {
    "a manifest two folders down": (
        zipped(("a/b/manifest.yaml", MANIFEST), ("a/b/workflow.py", b"")),
        "no a/manifest.yaml",
    ),
    "a manifest only in a subfolder": (
        zipped(("sub/manifest.yaml", MANIFEST), ("workflow.py", b"")),
        "no manifest.yaml there",
    ),
    "two top folders": (
        zipped(("a/manifest.yaml", MANIFEST), ("b/manifest.yaml", MANIFEST)),
        "a second top folder 'b' beside 'a'",
    ),
    "an absolute path": (zipped(("manifest.yaml", MANIFEST), ("/etc/cron.d/x", b"x")), "an absolute path"),
    "a backslash climbing out": (zipped(("manifest.yaml", MANIFEST), ("..\\..\\x", b"x")), "a backslash"),
    "a drive letter": (zipped(("manifest.yaml", MANIFEST), ("C:/x", b"x")), "a drive letter"),
    "'..' in the middle": (zipped(("manifest.yaml", MANIFEST), ("x/../../y", b"x")), "'..' in its path"),
    "a top folder named '..'": (
        zipped(
            ("../manifest.yaml", MANIFEST),
        ),
        "'..' in its path",
    ),
    "a hidden top folder": (
        zipped(
            (".git/manifest.yaml", MANIFEST),
        ),
        "is not a folder's name",
    ),
    "names equal but for case": (
        zipped(("manifest.yaml", MANIFEST), ("Workflow.py", b"1"), ("workflow.py", b"2")),
        "a second entry of the same name as 'Workflow.py' (case ignored)",
    ),
    "names equal but for Unicode form": (
        zipped(("manifest.yaml", MANIFEST), ("caf\u00e9.py", b"1"), ("cafe\u0301.py", b"2")),
        "a second entry of the same name",
    ),
    "a FIFO": (
        zipped(("manifest.yaml", MANIFEST), (with_mode("pipe", stat.S_IFIFO | 0o644), b"")),
        "a FIFO, not a file",
    ),
    "a link": (
        zipped(("manifest.yaml", MANIFEST), (with_mode("passwd", stat.S_IFLNK | 0o777), b"/etc/passwd")),
        "link",
    ),
    "a zip bomb": (
        zipped(("manifest.yaml", MANIFEST), ("big", b"\0" * (65 * 1024 * 1024)), method=zipfile.ZIP_DEFLATED),
        "MAX_EXTRACTED_BYTES",
    ),
    "a zip inside a zip": (
        zipped(
            (
                "inner.zip",
                zipped(
                    ("manifest.yaml", MANIFEST),
                ),
            ),
        ),
        "no manifest.yaml",
    ),
    "no zip at all": (b"PK\x03\x04not really", "not a zip file"),
}


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_a_hostile_zip_unpacks_nothing_and_names_the_rule(what: str, scratch: Path) -> None:  # noqa: F811
    data, rule = HOSTILE[what]
    with pytest.raises(upload.UploadRefused, match="workflow zip refused") as refused:
        upload.unpack(data)
    assert rule in str(refused.value) and "\n" not in str(refused.value)
    assert ours(scratch) == []


def test_a_setuid_or_executable_entry_is_written_as_a_plain_private_file(scratch: Path) -> None:  # noqa: F811
    data = zipped(("manifest.yaml", MANIFEST), (with_mode("run.sh", stat.S_IFREG | 0o6777), b"#!/bin/sh\n"))
    staged = upload.unpack(data)
    try:
        mode = (staged.folder / "run.sh").stat().st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWOTH | stat.S_IWGRP)
        assert stat.S_IMODE(staged.temporary.stat().st_mode) == 0o700
    finally:
        upload.remove(staged.temporary)
    assert ours(scratch) == []


def test_another_accounts_submission_page_is_refused_to_a_reviewer_and_a_developer_shown_to_an_admin(
    client: TestClient, make_account, login, home: Path
) -> None:
    from qsolve_pipeline.storage.submissions import Submissions

    record = Submissions(home).new("dev1", "<script>alert(1)</script>.zip")
    login(client, "rev", make_account("rev", "reviewer"))
    assert client.get(f"/submissions/{record.id}").status_code == 403
    client.cookies.clear()
    login(client, "dev2", make_account("dev2", "developer", workflows=("tiny",)))
    answer = client.get(f"/submissions/{record.id}")
    assert answer.status_code == 403 and "<script>" not in answer.text
    assert client.get(f"/submissions/{record.id.upper()}").status_code in (403, 404)
    client.cookies.clear()
    login(client, "ann", make_account("ann", "admin"))
    answer = client.get(f"/submissions/{record.id}")
    assert answer.status_code == 200
    assert "<script>alert(1)</script>" not in answer.text  # the hostile file name is shown escaped


def test_the_ledgers_system_account_gets_no_login_to_submit_with(home: Path) -> None:
    from qsolve_pipeline.storage.state import PlatformAccount, connect

    with connect(home=home) as db:
        with pytest.raises(PlatformAccount):
            db.add_login("system", ["developer"], ["tiny"])
        with pytest.raises(PlatformAccount):
            db.add_login("system", ["admin"])
