"""Knowledge drafts (qsolve/evaluation/drafts.py): stored once under the zip's SHA-256, read by the
published knowledge's own code, archived byte for byte; the published directory as a zip that stores
again unchanged; and every zip attack refused with nothing left behind."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from qsolve.cli.knowledge import add_commands
from qsolve.evaluation import drafts
from qsolve.evaluation.drafts import (
    ARCHIVE_DATE_TIME,
    DraftNotFound,
    DraftOfAnotherTask,
    DraftRefused,
    DraftStore,
    task_archive,
)
from qsolve.evaluation.examples import examples_of
from qsolve.evaluation.knowledge import derive_reference

KNOWLEDGE = Path(__file__).resolve().parents[3] / "task-knowledge"
TASKS = sorted(p.name for p in KNOWLEDGE.iterdir() if p.is_dir())
TASK_MD = (KNOWLEDGE / "CheckT1" / "task.md").read_bytes()
PNG = (KNOWLEDGE / "CheckT1" / "examples" / "01-success.png").read_bytes()


def info(
    name: str, *, mode: int = stat.S_IFREG | 0o644, method: int = zipfile.ZIP_DEFLATED
) -> zipfile.ZipInfo:
    zi = zipfile.ZipInfo(name, date_time=(2026, 1, 2, 3, 4, 6))
    zi.external_attr = mode << 16
    zi.compress_type = method
    return zi


def build(*entries: tuple[str | zipfile.ZipInfo, bytes], task: bool = True) -> bytes:
    """A zip: CheckT1/task.md (unless ``task`` is False), then the entries as given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        if task:
            zf.writestr(info("CheckT1/task.md"), TASK_MD)
        for name, data in entries:
            zf.writestr(name if isinstance(name, zipfile.ZipInfo) else info(name), data)
    return buffer.getvalue()


def central_headers(data: bytes) -> list[int]:
    """The offsets of the central directory's entries."""
    start = data.rindex(b"PK\x05\x06")
    (cd_offset,) = struct.unpack_from("<L", data, start + 16)
    found, at = [], cd_offset
    while data[at : at + 4] == b"PK\x01\x02":
        found.append(at)
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, at + 28)
        at += 46 + name_len + extra_len + comment_len
    return found


def nothing_stored(store: DraftStore) -> bool:
    return not store.root.exists() or not any(store.root.iterdir())


def refused(store: DraftStore, data: bytes, *words: str, entry: str | None = None) -> DraftRefused:
    with pytest.raises(DraftRefused) as caught:
        store.store(data, "attack.zip")
    message = str(caught.value)
    for word in words:
        assert word in message, message
    assert caught.value.entry == entry, message
    if entry is not None:
        assert repr(entry) in message
    assert nothing_stored(store)
    return caught.value


# --- storing and reading back ---------------------------------------------------------------------


def test_a_zip_is_stored_under_its_sha256_and_the_same_zip_is_the_same_unchanged_draft(
    store: DraftStore,
) -> None:
    data = task_archive(KNOWLEDGE / "CheckT1")
    assert not store.exists(hashlib.sha256(data).hexdigest())
    draft = store.store(data, "CheckT1.zip", uploader="ada")
    assert store.exists(draft.id) and draft.id == hashlib.sha256(data).hexdigest() and draft.task == "CheckT1"
    folder = store.root / draft.id
    assert sorted(p.name for p in folder.iterdir()) == ["draft.json", "draft.zip", "task"]
    assert (folder / "draft.zip").read_bytes() == data
    meta = json.loads((folder / "draft.json").read_text(encoding="utf-8"))
    assert meta["uploader"] == "ada" and meta["file_name"] == "CheckT1.zip" and meta["task"] == "CheckT1"
    assert meta["warnings"] == [] and meta["created_at"].endswith("Z") and meta["zip_bytes"] == len(data)
    assert draft.directory == folder / "task" / "CheckT1" and (draft.directory / "task.md").is_file()
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}

    again = store.store(data, "renamed.zip", uploader="bob")
    assert again == draft
    assert again.file_name == "CheckT1.zip" and again.uploader == "ada"  # a draft never changes
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()} == before
    assert [p.name for p in store.root.iterdir()] == [draft.id]  # no temporary folder left
    assert store.get(draft.id.upper()) == again and [d.id for d in store.list()] == [draft.id]


