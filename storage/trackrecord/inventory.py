"""What the track record's folder holds, and which of its files the views read (issue 11, point 5).

Every ``*.parquet`` file in ``QSOLVE_HOME/trackrecord/`` (temporary ``.tmp-`` files aside) is checked from
its footer alone, by :data:`CHECKS` in order, the first that fails giving the reason:

    name      a name qsolve gives its files: schema-vN, b-, h- or o-
    footer    pyarrow reads its footer (not garbage bytes, not a truncated copy)
    columns   exactly ``row.SCHEMA``'s columns, in order, with their types
    metadata  ``qsolve.trackrecord.schema = 2`` in its metadata: qsolve wrote it

A file that fails is left out of the views and of compaction, and named in a warning; a command that may
write the home moves it into ``trackrecord/left-out/`` (:func:`set_aside`), so that the globs of
``trackrecord.duckdb``'s views never meet it. Nothing is ever removed. Checks are cached by path, size
and modification time (a file qsolve wrote never changes); a footer also gives the file's row count, which
the maintenance pass weighs against the state database (``storage.maintenance``).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pyarrow as pa
from blake3 import blake3

from .errors import TrackRecordWarning
from .layout import BATCH, HEAD, LEFT_OUT, OLDER, SCHEMA_FILE, TEMPORARY_PREFIX, Layout
from .row import COLUMNS, SCHEMA_VERSION

METADATA_KEY = b"qsolve.trackrecord.schema"
#: the names qsolve gives its files; none holds a character DuckDB would take for a glob
NAME = re.compile(rf"(?:{re.escape(SCHEMA_FILE)}|[{BATCH}{HEAD}{OLDER}]-[0-9A-Za-z_-]+\.parquet)")


@dataclass(frozen=True)
class FileEntry:
    """One Parquet file of the folder: its name, size and modification time, and why it is left out
    (``problem``), or None when the views read it."""

    name: str
    size: int
    mtime_ns: int
    problem: str | None = None
    rows: int = 0  # from the footer, for a file the views read

    def same_file(self, st: os.stat_result) -> bool:
        return (self.size, self.mtime_ns) == (st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class Inventory:
    """The folder's Parquet files, by name, and the schema file the views read first."""

    folder: Path
    schema_file: Path
    entries: tuple[FileEntry, ...]

    def readable(self, *kinds: str) -> list[Path]:
        """The data files of these kinds (all by default) that passed every check, sorted by name."""
        kinds = kinds or (BATCH, HEAD, OLDER)
        prefixes = tuple(f"{k}-" for k in kinds)
        chosen = [e.name for e in self.entries if e.problem is None and e.name.startswith(prefixes)]
        return [self.folder / name for name in chosen]

    def files(self, *kinds: str) -> list[Path]:
        """What a view of these kinds reads: the readable data files, or the schema file where there is
        none (the views read no schema file beside data files: issue 34)."""
        return self.readable(*kinds) or [self.schema_file]

    def entry(self, path: Path) -> FileEntry | None:
        return self._by_name.get(path.name) if path.parent == self.folder else None

    @cached_property
    def _by_name(self) -> dict[str, FileEntry]:
        return {e.name: e for e in self.entries}

    def rows(self, *kinds: str) -> int:
        """The rows of the readable data files of these kinds (all by default), from their footers."""
        return sum(self._by_name[p.name].rows for p in self.readable(*kinds))

    @property
    def left_out(self) -> list[tuple[Path, str]]:
        """The files that failed a check, with the reason."""
        return [(self.folder / e.name, e.problem) for e in self.entries if e.problem is not None]

    @cached_property
    def digest(self) -> str:
        """BLAKE3 over the files' names, sizes and times: it changes when the set of files does."""
        lines = [f"{e.name}\t{e.size}\t{e.mtime_ns}" for e in self.entries]
        return blake3("\n".join(lines).encode()).hexdigest(length=16)


def _name(path: Path, _schema: pa.Schema | None) -> str | None:
    if NAME.fullmatch(path.name) is None:
        return f"not a name qsolve gives its files ({SCHEMA_FILE}, b-, h- or o-<digest>.parquet)"
    return None


def _footer(path: Path, _schema: pa.Schema | None) -> str | None:
    return "not a Parquet file pyarrow reads (garbage, or cut short)" if _schema is None else None


