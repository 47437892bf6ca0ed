"""A fault of the state database, the disk under it or the object store, in one line (issue 24: a read-only
home, a full disk, a corrupt database each say what is wrong and where, no traceback; the commands exit 2;
issue 26: a storage the database was not first used with, an object store that fails)."""

from __future__ import annotations

import errno
import os

from qsolve_pipeline.storage.state._config import DATABASE_URL_VARIABLE, qsolve_home

#: what SQLite (or the OS) says, and what it means for the operator
_SAID = (
    (("readonly database", "read-only file system"), "read-only"),
    (("database or disk is full", "no space left on device"), "full"),
    (("file is not a database", "database disk image is malformed", "malformed"), "corrupt"),
    (("unable to open database file",), "unopenable"),
    (("disk i/o error",), "io"),  # SQLite's word for a -shm or -wal file it could not make on a full disk
)
FULL_BELOW = 1 << 20  # free bytes under which an I/O error is put down to a full disk
_ERRNO = {errno.EROFS: "read-only", errno.ENOSPC: "full", errno.EDQUOT: "full"}


def where() -> str:
    """The state database this process uses, as an operator names it (no password)."""
    url = os.environ.get(DATABASE_URL_VARIABLE)
    if url:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    return str(qsolve_home() / "state.db")


def _free(place: str) -> int:
    """Free bytes on the disk holding ``place`` (a path; a database URL has no disk here)."""
    import shutil
    from pathlib import Path

    folder = Path(place).parent
    try:
        return shutil.disk_usage(folder).free if folder.exists() else FULL_BELOW
    except OSError:
        return FULL_BELOW


def fault_line(error: BaseException, command: str = "") -> str | None:
    """One line for a read-only home, a full disk, a corrupt or unopenable database found anywhere in
    ``error``'s chain; ``None`` for anything else (a bug keeps its traceback)."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        line = _one(e, command)
        if line:
            return line
        e = e.__cause__ or e.__context__
    return None


def _one(e: BaseException, command: str) -> str | None:
    from qsolve_pipeline.storage.objects import StorageError
    from qsolve_pipeline.storage.state._errors import StorageMismatch

    if isinstance(e, StorageMismatch | StorageError):  # one line already, naming both or the address
        return str(e)
    kind = _ERRNO.get(e.errno) if isinstance(e, OSError) else None
    said = str(getattr(e, "orig", None) or e).strip().splitlines()[0] if str(e).strip() else ""
    if kind is None:
        database = type(e).__module__.startswith(("sqlite3", "sqlalchemy", "psycopg"))
        if not (database or isinstance(e, OSError)):
            return None
        low = said.lower()
        kind = next((k for words, k in _SAID if any(w in low for w in words)), None)
    if kind is None:
        return None
    place = getattr(e, "filename", None) or where()
    if kind == "io" and _free(place) < FULL_BELOW:
        kind = "full"
    doing = f"qsolve {command}" if command else "this command"
    return {
        "read-only": f"{place} is on a read-only file system or folder: {doing} writes there "
        "(the reading commands, page, query and serve, work on a read-only home)",
        "full": f"the disk holding {place} is full ({said}): nothing more was written; free space and "
        "run it again",
        "corrupt": f"{place} is damaged, not a readable state database ({said}): restore it from a "
        "backup (the track record's files are not touched)",
        "io": f"{place}: the disk reported an I/O error ({said}): check the disk and its free space",
        "unopenable": f"{place} cannot be opened ({said}): its folder is missing, or this user may not "
        "read or write it",
    }[kind]
