"""Reading an uploaded folder's zip safely: one folder's files, and nothing else (issue 14, item 8; issue
33, item 2). Knowledge drafts (``qsolve.evaluation.drafts``) and workflow submissions from the pages
(``qsolve.workflow.upload``) read their zips here, each with its own :class:`ZipRules` (its bounds, the
file that marks its folder, the words its refusals use).

    rules = ZipRules(refused="draft refused", noun="a draft", ..., marker="task.md")
    with Reading(rules, data) as zipped:      # every rule on the directory checked; nothing written yet
        zipped.top, zipped.entries            # the top folder (None: files at the root), the entry count
        zipped.extract(into)                  # into: created here; the bytes written, counted as they come

The zip holds one folder: its files at the zip's root (``cd max-cut && zip -r ../wf.zip .``) with the
marker among them, or one top folder holding them (``zip -r wf.zip max-cut/``). Refused, each with one
line naming the rule and the entry (:class:`ZipRefused`, ``entry``): a link of any kind (Unix mode, a
link's extra field, a Windows reparse point), a device, FIFO or socket, an absolute path, a drive, ``..``
or any path outside the folder, a backslash, a ':' or a control character, two names one file system would
take as one, a file where a folder is needed, encryption, compression other than stored or deflated, more
than ``max_entries`` entries, more than ``max_zip_bytes`` zipped or ``max_extracted_bytes`` extracted
(counted as the bytes come out), a file type the rules do not allow, and a zip whose local headers and
central directory disagree.

The zip is read here, not by :meth:`zipfile.ZipFile.extractall`: :mod:`zipfile` parses the central
directory and, through :meth:`zipfile.ZipFile.open`, reads each entry's local header, inflates its data and
checks its CRC-32; the stream is opened with sizes bounded by the entry's region, not the zip's, and the
bytes are counted as they come out; the sizes the zip states are compared with what came out only
afterwards, and never used to decide how much to read. Each local header is held to its directory record
(flags, method, extra field, where its data start), which zipfile does not do. A refused zip leaves
nothing behind if the caller removes ``into`` (best in a temporary folder of its own). No Prefect, no
database.
"""

from __future__ import annotations

import copy
import io
import re
import stat
import struct
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any


class ZipRefused(ValueError):
    """A zip that breaks a rule, and why; ``entry`` names the zip entry at fault, when one is."""

    def __init__(self, message: str, *, entry: str | None = None) -> None:
        super().__init__(message)
        self.entry = entry


@dataclass(frozen=True)
class ZipRules:
    """What one kind of upload accepts, and the words its refusals use."""

    refused: str  #: how a refusal starts: ``draft refused``
    noun: str  #: what the zip is, in a refusal: ``a draft`` (``a draft holds no links``)
    directory: str  #: the folder it holds: ``task directory`` (``a path outside the task directory``)
    folder: str  #: that folder, as its paths are relative to it: ``task folder``
    owner: str  #: whose files they are: ``the task's`` (``macOS metadata ..., not the task's``)
    marker: str  #: the file the folder holds at its top: ``task.md``
    max_zip_bytes: int
    max_extracted_bytes: int
    max_entries: int
    #: the only file suffixes accepted (case ignored), and the rule as the refusal says it; None: any
    suffixes: tuple[str, ...] | None = None
    suffixes_rule: str = ""
    #: the one top folder's name must match this, as ``top_name_rule`` says; None: any name
    top_name: re.Pattern[str] | None = None
    top_name_rule: str = ""
    #: a second marker file deeper in the folder is refused
    one_marker: bool = False
    #: the zip itself, in the refusal of its size: ``a draft's zip`` unless given
    zip_noun: str = ""
    #: the exception raised: ZipRefused or a subclass of the caller's (its ``(message, entry=)``)
    error: type[ZipRefused] | Any = ZipRefused

    def refuse(self, problem: str, entry: str | None = None) -> ZipRefused:
        where = f"entry {entry!r}: " if entry is not None else ""
        return self.error(f"{self.refused}: {where}{problem}", entry=entry)


