"""The newest endorsement of each receipt key this machine has seen: a guard against rollback (issue 33).

Every worker reads a key's endorsement from the state database, so a database writer can keep a copy and
write it back after the operator retired or revoked the key: the copy is still the root's, and it holds.
The database alone cannot order a key's statements against such a replay (its writer can delete the
newer one), so each machine remembers, in its own home and nowhere shared (``keys/endorsements-seen.json``,
beside its private key), the newest endorsement that held by the root for every key it has read, and
holds each key to the newer of the two (TUF's rule: never accept metadata older than what was seen).
A statement replayed from before a retirement or a revocation changes nothing on a machine that has read
the newer one; a machine that never read it is as good as the list it holds (docs/receipts.md: readers
who must not be rolled back hold receipts to the operator's signed list).

Newer means a later ``at_ms``; at the same moment the one that says more (revoked, then retired) wins.
The file is a cache of root-signed statements, each checked again against the configured root when read,
so a statement in it by any other root, or edited, is ignored. Writing it is best effort (a home the
process may not write, a read-only reader): the guard then holds for what the process itself has read.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from qsolve.receipts.endorsement import Standing, standing

SEEN_FILE = "endorsements-seen.json"
MAX_BYTES = 4 * 1024 * 1024  # far more than any deployment's keys; a larger file is not read


def _rank(s: Standing) -> tuple[int, int, int]:
    return (s.endorsed_ms or 0, s.revoked_from_ms is not None, s.retired_ms is not None)


_READ: dict[Path, tuple[tuple[int, int, int], dict[str, str]]] = {}  # per process, by the file's stat


def _read(path: Path) -> dict[str, str]:
    """The file's statements (a copy), read again only when its size, time or inode changed."""
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    kept = _READ.get(path)
    if kept is not None and kept[0] == stamp:
        return dict(kept[1])
    if st.st_size > MAX_BYTES:
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(value, dict):
        return {}
    seen = {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}
    _READ[path] = (stamp, seen)
    return dict(seen)


def _write(path: Path, seen: dict[str, str]) -> None:
    temporary = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".seen-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(seen, f, sort_keys=True)
        os.replace(temporary, path)
    except OSError:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def newest_standings(standings: Iterable[Standing], root: str, home: Path | None) -> list[Standing]:
    """``standings`` (as the database says, checked by ``root``), each replaced by the newer endorsement
    this machine has seen of its key where the database's is older or gone; what is newer than what was
    seen is remembered. Without a home, ``standings`` as they are."""
    standings = list(standings)
    if home is None:
        return standings
    path = Path(home) / "keys" / SEEN_FILE
    seen = _read(path)
    out: list[Standing] = []
    learnt: dict[str, Standing] = {}
    for now in standings:
        document = seen.get(now.key)
        if document is not None and document != now.endorsement:  # the same text needs no second check
            remembered = standing(now.key, document, root)
            if remembered.endorsed and (not now.endorsed or _rank(remembered) > _rank(now)):
                out.append(remembered)
                continue
        if now.endorsed and document != now.endorsement:
            learnt[now.key] = now
        out.append(now)
    if learnt:
        on_disk = _read(path)  # what another process wrote meanwhile is kept where it is newer
        for key, now in learnt.items():
            theirs = standing(key, on_disk[key], root) if key in on_disk else None
            if theirs is None or not theirs.endorsed or _rank(now) >= _rank(theirs):
                on_disk[key] = now.endorsement  # type: ignore[assignment]
        _write(path, on_disk)
    return out
