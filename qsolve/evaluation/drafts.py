"""Knowledge drafts: one task's knowledge directory, uploaded as a zip, that a run or a preview reads in
place of the published ``task-knowledge/<Task>/`` (issue 14, item 8; docs/calibration.md, "Knowledge
drafts").

    store = DraftStore()                                # QSOLVE_HOME/knowledge-drafts/
    draft = store.store(zip_bytes, "CheckT1.zip")       # or store.store_file(Path("CheckT1.zip"))
    draft.id, draft.task, draft.warnings                # the id is the zip's SHA-256
    store.knowledge_of(draft.id)                        # DraftKnowledge: .knowledge, .examples
    store.for_task(draft.id, "CheckT1")                 # the draft, or DraftOfAnotherTask
    store.archive(draft.id)                             # draft.zip, byte for byte
    task_archive(Path("task-knowledge/CheckT1"))        # the published directory as a draft's zip

A draft is kept under ``knowledge-drafts/<sha256>/``: ``draft.zip`` (the upload, byte for byte),
``draft.json`` (the uploader, the file name as uploaded, the task, when, the parser's warnings) and
``task/<Task>/`` (the extracted directory). It is written once: extracted into a temporary folder inside
``knowledge-drafts/`` and renamed into place; the same zip stored again finds it there and returns it
unchanged. A refused zip leaves nothing behind.

The zip is read by this module, not by :meth:`zipfile.ZipFile.extractall`: :mod:`zipfile` parses the
central directory and, through :meth:`zipfile.ZipFile.open`, reads each entry's local header, inflates its
data and checks its CRC-32; the stream is opened with sizes bounded by the entry's region, not the zip's,
and the bytes are counted as they come out; the sizes the zip states are compared with what came out only
afterwards, and never used to decide how much to read. Each local header is held to its directory record
(flags, method, extra field, where its data start), which zipfile does not do. No Prefect, no database.
"""

from __future__ import annotations

import copy
import getpass
import hashlib
import io
import json
import os
import re
import shutil
import stat
import struct
import tempfile
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qsolve.evaluation.examples import Example, ExampleSelection, ExampleSkipped, select_examples
from qsolve.evaluation.knowledge import (
    TASK_FILE,
    KnowledgeError,
    Reference,
    TaskKnowledge,
    read_task,
    split_frontmatter,
)
from qsolve.home import qsolve_home

#: a draft's zip is at most this many bytes (20 MiB)
MAX_ZIP_BYTES = 20 * 1024 * 1024
#: and extracts to at most this many bytes (50 MiB), counted while extracting
MAX_EXTRACTED_BYTES = 50 * 1024 * 1024
#: and holds at most this many entries (files and folders)
MAX_ENTRIES = 200
#: the only files a draft holds (case ignored)
ALLOWED_SUFFIXES = (".md", ".png", ".jpg", ".jpeg", ".webp")

DRAFTS_FOLDER = "knowledge-drafts"
ZIP_FILE = "draft.zip"
META_FILE = "draft.json"
TASK_FOLDER = "task"
#: the timestamp every entry of a :func:`task_archive` carries
ARCHIVE_DATE_TIME = (1980, 1, 1, 0, 0, 0)

_ID = re.compile(r"^[0-9a-f]{64}$")
_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
_DRIVE = re.compile(r"^[A-Za-z]:")
_CHUNK = 64 * 1024
_UNBOUNDED = 1 << 62  # a deflated entry's stream, opened with this size, ends where its deflate stream does
_ENCRYPTED = 0x1 | 0x40  # traditional and strong encryption
_UTF8_NAME = 0x800
_UNIX_EXTRA = 0x000D  # PKWARE's Unix extra field: its variable part is a hard or symbolic link's target
_UNICODE_PATH_EXTRA = 0x7075  # Info-ZIP's Unicode Path field: a second name, which some readers take
_DATA_DESCRIPTOR = 0x08  # the CRC-32 and sizes follow the data; the local header's may be zero
#: what may follow an entry's data before the next local header: a data descriptor (APPNOTE 4.3.9), with or
#: without its signature, of 32-bit or Zip64 sizes; nothing else
_DESCRIPTOR_LENGTHS = (12, 16, 20, 24)
#: a name component, and a whole name, in bytes: what file systems take (NAME_MAX), and a bound well under
#: PATH_MAX for the name beneath the drafts folder
MAX_NAME_PART_BYTES, MAX_NAME_BYTES = 255, 1024
_DOS_DIRECTORY = 0x10
_DOS_REPARSE_POINT = 0x400  # a Windows link (symbolic link or junction)
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma", 9: "deflate64"}
_NOT_REGULAR = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