def test_a_draft_is_read_by_the_published_knowledge_code_its_figures_inside_it(store: DraftStore) -> None:
    draft = store.store(task_archive(KNOWLEDGE / "CheckT1"), "CheckT1.zip")
    read = store.knowledge_of(draft.id)
    assert read.knowledge.task == "CheckT1" and read.reference == derive_reference(draft.directory)
    assert [e.id for e in read.examples] == ["01-success", "02-sweep-too-short", "03-too-few-points"]
    for example in read.examples:
        assert example.figure.resolve().is_relative_to(draft.directory.resolve())
    assert drafts.knowledge_of(draft.id, home=store.root.parent).reference == read.reference


@pytest.mark.parametrize("task", TASKS)
def test_the_published_directory_zipped_stores_as_a_draft_unchanged(store: DraftStore, task: str) -> None:
    published = KNOWLEDGE / task
    draft = store.store(task_archive(published), f"{task}.zip")
    read = store.knowledge_of(draft.id)
    reference = derive_reference(published)
    assert read.reference.knowledge_sha256 == reference.knowledge_sha256
    assert read.reference.public() == reference.public() and draft.warnings == reference.warnings == []

    def comparable(examples):  # the same examples, wherever their files lie
        return [
            {**e.model_dump(exclude={"path", "figure"}), "figure": e.figure.relative_to(root).as_posix()}
            for e, root in examples
        ]

    assert comparable((e, draft.directory) for e in read.examples) == comparable(
        (e, published) for e in examples_of(published)
    )
    assert task_archive(draft.directory) == task_archive(published)  # and zips again to the same bytes


def test_task_archive_is_deterministic_one_folder_only_the_accepted_types(tmp_path: Path) -> None:
    task = tmp_path / "CheckT1"
    (task / "examples").mkdir(parents=True)
    (task / "task.md").write_bytes(TASK_MD)
    (task / "examples" / "a.PNG").write_bytes(PNG)
    (task / "examples" / "b.md").write_text("b", encoding="utf-8")
    (task / "notes.txt").write_text("left out", encoding="utf-8")
    (task / "run.py").write_text("left out", encoding="utf-8")
    (tmp_path / "outside.md").write_text("outside", encoding="utf-8")
    (task / "examples" / "link.md").symlink_to(tmp_path / "outside.md")  # a link out: left out
    (task / "examples" / "inside.png").symlink_to(task / "examples" / "a.PNG")  # a link in: its file
    first = task_archive(task)
    (task / "task.md").touch()  # a new mtime changes nothing
    assert task_archive(task) == first
    with zipfile.ZipFile(io.BytesIO(first)) as zf:
        names = zf.namelist()
        assert names == sorted(names)
        assert names == [
            "CheckT1/examples/a.PNG",
            "CheckT1/examples/b.md",
            "CheckT1/examples/inside.png",
            "CheckT1/task.md",
        ]
        for zi in zf.infolist():
            assert zi.date_time == ARCHIVE_DATE_TIME and zi.external_attr >> 16 == stat.S_IFREG | 0o644
            assert zi.compress_type == zipfile.ZIP_STORED and zi.create_system == 3
        assert zf.read("CheckT1/examples/inside.png") == PNG


def test_the_archive_is_the_upload_byte_for_byte_under_its_uploaded_name(store: DraftStore) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:  # any zip a person makes
        zf.comment = b"made by hand"
        zf.writestr("CheckT1/", b"")  # folder entries are fine
        zf.writestr("CheckT1/examples/", b"")
        zf.writestr("CheckT1/task.md", TASK_MD)
        zf.writestr("CheckT1/examples/x.png", PNG)
    data = buffer.getvalue()
    draft = store.store(data, "C:\\Users\\ada\\my draft.zip")
    assert store.archive(draft.id) == data and store.get(draft.id).file_name == "my draft.zip"
    assert sorted(p.name for p in draft.directory.rglob("*")) == ["examples", "task.md", "x.png"]


