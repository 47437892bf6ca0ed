"""Knowledge drafts read through zipfile's own streams (issue 27, item 6), attacked with zips made by hand,
every header field under the test's control (an independent tester's attack): what zipfile does not check
(the local header against the directory, where a deflate stream ends, the compressed size) drafts.py does,
so each of these is refused as it was when drafts.py parsed local headers itself, or stored as it was."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest

from qsolve.evaluation import drafts
from qsolve.evaluation.drafts import DraftRefused, DraftStore

from .test_drafts import KNOWLEDGE, TASK_MD, nothing_stored

DEFLATED, STORED = 8, 0
TASK = b"CheckT1/task.md"
NOTE = b"CheckT1/x.md"
TEXT = b"# x\n" + b"hello world " * 300


def deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def local(name, method, crc, csize, usize, *, extra=b"", extra_len=None, flags=0) -> bytes:
    n = len(extra) if extra_len is None else extra_len
    head = struct.pack(
        "<4sHHHHHLLLHH", b"PK\x03\x04", 20, flags, method, 0, 0x21, crc, csize, usize, len(name), n
    )
    return head + name + extra


def central(name, method, crc, csize, usize, offset, *, extra=b"", flags=0) -> bytes:
    mode = 0o100644 << 16
    head = struct.pack(
        "<4sHHHHHHLLLHHHHHLL",
        *(b"PK\x01\x02", 0x031E, 20, flags, method, 0, 0x21, crc, csize, usize),
        *(len(name), len(extra), 0, 0, 0, mode, offset),
    )
    return head + name + extra


def assemble(body: bytes, centrals: list[bytes]) -> bytes:
    cd = b"".join(centrals)
    return (
        body
        + cd
        + struct.pack("<4sHHHHLLH", b"PK\x05\x06", 0, 0, len(centrals), len(centrals), len(cd), len(body), 0)
    )


def task_entry() -> tuple[bytes, bytes]:
    comp = deflate(TASK_MD)
    crc = zlib.crc32(TASK_MD)
    return local(TASK, DEFLATED, crc, len(comp), len(TASK_MD)) + comp, central(
        TASK, DEFLATED, crc, len(comp), len(TASK_MD), 0
    )


def with_note(local_header: bytes, data: bytes, central_fields: dict | None = None) -> bytes:
    """task.md, then x.md: its local header as given, then ``data``; its central record TEXT's, deflated,
    unless ``central_fields`` say otherwise."""
    body, task = task_entry()
    comp = deflate(TEXT)
    fields = {"method": DEFLATED, "crc": zlib.crc32(TEXT), "csize": len(comp), "usize": len(TEXT)}
    fields |= central_fields or {}
    record = central(NOTE, fields["method"], fields["crc"], fields["csize"], fields["usize"], len(body))
    return assemble(body + local_header + data, [task, record])


def refused(store: DraftStore, data: bytes, entry: str, *words: str) -> DraftRefused:
    try:
        draft = store.store(data, "attack.zip")
    except DraftRefused as e:
        assert e.entry == entry, str(e)
        for word in words:
            assert word in str(e), str(e)
        assert nothing_stored(store)
        return e
    files = sorted(str(p.relative_to(draft.directory)) for p in draft.directory.rglob("*") if p.is_file())
    pytest.fail(f"stored as draft {draft.id[:12]}, extracting {files}")


def zipfile_with_overlap_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """zipfile as CPython has it since gh-109858 (3.13.0 here, and the 3.12 and 3.11 security releases
    that took it): ``ZipFile.open`` refuses an entry whose stream would read past the next local header
    (``Overlapped entries``). On a zipfile that has it already, nothing to do."""
    import zipfile

    if "_end_offset" in getattr(zipfile.ZipInfo, "__slots__", ()):
        return
    original = zipfile.ZipFile.open

    def open_(self, name, mode="r", pwd=None, *, force_zip64=False):
        stream = original(self, name, mode, pwd, force_zip64=force_zip64)
        if mode == "r" and isinstance(name, zipfile.ZipInfo):
            later = [i.header_offset for i in self.filelist if i.header_offset > name.header_offset]
            end = min(later, default=self.start_dir)
            if stream._fileobj.tell() + name.compress_size > end:
                stream.close()
                raise zipfile.BadZipFile(f"Overlapped entries: {name.orig_filename!r} (possible zip bomb)")
        return stream

    monkeypatch.setattr(zipfile.ZipFile, "open", open_)


# --- a zip as ordinary tools make it ------------------------------------------------------------------


def info_zip_style(tmp_path: Path) -> bytes:
    """CheckT1 zipped as ``cd task-knowledge && zip -r CheckT1.zip CheckT1`` does (docs/calibration.md
    says ``zip -r``): each local header carries Info-ZIP's extended timestamp and Unix uid/gid fields
    (0x5455 "UT", 0x7875 "ux"), the central records a shorter UT."""
    ut_local = struct.pack("<HHBLL", 0x5455, 9, 3, 1_700_000_000, 1_700_000_000)
    ux = struct.pack("<HHBBLBL", 0x7875, 11, 1, 4, 0, 4, 0)
    ut_central = struct.pack("<HHBL", 0x5455, 5, 3, 1_700_000_000)
    body, records = b"", []
    for path in sorted((KNOWLEDGE / "CheckT1").rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        name = str(path.relative_to(KNOWLEDGE)).encode()
        comp, crc = deflate(data), zlib.crc32(data)
        records.append(central(name, DEFLATED, crc, len(comp), len(data), len(body), extra=ut_central))
        body += local(name, DEFLATED, crc, len(comp), len(data), extra=ut_local + ux) + comp
    return assemble(body, records)


def test_a_zip_with_local_extra_fields_stores_with_python_313s_zipfile(
    store: DraftStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deflated entry's stream reaches no further than the next local header, its local extra field
    counted: zipfile 3.13 refuses one that would ("corrupt: ... Overlapped entries"), and a plain ``zip -r``
    of a task folder (Info-ZIP writes local extra fields) was refused there (requires-python is >=3.11)."""
    data = info_zip_style(tmp_path)
    zipfile_with_overlap_check(monkeypatch)
    draft = store.store(data, "CheckT1.zip")
    assert draft.task == "CheckT1" and (draft.directory / "task.md").read_bytes() == TASK_MD