# --- errors ---------------------------------------------------------------------------------------


class DraftError(ValueError):
    """Something wrong with a draft; ``entry`` names the zip entry at fault, when one is."""

    def __init__(self, message: str, *, entry: str | None = None) -> None:
        super().__init__(message)
        self.entry = entry


class DraftRefused(DraftError):
    """A zip that is not stored as a draft, and why; nothing of it is left behind."""


class DraftNotFound(DraftError, LookupError):
    """No draft of that id."""


class DraftOfAnotherTask(DraftError):
    """A draft named for a task it is not a draft of."""


def _refuse(problem: str, entry: str | None = None) -> DraftRefused:
    where = f"entry {entry!r}: " if entry is not None else ""
    return DraftRefused(f"draft refused: {where}{problem}", entry=entry)


def _mib(n: int) -> str:
    return f"{n:,} bytes ({n / (1024 * 1024):g} MiB)"


# --- what is stored -------------------------------------------------------------------------------


class Draft(BaseModel):
    """One stored draft, as its ``draft.json`` says, with where it lies."""

    model_config = ConfigDict(frozen=True)

    id: str  #: the zip's SHA-256, lower-case hex
    task: str
    file_name: str  #: the file name as uploaded (its last component)
    uploader: str
    created_at: str  #: ISO 8601, UTC
    warnings: list[str] = Field(default_factory=list)
    zip_bytes: int
    extracted_bytes: int
    entries: int
    #: ``knowledge-drafts/<id>/``; not stored in draft.json
    folder: Path = Field(exclude=True)

    @property
    def directory(self) -> Path:
        """The extracted task directory, ``task/<Task>/``: what :func:`read_task` reads."""
        return self.folder / TASK_FOLDER / self.task

    @property
    def zip_path(self) -> Path:
        return self.folder / ZIP_FILE

    def metadata(self) -> dict[str, Any]:
        """``draft.json``'s content."""
        return self.model_dump(mode="json")


@dataclass(frozen=True)
class DraftKnowledge:
    """What a run reads of a draft: its task knowledge (the reference) and the examples it shows."""

    draft: Draft
    knowledge: TaskKnowledge
    examples: list[Example]
    skipped: list[ExampleSkipped]

    @property
    def reference(self) -> Reference:
        return self.knowledge.reference


# --- reading the zip: the plan --------------------------------------------------------------------


@dataclass
class _Entry:
    info: zipfile.ZipInfo
    name: str  #: the entry's name as the zip writes it
    relative: PurePosixPath | None  #: inside the task directory; None for the task folder itself
    folder: bool


@dataclass
class _Plan:
    entries: list[_Entry]
    #: the top folder's name; None when task.md lies at the zip's root
    top: str | None
    #: the end of each entry's region (the next local header, or the central directory)
    bounds: dict[int, int]


def _extra_fields(extra: bytes) -> list[tuple[int, bytes]]:
    fields, i = [], 0
    while i + 4 <= len(extra):
        kind, size = struct.unpack("<HH", extra[i : i + 4])
        fields.append((kind, extra[i + 4 : i + 4 + size]))
        i += 4 + size
    return fields


def _is_link_extra(extra: bytes) -> bool:
    """PKWARE's Unix extra field (0x000d) with a variable part: the target of a hard or symbolic link."""
    return any(kind == _UNIX_EXTRA and len(body) > 12 for kind, body in _extra_fields(extra))


def _check_extra(extra: bytes, name: str) -> None:
    """What an entry's extra field may not hold, in its directory record or its local header."""
    if _is_link_extra(extra):
        raise _refuse("a link (a Unix extra field names its target); a draft holds no links", name)
    if any(kind == _UNICODE_PATH_EXTRA for kind, _body in _extra_fields(extra)):
        raise _refuse(
            "a second name (Info-ZIP's Unicode Path field, 0x7075); a draft's entries have one name", name
        )


def _check_not_encrypted(flags: int, name: str) -> None:
    """The record's flags or the local header's."""
    if flags & _ENCRYPTED:
        raise _refuse("encrypted; a draft's entries are not encrypted", name)