def mib(n: int) -> str:
    return f"{n:,} bytes ({n / (1024 * 1024):g} MiB)"


def check_size(r: ZipRules, data: bytes) -> None:
    """A zip past ``max_zip_bytes`` refused, before anything else is done with it."""
    if len(data) > r.max_zip_bytes:
        what = r.zip_noun or f"{r.noun}'s zip"
        raise r.refuse(
            f"the zip is {len(data):,} bytes; {what} is at most {mib(r.max_zip_bytes)} (MAX_ZIP_BYTES)"
        )


def open_zip(r: ZipRules, data: bytes) -> zipfile.ZipFile:
    """The zip's directory, read once its entry count is held to the bound; refused if it does not read."""
    entries_at_most(r, data)
    try:
        return zipfile.ZipFile(io.BytesIO(data))
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
        raise r.refuse(f"not a zip file, or a corrupt one ({e})") from None


class Reading:
    """An open zip whose directory has passed every rule (names, kinds, layout, bounds on the count):
    nothing is written until :meth:`extract`. A context manager; its zip is closed at the end."""

    def __init__(self, r: ZipRules, data: bytes) -> None:
        check_size(r, data)
        self.rules, self.data = r, data
        self.zip = open_zip(r, data)
        try:
            self.plan = _plan(r, self.zip, len(data))
        except BaseException:
            self.zip.close()
            raise

    @property
    def top(self) -> str | None:
        """The zip's top folder's name; None when the folder's files lie at the zip's root."""
        return self.plan.top

    @property
    def entries(self) -> int:
        """The zip's entries, folders included."""
        return len(self.plan.entries)

    def extract(self, into: Path) -> int:
        """The folder's content written into ``into`` (created here; its parent must exist), each entry's
        bytes counted as they come out; the bytes written. On a refusal ``into`` may hold part of the
        files: the caller removes it."""
        return _extract(self.rules, self.zip, self.data, self.plan, into)

    def __enter__(self) -> Reading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.zip.close()


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
#: PATH_MAX for the name beneath the folder it is unpacked into
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


# --- reading the zip: the plan --------------------------------------------------------------------


@dataclass
class _Entry:
    info: zipfile.ZipInfo
    name: str  #: the entry's name as the zip writes it
    relative: PurePosixPath | None  #: inside the folder; None for the top folder itself
    folder: bool


@dataclass
class _Plan:
    entries: list[_Entry]
    #: the top folder's name; None when the marker lies at the zip's root
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


def _check_extra(r: ZipRules, extra: bytes, name: str) -> None:
    """What an entry's extra field may not hold, in its directory record or its local header."""
    if _is_link_extra(extra):
        raise r.refuse(f"a link (a Unix extra field names its target); {r.noun} holds no links", name)
    if any(kind == _UNICODE_PATH_EXTRA for kind, _body in _extra_fields(extra)):
        raise r.refuse(
            f"a second name (Info-ZIP's Unicode Path field, 0x7075); {r.noun}'s entries have one name", name
        )


def _check_not_encrypted(r: ZipRules, flags: int, name: str) -> None:
    """The record's flags or the local header's."""
    if flags & _ENCRYPTED:
        raise r.refuse(f"encrypted; {r.noun}'s entries are not encrypted", name)


