"""A version is its content: the digest and archive of a workflow folder (issue 5, "Publication").

The listing is every regular file under the folder, by relative POSIX path in byte order, less caches
(``__pycache__``, ``*.pyc``, ``.git``). The digest is BLAKE3 over, for each file in that order, its
path, a NUL, its size in decimal, a NUL and its bytes. A link is followed only while it stays inside
the folder; one that leaves it is refused. The archive is a tar of the same listing with every
timestamp, owner and mode fixed, so the same content always gives the same bytes.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from blake3 import blake3

from qsolve.errors import QsolveError

SKIPPED_DIRS = {"__pycache__", ".git", ".qsolve"}
SKIPPED_SUFFIXES = {".pyc"}


class PublicationError(QsolveError):
    """The folder cannot be published as it is."""


def listing(root: Path) -> list[tuple[str, Path]]:
    base = root.resolve()
    out = []
    for path in sorted(root.rglob("*")):
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
    return sorted(out, key=lambda item: item[0].encode())


def content_digest(root: Path) -> str:
    h = blake3()
    for rel, path in listing(root):
        data = path.read_bytes()
        h.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0")
        h.update(data)
    return h.hexdigest()


def archive(root: Path) -> tuple[str, bytes]:
    """``(digest, tar bytes)`` of the folder's listing."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, path in listing(root):
            data = path.read_bytes()
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode, info.uid, info.gid = len(data), 0, 0o644, 0, 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return content_digest(root), buffer.getvalue()


def extract(data: bytes, dest: Path) -> Path:
    """Unpack an archive made by :func:`archive` into ``dest`` (regular files only, nothing outside it)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def inline_hardware_cases(cases: list) -> str:
    """The hardware cases as a version keeps them: inputs written inline, as canonical JSON text."""
    return json.dumps([c.inline() for c in cases], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