def test_a_run_is_refused_a_draft_of_another_task(store: DraftStore) -> None:
    draft = store.store(task_archive(KNOWLEDGE / "CheckRabi"), "CheckRabi.zip")
    assert store.for_task(draft.id, "CheckRabi") == draft
    with pytest.raises(DraftOfAnotherTask, match="is a draft of CheckRabi, not of CheckT1"):
        store.for_task(draft.id, "CheckT1")
    with pytest.raises(DraftOfAnotherTask):
        drafts.for_task(draft.id, "CheckT1", home=store.root.parent)
    with pytest.raises(DraftNotFound, match="no knowledge draft"):
        store.for_task("0" * 64, "CheckRabi")
    with pytest.raises(DraftNotFound, match="not a draft id"):
        store.get("../../etc")


def test_task_md_at_the_zips_root_is_the_task_its_frontmatter_names(store: DraftStore) -> None:
    data = build(("task.md", TASK_MD), ("examples/x.png", PNG), task=False)
    draft = store.store(data, "root.zip")
    assert draft.task == "CheckT1" and (draft.directory / "examples" / "x.png").read_bytes() == PNG
    nameless = TASK_MD.replace(b"name: CheckT1\n", b"")
    refused(store_of(store, "b"), build(("task.md", nameless), task=False), "names no task", entry="task.md")


def store_of(store: DraftStore, sub: str) -> DraftStore:
    return DraftStore(store.root.parent / sub)


def test_a_folder_whose_frontmatter_names_another_task_is_refused(store: DraftStore) -> None:
    data = build(("CheckRabi/task.md", TASK_MD), task=False)
    refused(store, data, "names the task 'CheckT1' but its folder is 'CheckRabi'", entry="CheckRabi/task.md")


def test_a_task_md_that_is_not_utf8_is_refused(store: DraftStore) -> None:
    refused(
        store,
        build(("CheckT1/task.md", b"\xff\xfe not text"), task=False),
        "not UTF-8",
        entry="CheckT1/task.md",
    )


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("../x.md", "'..'"),
        ("CheckT1/../../x.md", "'..'"),
        ("/etc/x.md", "absolute"),
        ("a\\..\\x.md", "backslash"),
        ("CheckT1\\examples\\x.md", "backslash"),
        ("C:/x.md", "drive letter"),
        ("CheckT1/x.md:stream", "':'"),
        ("CheckT1//x.md", "empty or '.'"),
        ("CheckT1/./x.md", "empty or '.'"),
        ("CheckT1/x\x01.md", "control character"),
        ("CheckT1/__MACOSX/._task.md", "macOS metadata"),
    ],
)
def test_a_path_outside_the_task_directory_is_refused(store: DraftStore, name: str, words: str) -> None:
    refused(store, build((name, b"x")), words, entry=name)


def test_a_symlink_entry_is_refused(store: DraftStore) -> None:
    link = info("CheckT1/examples/x.png", mode=stat.S_IFLNK | 0o777)
    refused(store, build((link, b"/etc/passwd")), "symbolic link", entry="CheckT1/examples/x.png")


def test_a_hard_link_by_the_unix_extra_field_is_refused(store: DraftStore) -> None:
    entry = info("CheckT1/examples/x.md")
    target = b"../../../../etc/passwd"
    entry.extra = struct.pack("<HH", 0x000D, 12 + len(target)) + bytes(12) + target
    refused(store, build((entry, b"")), "a link (a Unix extra field", entry="CheckT1/examples/x.md")


def test_a_windows_reparse_point_is_refused(store: DraftStore) -> None:
    entry = info("CheckT1/examples/x.md", mode=0)
    entry.create_system, entry.external_attr = 0, 0x400 | 0x20
    refused(store, build((entry, b"")), "reparse point", entry="CheckT1/examples/x.md")


def test_a_fifo_is_refused(store: DraftStore) -> None:
    entry = info("CheckT1/examples/x.md", mode=stat.S_IFIFO | 0o644)
    refused(store, build((entry, b"")), "a FIFO", entry="CheckT1/examples/x.md")