def _check_name(r: ZipRules, name: str) -> PurePosixPath:
    """The entry's path, or the reason it lies outside the zip's folder (entries name it)."""
    if not name:
        raise r.refuse("an empty name", name)
    if "\x00" in name:
        raise r.refuse("a NUL character in its name", name)
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise r.refuse("a control character in its name", name)
    if "\\" in name:
        raise r.refuse(
            f"a backslash in its path (a path separator on Windows; {r.noun}'s paths use '/')", name
        )
    if name.startswith("/"):
        raise r.refuse(f"an absolute path; {r.noun}'s paths are relative to its {r.folder}", name)
    if _DRIVE.match(name):
        raise r.refuse(f"a drive letter; {r.noun}'s paths are relative to its {r.folder}", name)
    if ":" in name:
        raise r.refuse("a ':' in its path (a drive or a Windows stream)", name)
    parts = name.rstrip("/").split("/")
    if any(p == ".." for p in parts):
        raise r.refuse(f"'..' in its path, a path outside the {r.directory}", name)
    if any(p in ("", ".") for p in parts):
        raise r.refuse("an empty or '.' component in its path", name)
    if len(name.encode("utf-8", errors="replace")) > MAX_NAME_BYTES:
        raise r.refuse(f"a name of more than {MAX_NAME_BYTES} bytes (MAX_NAME_BYTES)", name)
    if any(len(p.encode("utf-8", errors="replace")) > MAX_NAME_PART_BYTES for p in parts):
        raise r.refuse(
            f"a part of its path of more than {MAX_NAME_PART_BYTES} bytes (MAX_NAME_PART_BYTES)", name
        )
    if "__MACOSX" in parts:
        raise r.refuse(f"macOS metadata (__MACOSX; zip the folder with `zip -r -X`), not {r.owner}", name)
    return PurePosixPath(*parts)