def _check_name(name: str) -> PurePosixPath:
    """The entry's path, or the reason it lies outside the zip's folder (entries name it)."""
    if not name:
        raise _refuse("an empty name", name)
    if "\x00" in name:
        raise _refuse("a NUL character in its name", name)
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise _refuse("a control character in its name", name)
    if "\\" in name:
        raise _refuse("a backslash in its path (a path separator on Windows; a draft's paths use '/')", name)
    if name.startswith("/"):
        raise _refuse("an absolute path; a draft's paths are relative to its task folder", name)
    if _DRIVE.match(name):
        raise _refuse("a drive letter; a draft's paths are relative to its task folder", name)
    if ":" in name:
        raise _refuse("a ':' in its path (a drive or a Windows stream)", name)
    parts = name.rstrip("/").split("/")
    if any(p == ".." for p in parts):
        raise _refuse("'..' in its path, a path outside the task directory", name)
    if any(p in ("", ".") for p in parts):
        raise _refuse("an empty or '.' component in its path", name)
    if len(name.encode("utf-8", errors="replace")) > MAX_NAME_BYTES:
        raise _refuse(f"a name of more than {MAX_NAME_BYTES} bytes (MAX_NAME_BYTES)", name)
    if any(len(p.encode("utf-8", errors="replace")) > MAX_NAME_PART_BYTES for p in parts):
        raise _refuse(
            f"a part of its path of more than {MAX_NAME_PART_BYTES} bytes (MAX_NAME_PART_BYTES)", name
        )
    if "__MACOSX" in parts:
        raise _refuse("macOS metadata (__MACOSX; zip the folder with `zip -r -X`), not the task's", name)
    return PurePosixPath(*parts)


