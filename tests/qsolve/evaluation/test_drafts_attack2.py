"""Knowledge drafts attacked again (issue 27 tester, h27b), after the rewrite through ZipFile.open on a
copy of each entry's record bounded by its region. What is wanted of every zip: a refusal
(``DraftRefused`` naming the entry) or an exact extraction of what the central directory states; never
more than 50 MiB written, nothing outside the draft folder, nothing left after a refusal, bounded memory,
no exception other than ``DraftRefused``; and (docs/calibration.md) each local header agreeing with its
record, "for a tool that reads local headers gets the same file from the archive handed on".

The first part are findings (they fail on the code as it is); the second part attacks that hold, and
ordinary zips (Info-ZIP's ``zip -r``, Python's own writer, with and without data descriptors, Zip64, a
self-extracting stub) that must keep storing on a zipfile with gh-109858's overlap check (Python 3.11.7
here already has it: ``_end_offset`` in ZipInfo's slots)."""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from qsolve.evaluation import drafts
from qsolve.evaluation.drafts import DraftRefused, DraftStore

from .test_drafts_by_hand import (
    DEFLATED,
    KNOWLEDGE,
    NOTE,
    STORED,
    TASK,
    TASK_MD,
    TEXT,
    assemble,
    central,
    deflate,
    local,
    nothing_stored,
    refused,
    task_entry,
    zipfile_with_overlap_check,
)

F32 = 0xFFFFFFFF


def zip64(*values: int) -> bytes:
    return struct.pack("<HH", 1, 8 * len(values)) + b"".join(struct.pack("<Q", v) for v in values)


def entry(name: bytes, content: bytes, offset: int, method: int = DEFLATED, **kw) -> tuple[bytes, bytes]:
    comp = deflate(content) if method == DEFLATED else content
    crc = zlib.crc32(content)
    return (
        local(name, method, crc, len(comp), len(content), extra=kw.get("lextra", b"")) + comp,
        central(name, method, crc, len(comp), len(content), offset, extra=kw.get("cextra", b"")),
    )


def with_file(name: bytes, content: bytes = TEXT, method: int = DEFLATED) -> bytes:
    body, task = task_entry()
    data, record = entry(name, content, len(body), method)
    return assemble(body + data, [task, record])


def stores_or_refuses(store: DraftStore, data: bytes) -> None:
    """Whatever the zip, store() either stores it or raises DraftRefused (leaving nothing)."""
    try:
        store.store(data, "attack.zip")
    except DraftRefused:
        assert nothing_stored(store)


def zip_of(folder: Path, arcroot: Path, *, writer: io.RawIOBase | io.BytesIO, method: int) -> None:
    with zipfile.ZipFile(writer, "w", method) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, str(path.relative_to(arcroot)))


class _Unseekable(io.RawIOBase):
    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self.data += b
        return len(b)


# --- findings ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [b"CheckT1/" + b"a" * 300 + b".md", b"CheckT1/" + b"d/" * 2100 + b"x.md"],
    ids=["component-over-255-bytes", "path-over-PATH_MAX"],
)
def test_a_name_the_file_system_cannot_take_is_refused_not_an_oserror(store: DraftStore, name: bytes) -> None:
    """Finding: ``OSError: [Errno 36] File name too long`` escapes store() (open(target, "xb") and
    mkdir(parents=True) in _extract are outside the caught exceptions). A name component over 255 bytes
    or a path over 4096 is a valid zip name; it must be refused, naming the entry."""
    refused(store, with_file(name), name.decode())


@pytest.mark.parametrize("where", ["task.md", "examples/01-x.md"])
def test_frontmatter_nested_deeper_than_yaml_recurses_is_no_recursion_error(
    store: DraftStore, where: str
) -> None:
    """Finding: a 4 KB task.md (or example) whose frontmatter nests 2,000 flow sequences
    (``x: [[[[...]]]]``) makes PyYAML's composer raise RecursionError, which split_frontmatter does not
    catch (only yaml.YAMLError): store() raises RecursionError, not DraftRefused."""
    deep = "---\nname: CheckT1\nx: " + "[" * 2000 + "]" * 2000 + "\n---\n# T\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("CheckT1/task.md", deep if where == "task.md" else TASK_MD)
        if where != "task.md":
            zf.writestr(f"CheckT1/{where}", deep.replace("name: CheckT1", "type: qdash.calibration-example"))
    stores_or_refuses(store, buffer.getvalue())