def test_two_entries_sharing_their_data_are_refused(store: DraftStore) -> None:
    data = bytearray(build(("CheckT1/examples/a.md", b"a" * 100), ("CheckT1/examples/b.md", b"b" * 100)))
    first, second, third = central_headers(bytes(data))
    (offset,) = struct.unpack_from("<L", data, second + 42)
    struct.pack_into("<L", data, third + 42, offset)  # b.md points at a.md's local header
    refused(store, bytes(data), "overlapping", entry="CheckT1/examples/b.md")


@pytest.mark.parametrize(
    "name", ["CheckT1/run.py", "CheckT1/examples/notes.txt", "CheckT1/examples/README", "CheckT1/.DS_Store"]
)
def test_a_file_of_another_type_is_refused(store: DraftStore, name: str) -> None:
    refused(store, build((name, b"print('hello')")), "only .md, .png, .jpg, .jpeg and .webp", entry=name)


def test_a_second_task_is_refused(store: DraftStore) -> None:
    data = build(("CheckRabi/task.md", TASK_MD))
    refused(store, data, "a second top folder 'CheckRabi' beside 'CheckT1'", entry="CheckRabi/task.md")
    nested = build(("CheckT1/CheckRabi/task.md", TASK_MD))
    refused(store, nested, "a second task.md", entry="CheckT1/CheckRabi/task.md")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (build(("CheckT1/examples/x.png", PNG), task=False), "no CheckT1/task.md"),
        (build(task=False), "the zip is empty"),
        (build(("readme.md", b"x"), task=False), "no task.md there"),
    ],
)
def test_a_zip_that_is_not_one_task_directory_is_refused(store: DraftStore, data: bytes, words: str) -> None:
    with pytest.raises(DraftRefused, match=words):
        store.store(data, "x.zip")
    assert nothing_stored(store)


def test_a_task_folder_that_is_no_tasks_name_is_refused(store: DraftStore) -> None:
    data = build(("Check T1/task.md", TASK_MD), task=False)
    refused(store, data, "not a task's name", entry="Check T1/task.md")


def test_duplicate_names_are_refused(store: DraftStore) -> None:
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = build(("CheckT1/examples/x.md", b"1"), ("CheckT1/examples/x.md", b"2"))
    refused(store, data, "a second entry of the same name", entry="CheckT1/examples/x.md")
    data = build(("CheckT1/examples/X.md", b"1"), ("CheckT1/examples/x.md", b"2"))
    refused(
        store, data, "the same name as 'CheckT1/examples/X.md' (case ignored)", entry="CheckT1/examples/x.md"
    )
    data = build(("CheckT1/notes.md", b"1"), ("CheckT1/notes.md/x.md", b"2"))
    refused(store, data, "a file where 'CheckT1/notes.md/x.md' needs a folder", entry="CheckT1/notes.md")
    data = build(("CheckT1/Notes.md", b"1"), ("CheckT1/notes.md/x.md", b"2"))
    refused(store, data, "a file where 'CheckT1/notes.md/x.md' needs a folder", entry="CheckT1/Notes.md")
    data = build(("CheckT1/notes.md", b"1"), (info("CheckT1/notes.md/", mode=stat.S_IFDIR | 0o755), b""))
    refused(
        store, data, "a folder of the same name as the file 'CheckT1/notes.md'", entry="CheckT1/notes.md/"
    )


def test_too_many_entries_are_refused(store: DraftStore) -> None:
    extra = [(f"CheckT1/examples/{i:03}.md", b"") for i in range(drafts.MAX_ENTRIES)]
    assert len(extra) + 1 == 201
    refused(store, build(*extra), "201 entries", "at most 200 (MAX_ENTRIES)")


def test_a_zip_listing_too_many_entries_is_refused_before_its_directory_is_read(store: DraftStore) -> None:
    """Its end record counts 60,000 entries (as a 20 MiB zip of empty names could): refused from that
    count alone, before zipfile would parse a directory that is not even there."""
    data = build() + b"PK\x05\x06" + b"\0" * 4 + (60_000).to_bytes(2, "little") * 2 + b"\0" * 10
    refused(store, data, "60000 entries", "at most 200 (MAX_ENTRIES)")