def _columns(_path: Path, schema: pa.Schema | None) -> str | None:
    assert schema is not None
    written = (schema.metadata or {}).get(METADATA_KEY)
    if written is not None and written != SCHEMA_VERSION.encode():  # an older qsolve's (schema 1)
        return (
            f"track-record schema {written.decode(errors='replace')[:8]}, not {SCHEMA_VERSION}: an older "
            "qsolve wrote it (the maintenance pass files its runs again from the state database)"
        )
    want = {name: typ for name, typ, _ in COLUMNS}
    got = [(f.name, f.type) for f in schema]
    if got == list(want.items()):
        return None
    names = {n for n, _ in got}
    said = [
        _some("missing", [n for n in want if n not in names]),
        _some("others:", [n for n, _ in got if n not in want]),
        _some("", [f"{n} is {t}, not {want[n]}" for n, t in got if n in want and t != want[n]]),
    ]
    return "its columns are not the track record's: " + ("; ".join(s for s in said if s) or "another order")


def _some(label: str, items: list[str], shown: int = 4) -> str:
    if not items:
        return ""
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return f"{label} {', '.join(items[:shown])}{more}".strip()


def _metadata(_path: Path, schema: pa.Schema | None) -> str | None:
    assert schema is not None
    if (schema.metadata or {}).get(METADATA_KEY) != SCHEMA_VERSION.encode():
        return f"no {METADATA_KEY.decode()} = {SCHEMA_VERSION} in its metadata: qsolve did not write it"
    return None


#: the checks, in order; each takes the path and the footer's schema (None where the footer did not read)
CHECKS: list[tuple[str, Callable[[Path, pa.Schema | None], str | None]]] = [
    ("name", _name),
    ("footer", _footer),
    ("columns", _columns),
    ("metadata", _metadata),
]


def check_file(path: Path) -> str | None:
    """Why the views must leave ``path`` out, or None. Reads the footer only; a file gone meanwhile
    raises FileNotFoundError."""
    return _check(path)[0]


#: what a file larger than any track-record file is (``storage.bounds.TRACKRECORD_FILE_BYTES``)
TOO_LARGE = "larger than any track-record file ({size} bytes): not qsolve's, its footer not read"
#: what a file is whose footer's stated length is past its start or past the bound
FOOTER_OUT_OF_BOUNDS = "its Parquet footer says it is {length} bytes, more than the file or the bound holds"


def footer_problem(size: int, tail: bytes) -> str | None:
    """Why a file of ``size`` bytes ending in ``tail`` (its last 8 bytes) has no footer pyarrow may be
    handed (larger than the bound, or a footer length past the file's start), or None: checked before
    pyarrow reads a footer, which it reads whole, however long the file says it is."""
    from qsolve_pipeline.storage.bounds import TRACKRECORD_FILE_BYTES

    if size > TRACKRECORD_FILE_BYTES:
        return TOO_LARGE.format(size=size)
    if size < 12 or len(tail) != 8 or tail[4:] != b"PAR1":
        return None  # pyarrow refuses it at once: no footer to read
    length = int.from_bytes(tail[:4], "little")
    if length > size - 12:
        return FOOTER_OUT_OF_BOUNDS.format(length=length)
    return None


