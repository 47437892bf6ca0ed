"""Prefect's database as its temporary server builds it on a fresh ``PREFECT_HOME``, kept in qsolve's cache
so that the next fresh ``PREFECT_HOME`` starts from a copy of it (issue 39, item 1): :class:`Template`.
Read and written without importing Prefect (the command has not loaded it yet)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path


def _cache() -> Path:
    """qsolve's cache folder: ``QSOLVE_CACHE``, else ``$XDG_CACHE_HOME/qsolve``, else ``~/.cache/qsolve``."""
    given = os.environ.get("QSOLVE_CACHE")
    if given:
        return Path(given).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "qsolve"


#: the tables Prefect fills when it builds its database (its revision and the block types it registers):
#: every other table of a kept copy is empty
AS_BUILT = ("alembic_version", "block_type", "block_schema", "block_schema_reference")


@dataclass(frozen=True)
class Template:
    """Prefect's database as its temporary server builds it on a fresh ``PREFECT_HOME`` (issue 39, item 1):
    the schema Prefect's migrations make (about 5 s of CPU, competing with the gates on a small machine)
    and the block types it registers. The first temporary server on a fresh ``PREFECT_HOME`` builds it and
    a copy is kept in qsolve's cache, one per installed Prefect and block collection versions; the next
    fresh ``PREFECT_HOME`` starts from a copy of it, its server told not to migrate nor register again.

    Used only when no setting may move Prefect's database or home (:func:`_default_database`). A copy is
    kept and used only as built: its schema the installed Prefect's head revision (read from the installed
    migrations, not from the copy's name), SQLite's ``integrity_check`` ok, block types in it and every
    other table (:data:`AS_BUILT`) empty, no trigger nor view; checked on the copy itself, never on the
    cached file (which may change meanwhile). The cached file and its folder are the user's own and no one
    else may write them (the folder is made ``0700``); the file's BLAKE2b digest, recorded beside it when
    kept (``.blake2b``), is that of the copy. Anything else: the server builds its database as before."""

    database: Path  # the temporary server's: PREFECT_HOME/prefect.db
    kept: Path  # the copy in the cache
    head: str  # the installed Prefect's head revision for SQLite

    @property
    def digest(self) -> Path:
        """The kept copy's BLAKE2b digest, beside it."""
        return self.kept.with_name(self.kept.name + ".blake2b")

    @classmethod
    def of(cls, packages: Path) -> Template | None:
        """The template of the temporary server's database, when that is Prefect's default SQLite file
        (no setting may name another) and the installed migrations have one head; else None."""
        prefect_home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
        if not _default_database(prefect_home):
            return None
        head = _alembic_head(packages / "prefect/server/database/_migrations/versions/sqlite")
        if head is None:
            return None
        import hashlib
        import importlib.metadata

        collections = importlib.metadata.entry_points(group="prefect.collections")
        named = [
            importlib.metadata.version("prefect"),
            *sorted(
                f"{e.name}={e.value} {e.dist.name if e.dist else ''}=={e.dist.version if e.dist else ''}"
                for e in collections
            ),
        ]
        key = hashlib.sha256("\n".join(named).encode()).hexdigest()
        return cls(prefect_home / "prefect.db", _cache() / f"prefect-{key[:16]}.db", head)

    def seed(self) -> bool:
        """Copy the kept database to a ``PREFECT_HOME`` that has none, when the copy is as built; whether
        it was."""
        import hashlib
        import shutil
        import tempfile

        if self.database.exists():
            return False
        try:
            folder = os.open(self.kept.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            if not _private(os.fstat(folder)):
                return False
            recorded = _read_private(self.digest.name, folder, 200)
            kept = os.open(self.kept.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
            try:
                if recorded is None or not _private(os.fstat(kept)):
                    return False
                self.database.parent.mkdir(parents=True, exist_ok=True)
                fd, part = tempfile.mkstemp(dir=self.database.parent, prefix=".prefect.db-")
                try:
                    with os.fdopen(fd, "wb") as target, os.fdopen(os.dup(kept), "rb") as source:
                        shutil.copyfileobj(source, target)
                    with open(part, "rb") as copied:
                        digest = hashlib.file_digest(copied, "blake2b").hexdigest()
                    if digest != recorded.decode(errors="replace").strip() or not _as_built(part, self.head):
                        return False
                    os.link(part, self.database)  # never over a database another command made meanwhile
                finally:
                    os.unlink(part)
            finally:
                os.close(kept)
        except OSError:
            return False
        finally:
            os.close(folder)
        return True

    def keep(self) -> None:
        """Keep a copy of the database the temporary server built, as it is once the server answers (its
        schema and block types, no run yet), when the copy is as built; nothing if that fails."""
        import hashlib
        import sqlite3
        import tempfile

        folder = self.kept.parent
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=0o700)
            if not _private(os.lstat(folder)):
                return
            fd, part = tempfile.mkstemp(dir=folder, prefix=".prefect-")
            os.close(fd)
            try:
                with (
                    contextlib.closing(sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)) as source,
                    contextlib.closing(sqlite3.connect(part)) as copy,
                ):
                    source.backup(copy)
                    copy.execute("PRAGMA journal_mode=DELETE")  # one file; the server sets WAL again
                    if copy.execute(_TELEMETRY_TABLE).fetchone() is not None:
                        # the server's telemetry session (written a moment after it answers): not of the build
                        copy.execute("PRAGMA secure_delete=ON")
                        copy.execute("DELETE FROM configuration WHERE key = 'TELEMETRY_SESSION'")
                        copy.commit()
                if not _as_built(part, self.head):  # the copy's rows, not the source's: it may change
                    return
                with open(part, "rb") as copied:
                    digest = hashlib.file_digest(copied, "blake2b").hexdigest()
                fd, sealed = tempfile.mkstemp(dir=folder, prefix=".prefect-digest-")
                try:
                    with os.fdopen(fd, "w") as out:
                        out.write(digest + "\n")
                    os.replace(sealed, self.digest)  # a copy kept meanwhile by another command: not seeded
                finally:
                    Path(sealed).unlink(missing_ok=True)
                os.replace(part, self.kept)
            finally:
                Path(part).unlink(missing_ok=True)
        except (OSError, sqlite3.Error):
            return


