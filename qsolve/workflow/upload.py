"""A workflow folder uploaded as a zip (issue 33, item 2): read by :mod:`qsolve.safezip`, the reader of
knowledge drafts, into a fresh private temporary folder that the submission flow then reads.

    with unpacked(data) as folder:          # UploadRefused: one line naming the rule and the entry
        submit(folder)                      # <private temporary folder>/<the zip's folder's name>/
    # the temporary folder is removed here, whatever happened

    staged = unpack(data)                   # or kept past this call: staged.folder, staged.temporary
    remove(staged.temporary)                # by whoever runs the submission, when it ends

The zip holds one workflow folder: its files at the zip's root (``cd max-cut && zip -r ../wf.zip .``) or
one top folder holding them (``zip -r wf.zip max-cut/``), with ``manifest.yaml`` at the folder's top. Any
file type is taken (the submission's lint and checks judge them); the safe reader's rules hold: no link,
no device, nothing outside the folder, at most :data:`MAX_ZIP_BYTES` zipped, :data:`MAX_EXTRACTED_BYTES`
extracted (counted as the bytes come out) and :data:`MAX_ENTRIES` entries. The temporary folder is made
by :func:`tempfile.mkdtemp` (mode 0700, under ``TMPDIR``); a refused zip leaves nothing of it behind.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from qsolve.safezip import Reading, ZipRefused, ZipRules

#: an uploaded workflow's zip is at most this many bytes (16 MiB); the web pages refuse a longer request
#: body while reading it
MAX_ZIP_BYTES = 16 * 1024 * 1024
#: and extracts to at most this many bytes (64 MiB, the most one file of a workflow folder may hold)
MAX_EXTRACTED_BYTES = 64 * 1024 * 1024
#: and holds at most this many entries (files and folders)
MAX_ENTRIES = 2000
MARKER = "manifest.yaml"
#: the name of the unpacked folder when the zip's files lie at its root
DEFAULT_NAME = "workflow"
TEMPORARY_PREFIX = "qsolve-submission-"
_FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class UploadRefused(ZipRefused):
    """An uploaded zip that is not a workflow folder, and why; nothing of it is left behind."""


def rules() -> ZipRules:
    """What a workflow's zip may hold, with this module's bounds as they are now."""
    return ZipRules(
        refused="workflow zip refused",
        noun="a workflow zip",
        zip_noun="a workflow zip",
        directory="workflow folder",
        folder="workflow folder",
        owner="the workflow's",
        marker=MARKER,
        max_zip_bytes=MAX_ZIP_BYTES,
        max_extracted_bytes=MAX_EXTRACTED_BYTES,
        max_entries=MAX_ENTRIES,
        top_name=_FOLDER_NAME,
        top_name_rule="a folder's name (a letter or digit, then letters, digits, '.', '_' or '-')",
        error=UploadRefused,
    )


@dataclass(frozen=True)
class Staged:
    """An unpacked workflow folder: ``folder`` lies inside ``temporary``, which its user removes."""

    temporary: Path
    folder: Path
    entries: int
    extracted_bytes: int


def unpack(data: bytes, *, parent: Path | str | None = None) -> Staged:
    """The zip's workflow folder written into a fresh private temporary folder (under ``parent``, default
    ``TMPDIR``); :class:`UploadRefused` if it breaks a rule, the temporary folder then removed."""
    with Reading(rules(), bytes(data)) as zipped:  # every rule on its directory held before a byte is written
        temporary = Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX, dir=parent))
        try:
            folder = temporary / (zipped.top or DEFAULT_NAME)
            extracted = zipped.extract(folder)
        except BaseException:
            remove(temporary)
            raise
        return Staged(temporary, folder, zipped.entries, extracted)


def remove(temporary: Path | str) -> None:
    """A temporary folder of :func:`unpack` removed (nothing if it is gone already)."""
    shutil.rmtree(temporary, ignore_errors=True)


@contextlib.contextmanager
def unpacked(data: bytes, *, parent: Path | str | None = None) -> Iterator[Path]:
    """The unpacked workflow folder for the ``with`` block; its temporary folder removed at the end."""
    staged = unpack(data, parent=parent)
    try:
        yield staged.folder
    finally:
        remove(staged.temporary)