def _local_footer_problem(path: Path) -> str | None:
    """``footer_problem`` of a folder's file, measured through one descriptor (no FIFO waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a file"
        tail = os.pread(fd, 8, max(0, st.st_size - 8)) if st.st_size >= 8 else b""
    finally:
        os.close(fd)
    return footer_problem(st.st_size, tail)


def _check(path: Path) -> tuple[str | None, int]:
    """Why the views must leave ``path`` out (or None), and its row count from the footer (read only
    where ``footer_problem`` finds none)."""
    import pyarrow.parquet as pq

    schema, rows = None, 0
    if NAME.fullmatch(path.name) is not None:
        try:
            bounded = _local_footer_problem(path)
        except FileNotFoundError:
            raise
        except OSError:
            bounded = "not a file pyarrow reads (not readable)"
        if bounded is not None:
            return bounded, 0
        try:
            footer = pq.read_metadata(path)
            schema, rows = footer.schema.to_arrow_schema(), footer.num_rows
        except FileNotFoundError:
            raise
        except (OSError, ValueError, pa.ArrowException):
            schema = None
    for _, check in CHECKS:
        problem = check(path, schema)
        if problem is not None:
            return problem, 0
    return None, rows


#: per folder: the checks done, by name, with the size and time they were done at
_checked: dict[Path, dict[str, FileEntry]] = {}


def checked(path: Path, st: os.stat_result, known: Mapping[str, FileEntry] | None = None) -> FileEntry:
    """``path``'s entry, its check taken from this process's cache or ``known`` where the file's size and
    time are the same, else done now."""
    folder_cache = _checked.setdefault(path.parent, {})
    for source in (folder_cache, known or {}):
        entry = source.get(path.name)
        if entry is not None and entry.same_file(st):
            folder_cache[path.name] = entry
            return entry
    problem, rows = _check(path) if stat.S_ISREG(st.st_mode) else ("not a file", 0)
    entry = FileEntry(path.name, st.st_size, st.st_mtime_ns, problem, rows)
    folder_cache[path.name] = entry
    return entry


def remember(path: Path, rows: int) -> None:
    """A file this process has just written whole, with ``rows`` rows: known good, no footer to read."""
    with contextlib.suppress(FileNotFoundError):
        st = path.stat()
        entry = FileEntry(path.name, st.st_size, st.st_mtime_ns, None, rows)
        _checked.setdefault(path.parent, {})[path.name] = entry


def take_inventory(layout: Layout, known: Mapping[str, FileEntry] | None = None) -> Inventory:
    """The folder's Parquet files now, each checked (see the module's docstring)."""
    entries: list[FileEntry] = []
    try:
        listed = sorted(os.scandir(layout.folder), key=lambda d: d.name)
    except (FileNotFoundError, NotADirectoryError):
        listed = []
    for d in listed:
        if not d.name.endswith(".parquet") or d.name.startswith(TEMPORARY_PREFIX):
            continue
        try:
            entries.append(checked(layout.folder / d.name, d.stat(), known))
        except FileNotFoundError:  # removed meanwhile (a compaction): not there
            continue
    cache = _checked.get(layout.folder)
    if cache is not None:  # forget the files that are gone, so a long-lived process keeps a small cache
        names = {e.name for e in entries}
        for name in [n for n in cache if n not in names]:
            del cache[name]
    return Inventory(layout.folder, layout.schema_file, tuple(entries))


def set_aside(inventory: Inventory) -> Inventory:
    """Move every file the views leave out into ``trackrecord/left-out/`` (a name taken there gets a
    suffix), so that no glob over the folder meets it; returns the inventory with each one's problem
    saying where it went. A file that cannot be moved (a home qsolve may not write) stays, as it was."""
    if not inventory.left_out:
        return inventory
    entries = []
    for e in inventory.entries:
        if e.problem is None:
            entries.append(e)
            continue
        try:
            aside = aside_folder(inventory.folder)
            target = aside / e.name
            n = 0
            while target.exists() or target.is_symlink():
                n += 1
                target = aside / f"{e.name}.{n}"
            os.rename(inventory.folder / e.name, target)
        except FileNotFoundError:  # gone meanwhile
            continue
        except OSError:
            entries.append(e)
            continue
        with contextlib.suppress(KeyError):
            del _checked[inventory.folder][e.name]
        moved = f"{e.problem}; moved to {target.relative_to(inventory.folder.parent)}"
        entries.append(FileEntry(e.name, e.size, e.mtime_ns, moved))
    return Inventory(inventory.folder, inventory.schema_file, tuple(entries))


def aside_folder(folder: Path) -> Path:
    """``folder/left-out/``, made where absent. Anything else under that name (a file, a symlink, which
    would else stop every set-aside or send files elsewhere) is first moved out of the way, to
    ``left-out.not-a-folder`` (the views read no such name)."""
    aside = folder / LEFT_OUT
    if aside.is_symlink() or (aside.exists() and not aside.is_dir()):
        n, target = 0, folder / f"{LEFT_OUT}.not-a-folder"
        while target.exists() or target.is_symlink():
            n += 1
            target = folder / f"{LEFT_OUT}.not-a-folder.{n}"
        with contextlib.suppress(FileNotFoundError):
            os.rename(aside, target)
    aside.mkdir(exist_ok=True)
    return aside


def warn_left_out(left_out: list[tuple[Path | str, str]], stacklevel: int) -> None:
    """Each file left out, with why, in a :class:`TrackRecordWarning` of one line; ``stacklevel`` as
    ``warnings.warn`` takes it, from here (2: the caller of this function)."""
    for path, problem in left_out:
        shown = str(path).replace("\n", "\\n")
        said = f"{shown}: {problem}; left out of the track record"
        warnings.warn(said, TrackRecordWarning, stacklevel=stacklevel)