def test_a_yaml_alias_bomb_in_an_example_is_not_expanded(store: DraftStore) -> None:
    """Finding (bounded memory): YAML aliases are shared, but read_example's _text() calls str() on the
    frontmatter's title/outcome/status, expanding them. Seven levels of ten (a 522-byte example) give a 50
    MB title here (1.3 s); nine levels (640 bytes, a 31 KB zip) want some 5 GB: under a 400 MB address
    limit store() dies of MemoryError after 8.5 s of CPU. Wanted: refused, or the example skipped, or
    its values not expanded."""
    levels = 7
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    md = (
        "---\ntype: qdash.calibration-example\nprofile: qdash-calibration/v1\n"
        + "\n".join(lines)
        + f"\ntitle: *a{levels - 1}\noutcome: expected\nfigure: 01-success.png\n---\n# bomb\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("CheckT1/task.md", TASK_MD)
        zf.writestr("CheckT1/examples/01-success.md", md)
        zf.writestr(
            "CheckT1/examples/01-success.png", (KNOWLEDGE / "CheckT1/examples/01-success.png").read_bytes()
        )
    try:
        draft = store.store(buffer.getvalue(), "bomb.zip")
    except DraftRefused:
        return
    read = store.knowledge_of(draft.id)
    longest = max((len(e.title) for e in read.examples), default=0)
    assert longest < 100_000, f"an example's title of {longest:,} characters from a {len(md)}-byte file"


def test_a_central_directory_longer_than_its_end_record_counts_is_refused_before_zipfile_parses_it(
    store: DraftStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding: _entries_at_most trusts the end record's count, but zipfile reads the central directory
    by its size, not its count. An end record counting 1 entry over a 20 MiB directory of 440,000
    records passes the pre-check; zipfile builds 440,000 ZipInfo (4.7 s of CPU, +152 MB peak RSS here)
    before _plan refuses them."""
    record = central(b"a", STORED, 0, 0, 0, 0)
    body = local(b"a", STORED, 0, 0, 0)
    cd = record * 440_000
    data = body + cd + struct.pack("<4sHHHHLLH", b"PK\x05\x06", 0, 0, 1, 1, len(cd), len(body), 0)
    assert len(data) <= drafts.MAX_ZIP_BYTES
    built = 0

    class Counting(zipfile.ZipInfo):
        __slots__ = ()

        def __init__(self, *args, **kwargs) -> None:
            nonlocal built
            built += 1
            if built > 10 * drafts.MAX_ENTRIES:
                raise AssertionError(f"zipfile parsed {built:,} records of a zip whose end record counts 1")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(zipfile, "ZipInfo", Counting)
    started = time.process_time()
    with pytest.raises(DraftRefused, match="MAX_ENTRIES"):
        store.store(data, "many.zip")
    assert time.process_time() - started < 2.0


def _folder_zip(folder_offset: int | None = None, folder_extra: bytes = b"") -> bytes:
    """task.md, then a stored local header of CheckT1/evil.sh (a shell script), which the central directory
    calls the folder CheckT1/sub/ (or the folder's record points at ``folder_offset``)."""
    body, task = task_entry()
    evil = b"#!/bin/sh\necho pwned\n"
    hidden, _ = entry(b"CheckT1/evil.sh", evil, 0, STORED)
    at = len(body) if folder_offset is None else folder_offset
    return assemble(body + hidden, [task, central(b"CheckT1/sub/", STORED, 0, 0, 0, at, extra=folder_extra)])


@pytest.mark.parametrize("case", ["local-header-of-a-file", "offset-past-the-zip"])
def test_a_folder_entrys_local_header_is_held_to_its_record(store: DraftStore, case: str) -> None:
    """Finding (the documented rule "each local header ... must agree with it"): folder entries are never
    opened, so their local headers are not read at all. Stored: a folder CheckT1/sub/ whose local header
    is CheckT1/evil.sh with data (``unzip`` warns 'mismatching "local" filename'; a streaming reader makes
    evil.sh); and a folder whose Zip64 offset is 2**62 (``unzip`` of the stored draft.zip: 'bad zipfile
    offset (lseek)', exit 3)."""
    data = _folder_zip() if case == "local-header-of-a-file" else _folder_zip(F32, zip64(1 << 62))
    refused(store, data, "CheckT1/sub/")


def test_a_unicode_path_extra_field_naming_another_file_is_refused(store: DraftStore) -> None:
    """Finding: Info-ZIP's Unicode Path extra field (0x7075, its CRC-32 that of the record's name) is not
    looked at. drafts.py extracts CheckT1/x.md; ``unzip`` of the same draft.zip writes CheckT1/run.sh (a
    type a draft refuses), and so does Python 3.12+'s zipfile, which takes that name as ZipInfo.filename
    (drafts.py reads orig_filename)."""
    body, task = task_entry()
    comp, crc = deflate(TEXT), zlib.crc32(TEXT)
    other = b"CheckT1/run.sh"
    extra = struct.pack("<HHBL", 0x7075, 5 + len(other), 1, zlib.crc32(NOTE)) + other
    data = assemble(
        body + local(NOTE, DEFLATED, crc, len(comp), len(TEXT), extra=extra) + comp,
        [task, central(NOTE, DEFLATED, crc, len(comp), len(TEXT), len(body), extra=extra)],
    )
    refused(store, data, NOTE.decode())


def test_a_local_header_whose_sizes_and_crc_are_not_its_records_is_refused(store: DraftStore) -> None:
    """Finding (the same rule): without a data descriptor (flag 0x08) the local header's CRC-32 and sizes
    are not compared with the record's. A stored x.md whose local header says 4 bytes ('# x\\n') and whose
    record says 4 + what follows: a hidden local header of CheckT1/hidden.sh. drafts.py extracts x.md
    with the hidden header inside; a reader that goes by local headers extracts '# x\\n' and hidden.sh."""
    body, task = task_entry()
    hidden, _ = entry(b"CheckT1/hidden.sh", b"#!/bin/sh\necho pwned\n", 0, STORED)
    inner = b"# x\n" + hidden
    header = local(NOTE, STORED, zlib.crc32(b"# x\n"), 4, 4)
    data = assemble(
        body + header + inner,
        [task, central(NOTE, STORED, zlib.crc32(inner), len(inner), len(inner), len(body))],
    )
    refused(store, data, NOTE.decode())


@pytest.mark.parametrize("method", [STORED, DEFLATED])
def test_a_local_header_hidden_after_an_entrys_data_is_refused(store: DraftStore, method: int) -> None:
    """Finding (the same rule; a judgement call): the bytes between an entry's data and the end of its
    region are not looked at. Here they hold a whole local entry, CheckT1/hidden.sh, which the central
    directory does not list: drafts.py and unzip extract x.md; a streaming reader (local headers in
    order) extracts hidden.sh as well. Ordinary writers leave nothing there but a data descriptor."""
    body, task = task_entry()
    data_, record = entry(NOTE, TEXT, len(body), method)
    hidden, _ = entry(b"CheckT1/hidden.sh", b"#!/bin/sh\necho pwned\n", 0, STORED)
    refused(store, assemble(body + data_ + hidden, [task, record]), NOTE.decode())


# --- attacks that hold -------------------------------------------------------------------------------------


def test_zip64_records_with_sizes_and_offset_in_the_extra_field_store(store: DraftStore) -> None:
    body, task = task_entry()
    comp, crc = deflate(TEXT), zlib.crc32(TEXT)
    data = assemble(
        body + local(NOTE, DEFLATED, crc, F32, F32, extra=zip64(len(TEXT), len(comp))) + comp,
        [task, central(NOTE, DEFLATED, crc, F32, F32, F32, extra=zip64(len(TEXT), len(comp), len(body)))],
    )
    assert (store.store(data, "z64.zip").directory / "x.md").read_bytes() == TEXT


@pytest.mark.parametrize(
    "case", ["zip64-huge-extracted", "zip64-stored-huge", "ffffffff-without-zip64", "offset-into-the-cd"]
)
def test_zip64_sizes_and_offsets_that_lie_are_refused(store: DraftStore, case: str) -> None:
    body, task = task_entry()
    comp, crc = deflate(TEXT), zlib.crc32(TEXT)
    at = len(body)
    deflated = body + local(NOTE, DEFLATED, crc, len(comp), len(TEXT)) + comp
    records = {
        "zip64-huge-extracted": central(NOTE, DEFLATED, crc, F32, F32, at, extra=zip64(1 << 40, len(comp))),
        "ffffffff-without-zip64": central(NOTE, DEFLATED, crc, F32, F32, at),
        "offset-into-the-cd": central(NOTE, DEFLATED, crc, len(comp), len(TEXT), len(deflated) + 5),
    }
    if case == "zip64-stored-huge":
        data = assemble(
            body + local(NOTE, STORED, crc, len(TEXT), len(TEXT)) + TEXT,
            [task, central(NOTE, STORED, crc, F32, F32, at, extra=zip64(1 << 40, 1 << 40))],
        )
    else:
        data = assemble(deflated, [task, records[case]])
    refused(store, data, NOTE.decode(), "corrupt")


def test_data_descriptors_store_when_the_record_has_the_sizes(store: DraftStore) -> None:
    body, task = task_entry()
    comp, crc = deflate(TEXT), zlib.crc32(TEXT)
    descriptor = struct.pack("<4sLLL", b"PK\x07\x08", crc, len(comp), len(TEXT))
    head = local(NOTE, DEFLATED, 0, 0, 0, flags=0x8)
    good = assemble(
        body + head + comp + descriptor,
        [task, central(NOTE, DEFLATED, crc, len(comp), len(TEXT), len(body), flags=8)],
    )
    assert (store.store(good, "dd.zip").directory / "x.md").read_bytes() == TEXT
    only_in_descriptor = assemble(
        body + head + comp + descriptor, [task, central(NOTE, DEFLATED, crc, 0, 0, len(body), flags=8)]
    )
    refused(
        DraftStore(store.root.parent / "other"), only_in_descriptor, NOTE.decode(), "the sizes the zip states"
    )


def test_empty_files_stored_and_deflated(store: DraftStore) -> None:
    """An empty deflate stream (``\\x03\\x00``, what zlib and Python's writer make) stores; a deflated
    entry of no bytes at all (no deflate stream; zipfile 3.11 itself reads it as b'') is refused as
    truncated: a note, no ordinary writer seen to make one."""
    body, task = task_entry()
    name = b"CheckT1/e.md"
    ok = assemble(
        body + local(name, DEFLATED, 0, 2, 0) + b"\x03\x00",
        [task, central(name, DEFLATED, 0, 2, 0, len(body))],
    )
    assert (store.store(ok, "e.zip").directory / "e.md").read_bytes() == b""
    stored = assemble(body + local(name, STORED, 0, 0, 0), [task, central(name, STORED, 0, 0, 0, len(body))])
    assert (DraftStore(store.root.parent / "s").store(stored).directory / "e.md").read_bytes() == b""
    none = assemble(
        body + local(name, DEFLATED, 0, 0, 0), [task, central(name, DEFLATED, 0, 0, 0, len(body))]
    )
    refused(DraftStore(store.root.parent / "n"), none, "CheckT1/e.md", "truncated")


@pytest.mark.parametrize("method", [STORED, DEFLATED])
def test_a_crc_mismatch_is_refused(store: DraftStore, method: int) -> None:
    body, task = task_entry()
    comp = deflate(TEXT) if method == DEFLATED else TEXT
    crc = zlib.crc32(TEXT) ^ 1
    data = assemble(
        body + local(NOTE, method, crc, len(comp), len(TEXT)) + comp,
        [task, central(NOTE, method, crc, len(comp), len(TEXT), len(body))],
    )
    refused(store, data, NOTE.decode(), "CRC-32")


def test_a_local_extra_field_ending_at_the_region_end_is_refused(store: DraftStore) -> None:
    body, task = task_entry()
    comp, crc = deflate(TEXT), zlib.crc32(TEXT)
    data = assemble(
        body + local(NOTE, DEFLATED, crc, len(comp), len(TEXT), extra_len=len(comp)) + comp,
        [task, central(NOTE, DEFLATED, crc, len(comp), len(TEXT), len(body))],
    )
    refused(store, data, NOTE.decode(), "corrupt")


def test_bytes_after_a_deflate_stream_that_the_directory_does_not_list_are_refused(store: DraftStore) -> None:
    """Nothing lies between an entry's data and the next local header but its data descriptor: bytes the
    directory does not account for are refused, whatever they are (here not even a header)."""
    body, task = task_entry()
    comp, crc = deflate(TEXT), zlib.crc32(TEXT)
    data = assemble(
        body + local(NOTE, DEFLATED, crc, len(comp), len(TEXT)) + comp + b"GARBAGE" * 100,
        [task, central(NOTE, DEFLATED, crc, len(comp), len(TEXT), len(body))],
    )
    refused(store, data, NOTE.decode(), "700 bytes between its data and the next entry")


def test_a_central_directory_in_another_order_than_the_offsets(store: DraftStore) -> None:
    note, note_record = entry(NOTE, TEXT, 0)
    task, task_record = entry(TASK, TASK_MD, len(note))
    draft = store.store(assemble(note + task, [task_record, note_record]), "order.zip")
    assert (draft.directory / "x.md").read_bytes() == TEXT and (
        draft.directory / "task.md"
    ).read_bytes() == TASK_MD


@pytest.mark.parametrize("name", [b"CheckT1\\x.md", b"CheckT1/a\\..\\..\\x.md", b"CheckT1/sub\\"])
def test_backslashes_are_refused(store: DraftStore, name: bytes) -> None:
    refused(store, with_file(name), name.decode(), "backslash")


def test_bombs_over_several_entries_are_stopped_at_the_limit(store: DraftStore) -> None:
    """Four deflated entries of 15 MiB of zeros each, their sizes stated truly (a lie is refused in the
    first entry, once it is out): the running total stops the fourth."""
    body, records = b"", []
    for i in range(4):
        zeros = bytes(15 << 20)
        comp, crc = deflate(zeros), zlib.crc32(zeros)
        name = f"CheckT1/z{i}.png".encode()
        records.append(central(name, DEFLATED, crc, len(comp), len(zeros), len(body)))
        body += local(name, DEFLATED, crc, len(comp), len(zeros)) + comp
    task_data, task_record = entry(TASK, TASK_MD, len(body))
    error = refused(store, assemble(body + task_data, [*records, task_record]), "CheckT1/z3.png")
    assert "MAX_EXTRACTED_BYTES" in str(error)


# --- ordinary zips store, on a zipfile with the overlap check ----------------------------------------------


def _stores_whole(store: DraftStore, data: bytes) -> None:
    draft = store.store(data, "CheckT1.zip")
    source = KNOWLEDGE / "CheckT1"
    for path in source.rglob("*"):
        if path.is_file():
            assert (draft.directory / path.relative_to(source)).read_bytes() == path.read_bytes()


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
@pytest.mark.parametrize("seekable", [True, False])
def test_pythons_own_writer_with_and_without_data_descriptors(
    store: DraftStore, monkeypatch: pytest.MonkeyPatch, method: int, seekable: bool
) -> None:
    """Written to an unseekable stream, zipfile uses data descriptors (flag 0x08)."""
    writer = io.BytesIO() if seekable else _Unseekable()
    zip_of(KNOWLEDGE / "CheckT1", KNOWLEDGE, writer=writer, method=method)
    data = writer.getvalue() if isinstance(writer, io.BytesIO) else bytes(writer.data)
    flags = {i.flag_bits & 0x8 for i in zipfile.ZipFile(io.BytesIO(data)).infolist()}
    assert flags == ({0} if seekable else {0x8})
    zipfile_with_overlap_check(monkeypatch)
    _stores_whole(store, data)


@pytest.mark.skipif(shutil.which("zip") is None, reason="Info-ZIP's zip is not installed")
@pytest.mark.parametrize(
    "command",
    [
        ["zip", "-qr", "OUT", "CheckT1"],
        ["zip", "-qr", "-fz", "OUT", "CheckT1"],
        ["zip", "-qr", "-0", "OUT", "CheckT1"],
        ["zip", "-qr", "-", "CheckT1"],
    ],
    ids=["zip-r", "zip-r-zip64", "zip-r-stored", "zip-r-to-a-pipe"],
)
def test_info_zip(
    store: DraftStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """``zip -r - CheckT1 | ...`` writes Zip64 local extra fields and data descriptors."""
    out = tmp_path / "a.zip"
    args = [str(out) if a == "OUT" else a for a in command]
    done = subprocess.run(
        args, cwd=KNOWLEDGE, capture_output=True, check=True, env={**os.environ, "ZIPOPT": ""}
    )
    data = done.stdout if "-" in args else out.read_bytes()
    zipfile_with_overlap_check(monkeypatch)
    _stores_whole(store, data)


@pytest.mark.skipif(shutil.which("zip") is None, reason="Info-ZIP's zip is not installed")
@pytest.mark.parametrize("adjust", [False, True], ids=["stub-prepended", "zip-A"])
def test_a_self_extracting_stub(
    store: DraftStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, adjust: bool
) -> None:
    """A stub before the zip: offsets shifted (zipfile's concat), or adjusted by ``zip -A``."""
    plain = tmp_path / "a.zip"
    subprocess.run(["zip", "-qr", str(plain), "CheckT1"], cwd=KNOWLEDGE, check=True)
    sfx = tmp_path / "sfx.zip"
    sfx.write_bytes(b"MZ" + bytes(5000) + plain.read_bytes())
    if adjust:
        subprocess.run(["zip", "-qA", str(sfx)], check=True)
    zipfile_with_overlap_check(monkeypatch)
    _stores_whole(store, sfx.read_bytes())
