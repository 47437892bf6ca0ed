"""A version is its content: the digest of a folder and its archive."""

from __future__ import annotations

import os

import pytest

from qsolve.workflow.publication import PublicationError, content_digest, digest_of, pack, unpack
from tests.conftest import WorkflowDir


def test_same_content_same_digest_wherever_it_lives(wf: WorkflowDir, tmp_path) -> None:
    first = content_digest(wf.root)
    copy = unpack(pack(wf.root), tmp_path / "elsewhere")
    assert content_digest(copy) == first == digest_of(pack(copy))
    (wf.root / "__pycache__").mkdir()
    (wf.root / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert content_digest(wf.root) == first  # caches are not content


@pytest.mark.parametrize("change", ["edit", "rename", "add"])
def test_any_change_changes_the_digest(wf: WorkflowDir, change: str) -> None:
    before = content_digest(wf.root)
    if change == "edit":
        wf.write("examples/a.json", {"x": 3})
    elif change == "rename":
        wf.path("examples/a.json").rename(wf.path("examples/b.json"))
    else:
        wf.write("examples/c.json", {"x": 2})
    assert content_digest(wf.root) != before


def test_a_link_leaving_the_folder_is_refused(wf: WorkflowDir, tmp_path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", wf.path("examples/leak.txt"))
    with pytest.raises(PublicationError, match="examples/leak.txt: is a symbolic link .* published"):
        content_digest(wf.root)


def test_unpack_refuses_entries_leaving_the_folder(tmp_path) -> None:
    with pytest.raises(PublicationError, match="would leave the folder"):
        unpack(b"../evil\x003\x00abc", tmp_path / "dest")