def _check_kind(info: zipfile.ZipInfo, name: str, folder: bool) -> None:
    """Links, devices, encryption and compression methods: refused by the entry's own fields."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise _refuse("a symbolic link (its external attributes say so); a draft holds no links", name)
    _check_extra(info.extra, name)
    if info.external_attr & _DOS_REPARSE_POINT:
        raise _refuse("a link (a Windows reparse point); a draft holds no links", name)
    if kind in _NOT_REGULAR:
        raise _refuse(f"{_NOT_REGULAR[kind]}, not a file; a draft holds only files and folders", name)
    if kind == stat.S_IFDIR and not folder:
        raise _refuse("a folder by its attributes but its name does not end in '/'", name)
    _check_not_encrypted(info.flag_bits, name)
    if folder:
        if info.file_size:
            raise _refuse("a folder entry that holds data", name)
        return
    if info.compress_type not in _METHODS:
        method = _METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
        raise _refuse(f"compressed with {method}; a draft's entries are stored or deflated", name)
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in ALLOWED_SUFFIXES:
        what = f"a {suffix} file" if suffix else "a file without a suffix"
        if PurePosixPath(name).name == ".DS_Store":
            what = "macOS metadata (zip the folder with `zip -r -X`)"
        raise _refuse(f"{what}; a draft holds only .md, .png, .jpg, .jpeg and .webp files", name)


#: the end of central directory record (APPNOTE 4.3.16): its signature, and the offset of its total count
_EOCD, _EOCD_TOTAL, _EOCD_SIZE = b"PK\x05\x06", 10, 12
_CENTRAL = zipfile.stringCentralDir


def _entries_at_most(data: bytes) -> None:
    """Refuse a zip whose end record counts more than MAX_ENTRIES entries before :class:`zipfile.ZipFile`
    reads its whole central directory (a 20 MiB zip can list some 230,000 entries: seconds and a hundred
    MiB to parse, for nothing). A zip whose count is not there to read (none, or a Zip64 0xFFFF) is left
    to zipfile and :func:`_plan`, which count again."""
    at = data.rfind(_EOCD, max(0, len(data) - 22 - 0xFFFF))
    if at < 0 or at + 22 > len(data):
        return
    total = int.from_bytes(data[at + _EOCD_TOTAL : at + _EOCD_TOTAL + 2], "little")
    if MAX_ENTRIES < total < 0xFFFF:
        raise _refuse(f"the zip has {total} entries; a draft holds at most {MAX_ENTRIES} (MAX_ENTRIES)")
    # zipfile reads the directory by its stated size, whatever the count says: its records are counted by
    # their signature in that many bytes before the end record (and the Zip64 end records, 76 bytes)
    size = int.from_bytes(data[at + _EOCD_SIZE : at + _EOCD_SIZE + 4], "little")
    records = data.count(_CENTRAL, max(0, at - size - 76), at)
    if records > MAX_ENTRIES:
        raise _refuse(
            f"the zip's central directory holds {records} records; a draft holds at most {MAX_ENTRIES} "
            "entries (MAX_ENTRIES)"
        )


def _plan(zf: zipfile.ZipFile, size: int) -> _Plan:
    """Every check that needs no extraction: names, kinds, layout, duplicates, overlaps."""
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise _refuse(f"the zip has {len(infos)} entries; a draft holds at most {MAX_ENTRIES} (MAX_ENTRIES)")
    if not infos:
        raise _refuse("the zip is empty; a draft is one task directory holding task.md")
    raw: list[tuple[zipfile.ZipInfo, str, PurePosixPath, bool]] = []
    for info in infos:
        name = info.orig_filename
        folder = name.endswith("/")
        path = _check_name(name)
        _check_kind(info, name, folder)
        raw.append((info, name, path, folder))

    # the layout: one top folder holding task.md, or task.md at the zip's root
    at_root = [name for _info, name, path, folder in raw if not folder and len(path.parts) == 1]
    if at_root:
        top = None
        if not any(n == TASK_FILE for n in at_root):
            raise _refuse(
                f"a file at the zip's root but no {TASK_FILE} there; a draft is one task directory",
                at_root[0],
            )
    else:
        tops = list(dict.fromkeys(path.parts[0] for _i, _n, path, _f in raw))
        top = tops[0]
        if len(tops) > 1:
            second = next(name for _i, name, path, _f in raw if path.parts[0] != top)
            raise _refuse(
                f"a second top folder {PurePosixPath(second).parts[0]!r} beside {top!r}; a draft is one "
                "task directory",
                second,
            )
        if not _TASK_NAME.match(top):
            raise _refuse(
                f"the task folder {top!r} is not a task's name (a letter or digit, then letters, digits, "
                "'_' or '-')",
                next(name for _i, name, _p, _f in raw),
            )
        if not any(not f and path == PurePosixPath(top, TASK_FILE) for _i, _n, path, f in raw):
            raise _refuse(f"no {top}/{TASK_FILE}: the zip's one folder is not a task directory")

    entries: list[_Entry] = []
    seen: dict[str, str] = {}  # a name as one file system or another would take it -> the entry's name
    files: dict[str, str] = {}

    def key(path: PurePosixPath) -> str:  # case and Unicode form ignored, as some file systems do
        return unicodedata.normalize("NFC", str(path)).casefold()

    for info, name, path, folder in raw:
        relative = path if top is None else (PurePosixPath(*path.parts[1:]) if len(path.parts) > 1 else None)
        if relative is None:  # the task folder's own entry
            entries.append(_Entry(info, name, None, True))
            continue
        if not folder and relative.name.casefold() == TASK_FILE and len(relative.parts) > 1:
            raise _refuse(f"a second {TASK_FILE}: a draft is one task directory", name)
        kind = key(relative) + ("/" if folder else "")
        if kind in seen:
            same = (
                "the same name" if seen[kind] == name else f"the same name as {seen[kind]!r} (case ignored)"
            )
            raise _refuse(f"a second entry of {same}", name)
        seen[kind] = name
        if not folder:
            files[key(relative)] = name
        entries.append(_Entry(info, name, relative, folder))
    for entry in entries:  # a file where another entry needs a folder
        if entry.relative is None:
            continue
        for parent in entry.relative.parents:
            if key(parent) in files:
                raise _refuse(f"a file where {entry.name!r} needs a folder", files[key(parent)])
        if entry.folder and key(entry.relative) in files:
            raise _refuse(f"a folder of the same name as the file {files[key(entry.relative)]!r}", entry.name)

    # each entry's data lie between its local header and the next one; two entries never share them
    end_of_entries = min(getattr(zf, "start_dir", size), size)
    offsets = sorted(e.info.header_offset for e in entries)
    bounds: dict[int, int] = {}
    for e in entries:
        if not 0 <= e.info.header_offset < end_of_entries:
            raise _corrupt("its local header lies outside the zip's entries", e.name)
    for i, offset in enumerate(offsets):
        if i and offset == offsets[i - 1]:
            names = [e.name for e in entries if e.info.header_offset == offset]
            raise _refuse(f"its data are those of {names[0]!r} (overlapping entries)", names[1])
        bounds[offset] = offsets[i + 1] if i + 1 < len(offsets) else end_of_entries
    return _Plan(entries, top, bounds)


# --- reading the zip: extraction ------------------------------------------------------------------


class _Budget:
    """The running total of extracted bytes, against MAX_EXTRACTED_BYTES."""

    def __init__(self) -> None:
        self.total = 0

    def take(self, n: int, name: str) -> None:
        self.total += n
        if self.total > MAX_EXTRACTED_BYTES:
            raise _refuse(
                f"the zip extracts to more than {_mib(MAX_EXTRACTED_BYTES)} (MAX_EXTRACTED_BYTES), counted "
                "while extracting; stopped in this entry",
                name,
            )


def _corrupt(problem: str, name: str) -> DraftRefused:
    return _refuse(f"corrupt: {problem}", name)


def _data_start(data: bytes, entry: _Entry, end: int) -> tuple[int, tuple[int, int, int] | None]:
    """Where the entry's data start: after its local header, read with zipfile's own layout of it
    (``structFileHeader``) and held to the central directory's record, which zipfile does not do beyond the
    name: a reader that goes by the local header (Info-ZIP's unzip, for one) must find the same file there
    as this one, for the draft's archive is handed on byte for byte."""
    info, name = entry.info, entry.name
    at = info.header_offset
    if at < 0 or at + zipfile.sizeFileHeader > end:
        raise _corrupt("its local header lies outside the zip", name)
    header = struct.unpack_from(zipfile.structFileHeader, data, at)
    if header[0] != zipfile.stringFileHeader:
        raise _corrupt("no local header where the directory says it is", name)
    flags, method, crc, compressed, size, name_length, extra_length = header[3:5] + header[7:12]
    _check_not_encrypted(flags, name)
    if method != info.compress_type:
        raise _corrupt("its local header and the directory give different compression methods", name)
    encoding = "utf-8" if info.flag_bits & _UTF8_NAME else "cp437"
    name_at = at + zipfile.sizeFileHeader
    if data[name_at : name_at + name_length] != name.encode(encoding, errors="replace"):
        raise _corrupt("its local header names another file than the directory does", name)
    extra_at = name_at + name_length
    _check_extra(data[extra_at : extra_at + extra_length], name)
    start = extra_at + extra_length
    if start > end:
        raise _corrupt("its local header runs into the next entry", name)
    return start, None if flags & _DATA_DESCRIPTOR else (crc, compressed, size)


def _agrees(entry: _Entry, stated: tuple[int, int, int] | None) -> None:
    """The CRC-32 and sizes a local header states (where no data descriptor follows the data) are its
    record's (a Zip64 header's 0xFFFFFFFF stands for a size in its extra field)."""
    info = entry.info
    if stated is None:
        return
    crc, compressed, size = stated
    sizes = ((compressed, info.compress_size), (size, info.file_size))
    if crc != info.CRC or any(local != record and local != 0xFFFFFFFF for local, record in sizes):
        raise _corrupt("its local header and the directory give different CRC-32s or sizes", entry.name)


def _fits(entry: _Entry, start: int, end: int) -> int:
    """Where the entry's data end by its stated compressed size, which must lie within its region."""
    if start + entry.info.compress_size > end:
        raise _corrupt("its data run past the end of its region (truncated)", entry.name)
    return start + entry.info.compress_size


def _stream(zf: zipfile.ZipFile, entry: _Entry, start: int, end: int) -> tuple[Any, zipfile.ZipInfo]:
    """The entry's bytes as they come out, through :meth:`zipfile.ZipFile.open` (which reads the local
    header, checks its name, inflates, and checks the CRC-32 where the data end), opened on a copy of the
    entry's record whose sizes are its region's, not the zip's: a stored entry's data must fit between
    ``start`` and ``end`` (the next entry's local header or the central directory); a deflated entry's
    stream may read that far and gives what its deflate stream holds, whatever size the zip states. So the
    stated sizes never decide how much is read: the count of what comes out does."""
    info = entry.info
    bounded = copy.copy(info)
    if info.compress_type == zipfile.ZIP_STORED:
        _fits(entry, start, end)
        bounded.file_size = info.compress_size
    else:
        bounded.compress_size, bounded.file_size = end - start, _UNBOUNDED
    return zf.open(bounded), bounded


def _deflated_length(stream: Any, bounded: zipfile.ZipInfo) -> int | None:
    """How many compressed bytes a deflated entry's deflate stream took, read at its end off zipfile's
    stream (CPython's ZipExtFile keeps its decompressor and what it has left to read; zipfile itself
    stops where the region ends, ended deflate stream or not): None if the deflate stream did not end. On
    a zipfile that keeps neither, the stated length is taken as it is."""
    inflate, left = getattr(stream, "_decompressor", None), getattr(stream, "_compress_left", None)
    if inflate is None or left is None:
        return bounded.compress_size
    if not inflate.eof:
        return None
    return bounded.compress_size - left - len(inflate.unused_data)


def _nothing_after(entry: _Entry, data_end: int, end: int) -> None:
    """Between an entry's data and the next local header lies nothing, or its data descriptor: bytes a
    reader that walks local headers in order would read as another entry are not hidden there."""
    slack = end - data_end
    if slack and not (entry.info.flag_bits & _DATA_DESCRIPTOR and slack in _DESCRIPTOR_LENGTHS):
        raise _corrupt(
            f"{slack:,} bytes between its data and the next entry, which the directory lists as none",
            entry.name,
        )


def _extract_entry(
    zf: zipfile.ZipFile, data: bytes, entry: _Entry, end: int, target: Path, budget: _Budget
) -> int:
    """Writes one file, counting its bytes as they come out, 64 KiB at a time; the sizes the zip states are
    compared with what came out only afterwards."""
    info, name = entry.info, entry.name
    size, compressed = 0, info.compress_size
    start, stated = _data_start(data, entry, end)
    try:
        stream, bounded = _stream(zf, entry, start, end)
        with stream, open(target, "xb") as out:
            while chunk := stream.read(_CHUNK):
                budget.take(len(chunk), name)
                size += len(chunk)
                out.write(chunk)
            if info.compress_type == zipfile.ZIP_DEFLATED:
                compressed = _deflated_length(stream, bounded)
    except (zipfile.BadZipFile, EOFError, UnicodeDecodeError, zlib.error, NotImplementedError) as e:
        raise _corrupt(f"its local header or data cannot be read ({e})", name) from None
    if compressed is None:
        raise _corrupt("its deflated data end before the deflate stream does (truncated)", name)
    if size != info.file_size or compressed != info.compress_size:
        raise _corrupt(
            f"the sizes the zip states ({info.compress_size:,} compressed, {info.file_size:,} extracted) "
            f"are not its data's ({compressed:,} compressed, {size:,} extracted)",
            name,
        )
    _agrees(entry, stated)
    _nothing_after(entry, start + compressed, end)
    return size


def _extract(zf: zipfile.ZipFile, data: bytes, plan: _Plan, into: Path) -> int:
    """Extracts the plan's entries into ``into`` (the task directory's content); the bytes written."""
    budget = _Budget()
    into.mkdir()
    for entry in plan.entries:
        end = plan.bounds[entry.info.header_offset]
        if entry.folder:  # never opened: its local header is held to its record here
            start, stated = _data_start(data, entry, end)
            data_end = _fits(entry, start, end)  # an empty deflate stream, say
            _agrees(entry, stated)
            _nothing_after(entry, data_end, end)
        if entry.relative is None:
            continue
        target = into.joinpath(*entry.relative.parts)
        if entry.folder:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        _extract_entry(zf, data, entry, end, target, budget)
    return budget.total


def _task_named(frontmatter: dict[str, Any]) -> str | None:
    for key in ("name", "task"):
        value = frontmatter.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _task_of(plan: _Plan, extracted: Path) -> str:
    """The draft's task: its folder's name (the frontmatter's name, when it has one, must agree); for
    task.md at the zip's root, the frontmatter's ``name`` (or ``task``)."""
    where = TASK_FILE if plan.top is None else f"{plan.top}/{TASK_FILE}"
    try:
        text = (extracted / TASK_FILE).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _refuse("not UTF-8 text", where) from None
    named = _task_named(split_frontmatter(text)[0])
    if plan.top is None:
        if named is None:
            raise _refuse(
                "task.md lies at the zip's root and its frontmatter names no task (name:); name it, or zip "
                "the task's folder",
                where,
            )
        if not _TASK_NAME.match(named):
            raise _refuse(f"its frontmatter's name {named!r} is not a task's name", where)
        return named
    if named is not None and named != plan.top:
        raise _refuse(
            f"its frontmatter names the task {named!r} but its folder is {plan.top!r}; a draft is of one "
            "task",
            where,
        )
    return plan.top


# --- the store ------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _default_uploader() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without one)
        return "unknown"


def _parse(directory: Path) -> tuple[TaskKnowledge, ExampleSelection, list[str]]:
    """The directory read as the published knowledge is, and the parser's warnings: the reference's
    and, for each example left out, why."""
    knowledge = read_task(directory)
    selection = select_examples(directory)
    warnings = [*knowledge.reference.warnings, *(f"example {s.id}: {s.reason}" for s in selection.skipped)]
    return knowledge, selection, warnings


class DraftStore:
    """The knowledge drafts of ``home`` (default ``QSOLVE_HOME``), under ``knowledge-drafts/``."""

    def __init__(self, home: Path | str | None = None) -> None:
        self.root = qsolve_home(home) / DRAFTS_FOLDER

    # writing

    def store(self, data: bytes, file_name: str = "draft.zip", *, uploader: str | None = None) -> Draft:
        """Stores a zip as a draft, or returns the draft it already is; :class:`DraftRefused` otherwise."""
        data = bytes(data)
        if len(data) > MAX_ZIP_BYTES:
            raise _refuse(
                f"the zip is {len(data):,} bytes; a draft's zip is at most {_mib(MAX_ZIP_BYTES)} "
                "(MAX_ZIP_BYTES)"
            )
        draft_id = draft_id_of(data)
        existing = self._find(draft_id)
        if existing is not None:
            return existing
        _entries_at_most(data)
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            NotImplementedError,
            ValueError,
            EOFError,
            struct.error,
            UnicodeDecodeError,
            OverflowError,
        ) as e:
            raise _refuse(f"not a zip file, or a corrupt one ({e})") from None
        with zf:  # open while its entries are extracted, through its own streams
            plan = _plan(zf, len(data))
            self.root.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.root))
            try:
                staged = work / TASK_FOLDER / ".extracting"
                staged.parent.mkdir()
                extracted = _extract(zf, data, plan, staged)
                task = _task_of(plan, staged)
                directory = work / TASK_FOLDER / task
                staged.rename(directory)
                try:
                    _knowledge, _selection, warnings = _parse(directory)
                except KnowledgeError as e:
                    raise _refuse(str(e).replace(str(directory), f"{task}/")) from None
                (work / ZIP_FILE).write_bytes(data)
                draft = Draft(
                    id=draft_id,
                    task=task,
                    file_name=PurePosixPath(file_name.replace("\\", "/")).name or "draft.zip",
                    uploader=uploader or _default_uploader(),
                    created_at=_now(),
                    warnings=warnings,
                    zip_bytes=len(data),
                    extracted_bytes=extracted,
                    entries=len(plan.entries),
                    folder=self.root / draft_id,
                )
                (work / META_FILE).write_text(
                    json.dumps(draft.metadata(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
                )
                try:
                    os.rename(work, self.root / draft_id)
                except OSError:  # stored meanwhile by another process: that one is the draft
                    found = self._find(draft_id)
                    if found is None:
                        raise
                    shutil.rmtree(work, ignore_errors=True)
                    return found
                return draft
            except BaseException:
                shutil.rmtree(work, ignore_errors=True)
                raise

    def store_file(self, path: Path | str, *, uploader: str | None = None) -> Draft:
        """Stores the zip at ``path`` under its file name (see :func:`read_zip`)."""
        return self.store(read_zip(path), Path(path).name, uploader=uploader)

    # reading

    def _find(self, draft_id: str) -> Draft | None:
        folder = self.root / draft_id
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise DraftError(f"draft {draft_id}: its {META_FILE} cannot be read ({e})") from None
        return Draft.model_validate({**meta, "folder": folder})

    def exists(self, draft_id: str) -> bool:
        """Whether a draft of that id is stored."""
        key = draft_id.strip().lower()
        return bool(_ID.match(key)) and (self.root / key / META_FILE).is_file()

    def get(self, draft_id: str) -> Draft:
        """The draft of that id (its full SHA-256); :class:`DraftNotFound` when there is none."""
        key = draft_id.strip().lower()
        if not _ID.match(key):
            raise DraftNotFound(f"{draft_id!r} is not a draft id (a zip's SHA-256: 64 hex digits)")
        draft = self._find(key)
        if draft is None:
            raise DraftNotFound(f"no knowledge draft {key} in {self.root}")
        return draft

    def list(self) -> list[Draft]:
        """Every draft, oldest first."""
        if not self.root.is_dir():
            return []
        drafts = [self._find(p.name) for p in self.root.iterdir() if _ID.match(p.name) and p.is_dir()]
        return sorted((d for d in drafts if d is not None), key=lambda d: (d.created_at, d.id))

    def archive(self, draft_id: str) -> bytes:
        """``draft.zip`` byte for byte (its uploaded name is ``get(draft_id).file_name``); checked
        against the id first, since a draft never changes."""
        draft = self.get(draft_id)
        data = draft.zip_path.read_bytes()
        if hashlib.sha256(data).hexdigest() != draft.id:
            raise DraftError(f"draft {draft.id}: its {ZIP_FILE} no longer hashes to its id")
        return data

    def knowledge_of(self, draft_id: str) -> DraftKnowledge:
        """What a run reads of the draft, parsed now by the published knowledge's own code
        (:func:`read_task`, :func:`select_examples`): its figures resolve inside the draft's directory."""
        draft = self.get(draft_id)
        try:
            knowledge, selection, _ = _parse(draft.directory)
        except KnowledgeError as e:
            raise DraftError(f"draft {draft.id}: {e}") from None
        return DraftKnowledge(draft, knowledge, selection.examples, selection.skipped)

    def for_task(self, draft_id: str, task: str) -> Draft:
        """The draft, when it is a draft of ``task``; :class:`DraftOfAnotherTask` when it is not."""
        draft = self.get(draft_id)
        if draft.task != task:
            raise DraftOfAnotherTask(
                f"knowledge draft {draft.id} ({draft.file_name}) is a draft of {draft.task}, not of {task}"
            )
        return draft


def draft_id_of(data: bytes) -> str:
    """The id a zip is stored under: its SHA-256, lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def read_zip(path: Path | str) -> bytes:
    """A zip file's bytes, its size checked against MAX_ZIP_BYTES before it is read."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_ZIP_BYTES:
            raise _refuse(
                f"the zip is {size:,} bytes; a draft's zip is at most {_mib(MAX_ZIP_BYTES)} (MAX_ZIP_BYTES)"
            )
        with open(path, "rb") as f:
            return f.read(MAX_ZIP_BYTES + 1)
    except OSError as e:
        raise DraftError(f"{path}: cannot be read: {e.strerror or e}") from None


def knowledge_of(draft_id: str, *, home: Path | str | None = None) -> DraftKnowledge:
    """:meth:`DraftStore.knowledge_of` on the drafts of ``home`` (default ``QSOLVE_HOME``)."""
    return DraftStore(home).knowledge_of(draft_id)


def for_task(draft_id: str, task: str, *, home: Path | str | None = None) -> Draft:
    """:meth:`DraftStore.for_task` on the drafts of ``home`` (default ``QSOLVE_HOME``)."""
    return DraftStore(home).for_task(draft_id, task)


# --- the published directory as a zip -------------------------------------------------------------


def _archive_files(root: Path) -> list[tuple[str, Path]]:
    """(name inside the task folder, file): the directory's files a draft accepts, sorted by name. A
    symbolic link is followed only to a file inside the directory; links to folders are not walked."""
    found: list[tuple[str, Path]] = []
    real_root = root.resolve()

    def walk(folder: Path, prefix: str) -> None:
        for child in sorted(folder.iterdir(), key=lambda p: p.name):
            name = f"{prefix}{child.name}"
            if child.is_symlink():
                target = child.resolve()
                if not target.is_file() or not target.is_relative_to(real_root):
                    continue
            if child.is_dir() and not child.is_symlink():
                walk(child, f"{name}/")
            elif child.is_file() and child.suffix.lower() in ALLOWED_SUFFIXES:
                found.append((name, child))

    walk(root, "")
    return sorted(found)


def task_archive(task_dir: Path | str) -> bytes:
    """The task directory as a draft's zip: its files of the types a draft accepts, under one folder
    named as the task, sorted by name, each stored (not deflated, so the bytes do not depend on the zlib
    at hand) with the timestamp 1980-01-01 00:00:00 and the permissions rw-r--r--; no folder entries.
    The same directory gives the same bytes, and they store as a draft unchanged (the same reference
    and examples)."""
    root = Path(task_dir)
    if not (root / TASK_FILE).is_file():
        raise DraftError(f"{root}: not a task directory (no {TASK_FILE})")
    task = root.resolve().name
    files = _archive_files(root)
    if len(files) > MAX_ENTRIES:
        raise DraftError(f"{root}: {len(files)} files; a draft holds at most {MAX_ENTRIES} (MAX_ENTRIES)")
    buffer = io.BytesIO()
    total = 0
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, path in files:
            data = path.read_bytes()
            total += len(data)
            if total > MAX_EXTRACTED_BYTES:
                raise DraftError(
                    f"{root}: more than {_mib(MAX_EXTRACTED_BYTES)} of files (MAX_EXTRACTED_BYTES)"
                )
            info = zipfile.ZipInfo(f"{task}/{name}", date_time=ARCHIVE_DATE_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            zf.writestr(info, data)
    out = buffer.getvalue()
    if len(out) > MAX_ZIP_BYTES:
        raise DraftError(
            f"{root}: its zip would be {len(out):,} bytes; a draft's is at most {_mib(MAX_ZIP_BYTES)}"
        )
    return out
