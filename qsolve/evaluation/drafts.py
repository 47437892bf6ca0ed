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

The zip is read by :mod:`qsolve.safezip` (as a workflow submitted from the pages is), with a draft's
rules: :func:`rules` (these bounds, task.md as its folder's marker, only .md and image files). No Prefect,
no database.
"""

from __future__ import annotations

import getpass
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
import zipfile
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
from qsolve.safezip import Reading, ZipRefused, ZipRules, check_size, mib

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


# --- errors ---------------------------------------------------------------------------------------


class DraftError(ValueError):
    """Something wrong with a draft; ``entry`` names the zip entry at fault, when one is."""

    def __init__(self, message: str, *, entry: str | None = None) -> None:
        super().__init__(message)
        self.entry = entry


class DraftRefused(DraftError, ZipRefused):
    """A zip that is not stored as a draft, and why; nothing of it is left behind."""


class DraftNotFound(DraftError, LookupError):
    """No draft of that id."""


class DraftOfAnotherTask(DraftError):
    """A draft named for a task it is not a draft of."""


def rules() -> ZipRules:
    """What a draft's zip may hold, with this module's bounds as they are now."""
    return ZipRules(
        refused="draft refused",
        noun="a draft",
        directory="task directory",
        folder="task folder",
        owner="the task's",
        marker=TASK_FILE,
        max_zip_bytes=MAX_ZIP_BYTES,
        max_extracted_bytes=MAX_EXTRACTED_BYTES,
        max_entries=MAX_ENTRIES,
        suffixes=ALLOWED_SUFFIXES,
        suffixes_rule="a draft holds only .md, .png, .jpg, .jpeg and .webp files",
        top_name=_TASK_NAME,
        top_name_rule="a task's name (a letter or digit, then letters, digits, '_' or '-')",
        one_marker=True,
        error=DraftRefused,
    )


def _refuse(problem: str, entry: str | None = None) -> DraftRefused:
    return rules().refuse(problem, entry)


_mib = mib


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


def _task_named(frontmatter: dict[str, Any]) -> str | None:
    for key in ("name", "task"):
        value = frontmatter.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _task_of(plan: Reading, extracted: Path) -> str:
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
        r = rules()
        check_size(r, data)
        draft_id = draft_id_of(data)
        existing = self._find(draft_id)
        if existing is not None:
            return existing
        with Reading(r, data) as plan:  # every rule on its directory held before anything is written
            self.root.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.root))
            try:
                staged = work / TASK_FOLDER / ".extracting"
                staged.parent.mkdir()
                extracted = plan.extract(staged)
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
                    entries=plan.entries,
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