def _check_kind(r: ZipRules, info: zipfile.ZipInfo, name: str, folder: bool) -> None:
    """Links, devices, encryption and compression methods: refused by the entry's own fields."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise r.refuse(f"a symbolic link (its external attributes say so); {r.noun} holds no links", name)
    _check_extra(r, info.extra, name)
    if info.external_attr & _DOS_REPARSE_POINT:
        raise r.refuse(f"a link (a Windows reparse point); {r.noun} holds no links", name)
    if kind in _NOT_REGULAR:
        raise r.refuse(f"{_NOT_REGULAR[kind]}, not a file; {r.noun} holds only files and folders", name)
    if kind == stat.S_IFDIR and not folder:
        raise r.refuse("a folder by its attributes but its name does not end in '/'", name)
    _check_not_encrypted(r, info.flag_bits, name)
    if folder:
        if info.file_size:
            raise r.refuse("a folder entry that holds data", name)
        return
    if info.compress_type not in _METHODS:
        method = _METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
        raise r.refuse(f"compressed with {method}; {r.noun}'s entries are stored or deflated", name)
    suffix = PurePosixPath(name).suffix.lower()
    if r.suffixes is not None and suffix not in r.suffixes:
        what = f"a {suffix} file" if suffix else "a file without a suffix"
        if PurePosixPath(name).name == ".DS_Store":
            what = "macOS metadata (zip the folder with `zip -r -X`)"
        raise r.refuse(f"{what}; {r.suffixes_rule}", name)


#: the end of central directory record (APPNOTE 4.3.16): its signature, and the offset of its total count
_EOCD, _EOCD_TOTAL, _EOCD_SIZE = b"PK\x05\x06", 10, 12
_CENTRAL = zipfile.stringCentralDir


def entries_at_most(r: ZipRules, data: bytes) -> None:
    """Refuse a zip whose end record counts more than ``max_entries`` entries before :class:`zipfile.ZipFile`
    reads its whole central directory (a 20 MiB zip can list some 230,000 entries: seconds and a hundred
    MiB to parse, for nothing). A zip whose count is not there to read (none, or a Zip64 0xFFFF) is left
    to zipfile and :func:`_plan`, which count again."""
    at = data.rfind(_EOCD, max(0, len(data) - 22 - 0xFFFF))
    if at < 0 or at + 22 > len(data):
        return
    total = int.from_bytes(data[at + _EOCD_TOTAL : at + _EOCD_TOTAL + 2], "little")
    if r.max_entries < total < 0xFFFF:
        raise r.refuse(f"the zip has {total} entries; {r.noun} holds at most {r.max_entries} (MAX_ENTRIES)")
    # zipfile reads the directory by its stated size, whatever the count says: its records are counted by
    # their signature in that many bytes before the end record (and the Zip64 end records, 76 bytes)
    size = int.from_bytes(data[at + _EOCD_SIZE : at + _EOCD_SIZE + 4], "little")
    records = data.count(_CENTRAL, max(0, at - size - 76), at)
    if records > r.max_entries:
        raise r.refuse(
            f"the zip's central directory holds {records} records; {r.noun} holds at most {r.max_entries} "
            "entries (MAX_ENTRIES)"
        )


def _plan(r: ZipRules, zf: zipfile.ZipFile, size: int) -> _Plan:
    """Every check that needs no extraction: names, kinds, layout, duplicates, overlaps."""
    infos = zf.infolist()
    if len(infos) > r.max_entries:
        raise r.refuse(
            f"the zip has {len(infos)} entries; {r.noun} holds at most {r.max_entries} (MAX_ENTRIES)"
        )
    if not infos:
        raise r.refuse(f"the zip is empty; {r.noun} is one {r.directory} holding {r.marker}")
    raw: list[tuple[zipfile.ZipInfo, str, PurePosixPath, bool]] = []
    for info in infos:
        name = info.orig_filename
        folder = name.endswith("/")
        path = _check_name(r, name)
        _check_kind(r, info, name, folder)
        raw.append((info, name, path, folder))

    # the layout: one top folder holding the marker, or the marker at the zip's root
    at_root = [name for _info, name, path, folder in raw if not folder and len(path.parts) == 1]
    if at_root:
        top = None
        if not any(n == r.marker for n in at_root):
            raise r.refuse(
                f"a file at the zip's root but no {r.marker} there; {r.noun} is one {r.directory}",
                at_root[0],
            )
    else:
        tops = list(dict.fromkeys(path.parts[0] for _i, _n, path, _f in raw))
        top = tops[0]
        if len(tops) > 1:
            second = next(name for _i, name, path, _f in raw if path.parts[0] != top)
            raise r.refuse(
                f"a second top folder {PurePosixPath(second).parts[0]!r} beside {top!r}; {r.noun} is one "
                f"{r.directory}",
                second,
            )
        if r.top_name is not None and not r.top_name.match(top):
            raise r.refuse(
                f"the {r.folder} {top!r} is not {r.top_name_rule}",
                next(name for _i, name, _p, _f in raw),
            )
        if not any(not f and path == PurePosixPath(top, r.marker) for _i, _n, path, f in raw):
            raise r.refuse(f"no {top}/{r.marker}: the zip's one folder is not a {r.directory}")

    entries: list[_Entry] = []
    seen: dict[str, str] = {}  # a name as one file system or another would take it -> the entry's name
    files: dict[str, str] = {}

    def key(path: PurePosixPath) -> str:  # case and Unicode form ignored, as some file systems do
        return unicodedata.normalize("NFC", str(path)).casefold()

    for info, name, path, folder in raw:
        relative = path if top is None else (PurePosixPath(*path.parts[1:]) if len(path.parts) > 1 else None)
        if relative is None:  # the top folder's own entry
            entries.append(_Entry(info, name, None, True))
            continue
        if r.one_marker and not folder and relative.name.casefold() == r.marker and len(relative.parts) > 1:
            raise r.refuse(f"a second {r.marker}: {r.noun} is one {r.directory}", name)
        kind = key(relative) + ("/" if folder else "")
        if kind in seen:
            same = (
                "the same name" if seen[kind] == name else f"the same name as {seen[kind]!r} (case ignored)"
            )
            raise r.refuse(f"a second entry of {same}", name)
        seen[kind] = name
        if not folder:
            files[key(relative)] = name
        entries.append(_Entry(info, name, relative, folder))
    for entry in entries:  # a file where another entry needs a folder
        if entry.relative is None:
            continue
        for parent in entry.relative.parents:
            if key(parent) in files:
                raise r.refuse(f"a file where {entry.name!r} needs a folder", files[key(parent)])
        if entry.folder and key(entry.relative) in files:
            raise r.refuse(
                f"a folder of the same name as the file {files[key(entry.relative)]!r}", entry.name
            )

    # each entry's data lie between its local header and the next one; two entries never share them
    end_of_entries = min(getattr(zf, "start_dir", size), size)
    offsets = sorted(e.info.header_offset for e in entries)
    bounds: dict[int, int] = {}
    for e in entries:
        if not 0 <= e.info.header_offset < end_of_entries:
            raise _corrupt(r, "its local header lies outside the zip's entries", e.name)
    for i, offset in enumerate(offsets):
        if i and offset == offsets[i - 1]:
            names = [e.name for e in entries if e.info.header_offset == offset]
            raise r.refuse(f"its data are those of {names[0]!r} (overlapping entries)", names[1])
        bounds[offset] = offsets[i + 1] if i + 1 < len(offsets) else end_of_entries
    return _Plan(entries, top, bounds)


# --- reading the zip: extraction ------------------------------------------------------------------


class _Budget:
    """The running total of extracted bytes, against ``max_extracted_bytes``."""

    def __init__(self, r: ZipRules) -> None:
        self.r, self.total = r, 0

    def take(self, n: int, name: str) -> None:
        self.total += n
        if self.total > self.r.max_extracted_bytes:
            raise self.r.refuse(
                f"the zip extracts to more than {mib(self.r.max_extracted_bytes)} (MAX_EXTRACTED_BYTES), "
                "counted while extracting; stopped in this entry",
                name,
            )


def _corrupt(r: ZipRules, problem: str, name: str) -> ZipRefused:
    return r.refuse(f"corrupt: {problem}", name)


def _data_start(r: ZipRules, data: bytes, entry: _Entry, end: int) -> tuple[int, tuple[int, int, int] | None]:
    """Where the entry's data start: after its local header, read with zipfile's own layout of it
    (``structFileHeader``) and held to the central directory's record, which zipfile does not do beyond the
    name: a reader that goes by the local header (Info-ZIP's unzip, for one) must find the same file there
    as this one, for an archive may be handed on byte for byte (a draft's is)."""
    info, name = entry.info, entry.name
    at = info.header_offset
    if at < 0 or at + zipfile.sizeFileHeader > end:
        raise _corrupt(r, "its local header lies outside the zip", name)
    header = struct.unpack_from(zipfile.structFileHeader, data, at)
    if header[0] != zipfile.stringFileHeader:
        raise _corrupt(r, "no local header where the directory says it is", name)
    flags, method, crc, compressed, size, name_length, extra_length = header[3:5] + header[7:12]
    _check_not_encrypted(r, flags, name)
    if method != info.compress_type:
        raise _corrupt(r, "its local header and the directory give different compression methods", name)
    encoding = "utf-8" if info.flag_bits & _UTF8_NAME else "cp437"
    name_at = at + zipfile.sizeFileHeader
    if data[name_at : name_at + name_length] != name.encode(encoding, errors="replace"):
        raise _corrupt(r, "its local header names another file than the directory does", name)
    extra_at = name_at + name_length
    _check_extra(r, data[extra_at : extra_at + extra_length], name)
    start = extra_at + extra_length
    if start > end:
        raise _corrupt(r, "its local header runs into the next entry", name)
    return start, None if flags & _DATA_DESCRIPTOR else (crc, compressed, size)


def _agrees(r: ZipRules, entry: _Entry, stated: tuple[int, int, int] | None) -> None:
    """The CRC-32 and sizes a local header states (where no data descriptor follows the data) are its
    record's (a Zip64 header's 0xFFFFFFFF stands for a size in its extra field)."""
    info = entry.info
    if stated is None:
        return
    crc, compressed, size = stated
    sizes = ((compressed, info.compress_size), (size, info.file_size))
    if crc != info.CRC or any(local != record and local != 0xFFFFFFFF for local, record in sizes):
        raise _corrupt(r, "its local header and the directory give different CRC-32s or sizes", entry.name)


def _fits(r: ZipRules, entry: _Entry, start: int, end: int) -> int:
    """Where the entry's data end by its stated compressed size, which must lie within its region."""
    if start + entry.info.compress_size > end:
        raise _corrupt(r, "its data run past the end of its region (truncated)", entry.name)
    return start + entry.info.compress_size


def _stream(
    r: ZipRules, zf: zipfile.ZipFile, entry: _Entry, start: int, end: int
) -> tuple[Any, zipfile.ZipInfo]:
    """The entry's bytes as they come out, through :meth:`zipfile.ZipFile.open` (which reads the local
    header, checks its name, inflates, and checks the CRC-32 where the data end), opened on a copy of the
    entry's record whose sizes are its region's, not the zip's: a stored entry's data must fit between
    ``start`` and ``end`` (the next entry's local header or the central directory); a deflated entry's
    stream may read that far and gives what its deflate stream holds, whatever size the zip states. So the
    stated sizes never decide how much is read: the count of what comes out does."""
    info = entry.info
    bounded = copy.copy(info)
    if info.compress_type == zipfile.ZIP_STORED:
        _fits(r, entry, start, end)
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


def _nothing_after(r: ZipRules, entry: _Entry, data_end: int, end: int) -> None:
    """Between an entry's data and the next local header lies nothing, or its data descriptor: bytes a
    reader that walks local headers in order would read as another entry are not hidden there."""
    slack = end - data_end
    if slack and not (entry.info.flag_bits & _DATA_DESCRIPTOR and slack in _DESCRIPTOR_LENGTHS):
        raise _corrupt(
            r,
            f"{slack:,} bytes between its data and the next entry, which the directory lists as none",
            entry.name,
        )


def _extract_entry(
    r: ZipRules, zf: zipfile.ZipFile, data: bytes, entry: _Entry, end: int, target: Path, budget: _Budget
) -> int:
    """Writes one file, counting its bytes as they come out, 64 KiB at a time; the sizes the zip states are
    compared with what came out only afterwards."""
    info, name = entry.info, entry.name
    size, compressed = 0, info.compress_size
    start, stated = _data_start(r, data, entry, end)
    try:
        stream, bounded = _stream(r, zf, entry, start, end)
        with stream, open(target, "xb") as out:
            while chunk := stream.read(_CHUNK):
                budget.take(len(chunk), name)
                size += len(chunk)
                out.write(chunk)
            if info.compress_type == zipfile.ZIP_DEFLATED:
                compressed = _deflated_length(stream, bounded)
    except (zipfile.BadZipFile, EOFError, UnicodeDecodeError, zlib.error, NotImplementedError) as e:
        raise _corrupt(r, f"its local header or data cannot be read ({e})", name) from None
    if compressed is None:
        raise _corrupt(r, "its deflated data end before the deflate stream does (truncated)", name)
    if size != info.file_size or compressed != info.compress_size:
        raise _corrupt(
            r,
            f"the sizes the zip states ({info.compress_size:,} compressed, {info.file_size:,} extracted) "
            f"are not its data's ({compressed:,} compressed, {size:,} extracted)",
            name,
        )
    _agrees(r, entry, stated)
    _nothing_after(r, entry, start + compressed, end)
    return size


def _extract(r: ZipRules, zf: zipfile.ZipFile, data: bytes, plan: _Plan, into: Path) -> int:
    """Extracts the plan's entries into ``into`` (the folder's content); the bytes written."""
    budget = _Budget(r)
    into.mkdir()
    for entry in plan.entries:
        end = plan.bounds[entry.info.header_offset]
        if entry.folder:  # never opened: its local header is held to its record here
            start, stated = _data_start(r, data, entry, end)
            data_end = _fits(r, entry, start, end)  # an empty deflate stream, say
            _agrees(r, entry, stated)
            _nothing_after(r, entry, data_end, end)
        if entry.relative is None:
            continue
        target = into.joinpath(*entry.relative.parts)
        if entry.folder:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        _extract_entry(r, zf, data, entry, end, target, budget)
    return budget.total