def test_an_oversize_zip_is_refused_before_it_is_read(
    store: DraftStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = task_archive(KNOWLEDGE / "CheckT1")
    monkeypatch.setattr(drafts, "MAX_ZIP_BYTES", len(data) - 1)
    refused(store, data, f"the zip is {len(data):,} bytes", "MAX_ZIP_BYTES")
    path = tmp_path / "big.zip"
    path.write_bytes(data)
    with pytest.raises(DraftRefused, match="MAX_ZIP_BYTES"):
        store.store_file(path)
    assert nothing_stored(store)


def test_the_extracted_limit_is_counted_while_extracting(
    store: DraftStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(drafts, "MAX_EXTRACTED_BYTES", len(TASK_MD) + 1000)
    data = build(("CheckT1/examples/a.png", bytes(600)), ("CheckT1/examples/b.png", bytes(600)))
    refused(
        store,
        data,
        "more than",
        "MAX_EXTRACTED_BYTES",
        "counted while extracting",
        entry="CheckT1/examples/b.png",
    )


def test_a_zip_bomb_whose_headers_lie_about_its_sizes_is_stopped_while_extracting(
    store: DraftStore, tmp_path: Path
) -> None:
    """60 MiB of zeros deflate to about 60 kB; the zip then says the entry is 1,000 bytes, compressed
    and extracted. Only a count taken as the bytes come out can see past the 50 MiB limit."""
    path = tmp_path / "bomb.zip"
    name = "CheckT1/examples/zeros.png"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(info("CheckT1/task.md"), TASK_MD)
        with zf.open(info(name), "w") as out:
            zeros = bytes(1 << 20)
            for _ in range(60):
                out.write(zeros)
    data = bytearray(path.read_bytes())
    assert len(data) < drafts.MAX_ZIP_BYTES
    bomb_header = central_headers(bytes(data))[1]
    (local,) = struct.unpack_from("<L", data, bomb_header + 42)
    struct.pack_into("<LL", data, bomb_header + 20, 1000, 1000)  # the central directory's sizes
    struct.pack_into("<LL", data, local + 18, 1000, 1000)  # the local header's
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        assert zf.getinfo(name).file_size == 1000 and sum(i.file_size for i in zf.infolist()) < 10_000
    refused(store, bytes(data), "more than 52,428,800 bytes", "counted while extracting", entry=name)


def test_headers_that_lie_about_a_small_entry_are_refused_as_corrupt(store: DraftStore) -> None:
    data = bytearray(build(("CheckT1/examples/a.md", b"a" * 1000)))
    header = central_headers(bytes(data))[1]
    struct.pack_into("<L", data, header + 24, 10)  # the extracted size
    refused(store, bytes(data), "the sizes the zip states", entry="CheckT1/examples/a.md")


def test_an_encrypted_entry_is_refused(store: DraftStore) -> None:
    data = bytearray(build(("CheckT1/examples/a.md", b"secret")))
    for header in central_headers(bytes(data)):
        (flags,) = struct.unpack_from("<H", data, header + 8)
        struct.pack_into("<H", data, header + 8, flags | 0x1)
    refused(store, bytes(data), "encrypted", entry="CheckT1/task.md")


def test_an_unsupported_compression_method_is_refused(store: DraftStore) -> None:
    entry = info("CheckT1/examples/a.md", method=zipfile.ZIP_BZIP2)
    refused(store, build((entry, b"a" * 100)), "compressed with bzip2", entry="CheckT1/examples/a.md")


@pytest.mark.parametrize("damage", ["not a zip", "truncated", "crc", "deflate"])
def test_a_corrupt_zip_is_refused(store: DraftStore, damage: str) -> None:
    stored = info("CheckT1/examples/a.md", method=zipfile.ZIP_STORED)
    data = bytearray(build((stored, b"a" * 1000)))
    header = central_headers(bytes(data))[1]
    (local,) = struct.unpack_from("<L", data, header + 42)
    at = local + 30 + len("CheckT1/examples/a.md")
    entry = "CheckT1/examples/a.md"
    if damage == "not a zip":
        refused(store, b"PK\x03\x04 this is no zip at all", "not a zip file, or a corrupt one")
    elif damage == "truncated":
        refused(store, bytes(data[: len(data) // 2]), "not a zip file, or a corrupt one")
    elif damage == "crc":
        data[at + 10] ^= 0xFF
        refused(store, bytes(data), "CRC-32", entry=entry)
    else:
        task = central_headers(bytes(data))[0]
        (task_local,) = struct.unpack_from("<L", data, task + 42)
        start = task_local + 30 + len("CheckT1/task.md")
        data[start : start + 8] = b"\xff" * 8
        refused(store, bytes(data), "corrupt", entry="CheckT1/task.md")


def test_an_interrupted_store_leaves_nothing_and_unfinished_folders_are_no_drafts(
    store: DraftStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = task_archive(KNOWLEDGE / "CheckT1")

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(drafts.os, "rename", fail)
    with pytest.raises(OSError, match="disk full"):
        store.store(data, "CheckT1.zip")
    assert nothing_stored(store) and store.list() == []
    monkeypatch.undo()
    (store.root / ".incoming-left-by-a-killed-process").mkdir()
    assert store.list() == [] and store.store(data, "CheckT1.zip").task == "CheckT1"
    assert [p.name for p in store.root.iterdir() if not p.name.startswith(".")] == [store.list()[0].id]


# --- commands -------------------------------------------------------------------------------------


def knowledge(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="qsolve")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["knowledge", *argv])
    return args.func(args)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_draft_archive_and_preview_commands(home: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    assert knowledge("archive", str(KNOWLEDGE / "CheckT1"), "--output", str(out)) == 0
    zipped = out / "CheckT1.zip"
    assert zipped.read_bytes() == task_archive(KNOWLEDGE / "CheckT1")
    capsys.readouterr()

    assert knowledge("draft", str(zipped)) == 0
    lines = capsys.readouterr().out.splitlines()
    draft_id = lines[0]
    assert draft_id == hashlib.sha256(zipped.read_bytes()).hexdigest()
    assert lines[1].startswith("CheckT1: knowledge draft stored (CheckT1.zip") and lines[2] == "no warnings"
    assert knowledge("draft", str(zipped), "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == draft_id and shown["task"] == "CheckT1" and shown["stored"] is False
    assert knowledge("draft", "--list", "--json") == 0
    assert [d["id"] for d in json.loads(capsys.readouterr().out)] == [draft_id]
    assert knowledge("draft", "--list") == 0
    assert capsys.readouterr().out.startswith(f"{draft_id}  CheckT1  CheckT1.zip")

    copy = tmp_path / "copy.zip"
    assert knowledge("archive", draft_id, "--output", str(copy)) == 0
    assert copy.read_bytes() == zipped.read_bytes()
    assert capsys.readouterr().out == f"{copy}: {len(copy.read_bytes()):,} bytes\n"

    assert knowledge("preview", str(KNOWLEDGE / "CheckT1"), "--with-examples", "--json") == 0
    published = json.loads(capsys.readouterr().out)
    assert knowledge("preview", "--draft", draft_id, "--with-examples", "--json") == 0
    from_draft = json.loads(capsys.readouterr().out)
    assert from_draft.pop("knowledge_draft_id") == draft_id
    assert from_draft == published


def test_the_commands_refuse_with_exit_2(home: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(build(("CheckT1/run.py", b"")))
    assert knowledge("draft", str(bad)) == 2
    assert "draft refused: entry 'CheckT1/run.py': a .py file" in capsys.readouterr().err
    assert knowledge("draft") == 2 and knowledge("preview") == 2
    assert knowledge("preview", "--draft", "0" * 64) == 2
    assert knowledge("archive", "f" * 64, "--output", str(tmp_path / "x.zip")) == 2
    assert "no knowledge draft" in capsys.readouterr().err and not (tmp_path / "x.zip").exists()