_TELEMETRY_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'configuration'"


def _private(st: os.stat_result) -> bool:
    """Whether a folder or a regular file (not a link) is the user's own and no one else may write it."""
    import stat

    kind = stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)
    return kind and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _read_private(name: str, folder: int, limit: int) -> bytes | None:
    """The first ``limit`` bytes of a file of ``folder`` (a descriptor), when it is the user's own and no
    one else may write it (not a link); else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    try:
        return os.read(fd, limit) if _private(os.fstat(fd)) else None
    finally:
        os.close(fd)


def _as_built(database: str, head: str) -> bool:
    """Whether a SQLite file is Prefect's database as built: sound (``integrity_check``), at ``head``, with
    block types and schemas, every other table empty, no trigger nor view."""
    import sqlite3

    if _revision(Path(database)) != head:
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            if db.execute("PRAGMA integrity_check").fetchall() != [("ok",)]:
                return False
            kinds = db.execute("SELECT DISTINCT type FROM sqlite_master").fetchall()
            if not {kind for (kind,) in kinds} <= {"table", "index"}:
                return False
            tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            if not {"block_type", "block_schema"} <= set(tables):
                return False
            rows = {
                table: db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]  # noqa: S608 - its own
                for table in tables
                if '"' not in table
            }
    except sqlite3.Error:
        return False
    if len(rows) != len(tables) or rows["block_type"] == 0 or rows["block_schema"] == 0:
        return False
    return all(count == 0 for table, count in rows.items() if table not in AS_BUILT)


def _default_database(prefect_home: Path) -> bool:
    """Whether no setting may move Prefect's database from ``PREFECT_HOME/prefect.db``, conservatively
    (read without Prefect): no variable but ``PREFECT_HOME`` itself names a database or a home (any
    ``PREFECT_..DATABASE..`` or ``PREFECT_..HOME..``, either case), no profile names one, and the working
    directory has no ``prefect.toml``, no ``PREFECT_`` line in its ``.env``, no ``[tool.prefect]`` in its
    ``pyproject.toml``."""
    named = [name.upper() for name in os.environ if name != "PREFECT_HOME"]
    if any(name.startswith("PREFECT_") and ("DATABASE" in name or "HOME" in name) for name in named):
        return False
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or prefect_home / "profiles.toml").expanduser()
    if any(word in _text(profiles).upper() for word in ("DATABASE", "HOME")):
        return False
    if Path("prefect.toml").exists() or "PREFECT_" in _text(Path(".env")).upper():
        return False
    project = Path("pyproject.toml")
    if project.exists():
        import tomllib

        try:
            tool = tomllib.loads(_text(project)).get("tool", {})
        except tomllib.TOMLDecodeError:
            return False
        if not isinstance(tool, dict) or "prefect" in tool:
            return False
    return True


def _text(file: Path) -> str:
    """A file's text; empty when it cannot be read."""
    try:
        return file.read_text(errors="replace")
    except OSError:
        return ""


def _revision(database: Path) -> str | None:
    """The Alembic revision a SQLite database records (None: no database, or none recorded)."""
    import sqlite3

    if not database.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        return None
    return rows[0][0] if len(rows) == 1 else None


def _alembic_head(versions: Path) -> str | None:
    """The one head revision of the migrations in ``versions`` (None: none, or more than one)."""
    import re

    revisions: set[str] = set()
    parents: set[str] = set()
    try:
        files = list(versions.glob("*.py"))
    except OSError:
        return None
    for file in files:
        text = file.read_text(errors="replace")
        if (found := re.search(r"^revision\s*=\s*['\"]([0-9a-zA-Z_]+)['\"]", text, re.M)) is None:
            continue
        revisions.add(found.group(1))
        if (down := re.search(r"^down_revision\s*=\s*(.+)$", text, re.M)) is not None:
            parents.update(re.findall(r"['\"]([0-9a-zA-Z_]+)['\"]", down.group(1)))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None