# --- what zipfile does not check, drafts.py does -----------------------------------------------------------


def test_two_entries_sharing_their_data_through_a_local_extra_field_are_refused(store: DraftStore) -> None:
    """Refused ('its local header runs into the next entry'): a.md's local extra field runs over
    its own padding and b.md's local header, so a.md's data are b.md's: two files from one data run, a
    quoted overlap the offsets check does not see. Stored, with a.md == b.md."""
    body, task = task_entry()
    secret = b"# b\n" + b"B" * 5000
    comp, crc = deflate(secret), zlib.crc32(secret)
    a, b = b"CheckT1/a.md", b"CheckT1/b.md"
    pad = len(comp) + 10
    b_local = local(b, DEFLATED, crc, len(comp), len(secret))
    a_local = local(a, DEFLATED, crc, len(comp), len(secret), extra_len=pad + len(b_local))
    a_at, b_at = len(body), len(body) + len(a_local) + pad
    data = assemble(
        body + a_local + bytes(pad) + b_local + comp,
        [
            task,
            central(a, DEFLATED, crc, len(comp), len(secret), a_at),
            central(b, DEFLATED, crc, len(comp), len(secret), b_at),
        ],
    )
    refused(store, data, "CheckT1/a.md", "runs into the next entry")


def test_a_deflate_stream_that_never_ends_is_refused_even_when_its_crc_matches(store: DraftStore) -> None:
    """Refused ('its deflated data end before the deflate stream does (truncated)'): half a deflate stream,
    its CRC-32 and sizes those of what it gives before it stops. zipfile takes the end of the region as the
    end of the stream."""
    text = b"# c\n" + bytes(range(256)) * 40
    full = deflate(text)
    cut = full[: len(full) // 2]
    inflate = zlib.decompressobj(-15)
    got = inflate.decompress(cut)
    assert not inflate.eof and got
    crc = zlib.crc32(got)
    header = local(NOTE, DEFLATED, crc, len(cut), len(got))
    data = with_note(header, cut, {"crc": crc, "csize": len(cut), "usize": len(got)})
    refused(store, data, "CheckT1/x.md", "before the deflate stream does")


@pytest.mark.parametrize("stated", [1, 10**6])
def test_a_deflated_entry_whose_stated_compressed_size_is_not_its_datas_is_refused(
    store: DraftStore, stated: int
) -> None:
    """Refused ('the sizes the zip states (1 compressed, ...) are not its data's (42 compressed, ...)'): the
    compressed size both headers state is compared with what the deflate stream took."""
    crc = zlib.crc32(TEXT)
    header = local(NOTE, DEFLATED, crc, stated, len(TEXT))
    refused(
        store, with_note(header, deflate(TEXT), {"csize": stated}), "CheckT1/x.md", "the sizes the zip states"
    )


def test_local_and_central_compression_methods_that_disagree_are_refused(store: DraftStore) -> None:
    """Refused ('its local header and the directory give different compression methods'):
    zipfile reads the method from the central directory only; an unzip that trusts the local header
    writes the deflated bytes as they are."""
    comp = deflate(TEXT)
    header = local(NOTE, STORED, zlib.crc32(TEXT), len(comp), len(TEXT))
    refused(store, with_note(header, comp), "CheckT1/x.md", "different compression methods")


def test_a_link_in_the_local_extra_field_is_refused(store: DraftStore) -> None:
    """Refused ('a link (a Unix extra field names its target)'): the central record is
    clean, the local header's PKWARE Unix field (0x000d) names a link target; an extractor that reads
    local headers makes the link."""
    comp = deflate(TEXT)
    link = struct.pack("<HHLLHH", 0x000D, 12 + 11, 0, 0, 0, 0) + b"/etc/passwd"
    header = local(NOTE, DEFLATED, zlib.crc32(TEXT), len(comp), len(TEXT), extra=link)
    refused(store, with_note(header, comp), "CheckT1/x.md", "a link")


def test_an_entry_whose_local_header_says_encrypted_is_refused(store: DraftStore) -> None:
    """Refused ('encrypted; a draft's entries are not encrypted'): the local header's flags are read as
    the central record's are."""
    comp = deflate(TEXT)
    header = local(NOTE, DEFLATED, zlib.crc32(TEXT), len(comp), len(TEXT), flags=0x1)
    refused(store, with_note(header, comp), "CheckT1/x.md", "encrypted")


# --- attacks that hold (kept as regression tests) -----------------------------------------------------


def test_a_local_extra_field_running_past_the_zip_is_refused(store: DraftStore) -> None:
    comp = deflate(TEXT)
    header = local(NOTE, DEFLATED, zlib.crc32(TEXT), len(comp), len(TEXT), extra_len=0xFFFF)
    refused(store, with_note(header, comp), "CheckT1/x.md")


def test_a_stream_quoting_the_next_local_header_is_stopped_at_its_region(store: DraftStore) -> None:
    """Fifield's quoted overlap: a.md's deflate stream opens with a stored block holding b.md's local
    header, then b.md's blocks; its region ends at b.md's header, so it cannot read b.md's data."""
    body, task = task_entry()
    inner = b"# b\n" + b"b" * 100
    comp, crc = deflate(inner), zlib.crc32(inner)
    a, b = b"CheckT1/a.md", b"CheckT1/b.md"
    b_local = local(b, DEFLATED, crc, len(comp), len(inner))
    quote = bytes([0]) + struct.pack("<HH", len(b_local), len(b_local) ^ 0xFFFF)
    out = b_local + inner
    a_size = len(quote) + len(b_local) + len(comp)
    a_local = local(a, DEFLATED, zlib.crc32(out), a_size, len(out))
    a_at = len(body)
    b_at = a_at + len(a_local) + len(quote)
    data = assemble(
        body + a_local + quote + b_local + comp,
        [
            task,
            central(a, DEFLATED, zlib.crc32(out), a_size, len(out), a_at),
            central(b, DEFLATED, crc, len(comp), len(inner), b_at),
        ],
    )
    refused(store, data, "CheckT1/a.md")


def test_a_bomb_with_a_data_descriptor_and_zero_sizes_is_stopped_at_the_limit(store: DraftStore) -> None:
    body, task = task_entry()
    name = b"CheckT1/z.png"
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    comp = b"".join(c.compress(bytes(1 << 20)) for _ in range(60)) + c.flush()
    header = local(name, DEFLATED, 0, 0, 0, flags=0x8)
    descriptor = struct.pack("<4sLLL", b"PK\x07\x08", 0, 0, 0)
    data = assemble(
        body + header + comp + descriptor, [task, central(name, DEFLATED, 0, 0, 0, len(body), flags=0x8)]
    )
    error = refused(store, data, "CheckT1/z.png")
    assert "MAX_EXTRACTED_BYTES" in str(error)


def test_a_stored_entry_whose_sizes_disagree_is_refused(store: DraftStore) -> None:
    data_ = b"s" * 100
    header = local(NOTE, STORED, zlib.crc32(data_), 100, 50)
    refused(
        store,
        with_note(header, data_, {"method": STORED, "crc": zlib.crc32(data_), "csize": 100, "usize": 50}),
        "CheckT1/x.md",
    )


def test_a_huge_central_extra_field_is_read_and_the_entry_stored(store: DraftStore) -> None:
    body, task = task_entry()
    comp = deflate(TEXT)
    extra = struct.pack("<HH", 0xCAFE, 0xFFFF - 4) + bytes(0xFFFF - 4)
    crc = zlib.crc32(TEXT)
    data = assemble(
        body + local(NOTE, DEFLATED, crc, len(comp), len(TEXT)) + comp,
        [task, central(NOTE, DEFLATED, crc, len(comp), len(TEXT), len(body), extra=extra)],
    )
    draft = store.store(data, "x.zip")
    assert (draft.directory / "x.md").read_bytes() == TEXT
    assert io.BytesIO(data).getbuffer().nbytes < drafts.MAX_ZIP_BYTES
