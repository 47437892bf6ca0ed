"""A version is its content: the canonical listing of a workflow folder, and its digest (issue 5).

The listing is every regular file under the folder, by relative POSIX path in byte order, less caches
(``__pycache__``, ``*.pyc``, ``.git``); a link is followed only while it stays inside the folder, and
a special file (a device, a FIFO, a socket) is refused. Its
bytes are, for each file in that order: the path in UTF-8, a NUL, the size in decimal, a NUL, the
file's bytes. The version's digest is BLAKE3 of those bytes, and the same bytes are the published
archive (kept in the blob store under that digest): the same content always gives the same digest,
on any machine.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from blake3 import blake3

from qsolve.errors import QsolveError

SKIPPED_DIRS = {"__pycache__", ".git", ".qsolve"}
SKIPPED_SUFFIXES = {".pyc"}


class PublicationError(QsolveError):
    """The folder cannot be published as it is, or an archive does not read."""


def listing(root: Path) -> list[tuple[str, Path]]:
    base = root.resolve()
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part in SKIPPED_DIRS for part in rel.parts) or path.suffix in SKIPPED_SUFFIXES:
            continue
        real = path.resolve()
        if not real.is_relative_to(base):
            raise PublicationError(
                f"{rel.as_posix()}: a link that leaves the workflow folder cannot be published"
            )
        if real.is_file():
            out.append((rel.as_posix(), real))
        elif not real.is_dir():
            raise PublicationError(
                f"{rel.as_posix()}: a special file (a device, FIFO or socket) cannot be published"
            )
    return sorted(out, key=lambda item: item[0].encode())


def pack(root: Path) -> bytes:
    """The canonical listing's bytes: the archive of the folder."""
    parts = []
    for rel, path in listing(root):
        data = path.read_bytes()
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
