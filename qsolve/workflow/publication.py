"""A version is its content: the canonical listing of a workflow folder, and its digest (issue 5).

The listing is every regular file under the folder, by relative POSIX path in byte order, less caches
(``__pycache__``, ``*.pyc``, ``.git``), read through :mod:`qsolve.workflow.reading`: no link is followed,
and a link or a special file (a device, a FIFO, a socket) is refused. Its
bytes are, for each file in that order: the path in UTF-8, a NUL, the size in decimal, a NUL, the
file's bytes. The version's digest is BLAKE3 of those bytes, and the same bytes are the published
archive (kept in the blob store under that digest): the same content always gives the same digest,
on any machine.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from blake3 import blake3

from qsolve.errors import QsolveError, WorkflowInvalid, shown
from qsolve.workflow.reading import Refused, read_bytes, walk

SKIPPED_DIRS = {"__pycache__", ".git", ".qsolve"}
SKIPPED_SUFFIXES = {".pyc"}


class PublicationError(QsolveError):
    """The folder cannot be published as it is, or an archive does not read."""


def listing(root: Path) -> list[str]:
    """Every regular file of the folder by relative POSIX path, in byte order, read beneath it
    (:mod:`qsolve.workflow.reading`): a link or a special file is refused by name."""
    try:
        files = walk(root, SKIPPED_DIRS, SKIPPED_SUFFIXES)
    except Refused as e:
        raise PublicationError(f"{e}; it cannot be published") from None
    for rel in files:  # the archive names a file in UTF-8: a name of other bytes is refused, by name
        try:
            rel.encode()
        except UnicodeEncodeError:
            named = shown(os.fsencode(rel).decode(errors="backslashreplace"))
            raise PublicationError(f"{named}: its name is not UTF-8; it cannot be published") from None
    return sorted(files, key=str.encode)


def pack(root: Path, limit: int | None = None) -> bytes:
    """The canonical listing's bytes: the archive of the folder (at most ``limit`` bytes of files)."""
    parts = []
    total = 0
    for rel in listing(root):
        try:
            data = read_bytes(root, rel)
        except WorkflowInvalid as e:
            raise PublicationError(f"{rel}: {e.message}; it cannot be published") from None
        total += len(data)
        if limit is not None and total > limit:
            raise PublicationError(f"the workflow folder is larger than {limit // 2**20} MiB")
        parts += [rel.encode(), b"\0", str(len(data)).encode(), b"\0", data]
    return b"".join(parts)


def digest_of(packed: bytes) -> str:
    return blake3(packed).hexdigest()


def content_digest(root: Path) -> str:
    return digest_of(pack(root))


def unpack(packed: bytes, dest: Path) -> Path:
    """Write an archive made by :func:`pack` into ``dest``; refuse any path that would leave it."""
    dest.mkdir(parents=True, exist_ok=True)
    at = 0
    while at < len(packed):
        name_end = packed.index(b"\0", at)
        size_end = packed.index(b"\0", name_end + 1)
        rel = packed[at:name_end].decode()
        size = int(packed[name_end + 1 : size_end])
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts or not rel:
            raise PublicationError(f"archive entry {rel!r} would leave the folder")
        target = dest / pure
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(packed[size_end + 1 : size_end + 1 + size])
        at = size_end + 1 + size
    return dest
