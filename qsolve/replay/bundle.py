"""A version's replay bundle (issue 40): one zip, written the same bytes every time for the same track
record, read back with the platform's safe zip reader (:mod:`qsolve.safezip`).

    bundle.json                 the index: format, workflow, version, the archive's digest, what the
                                platform ran with, and the names of everything below
    archive.bin                 the version's published archive (qsolve.workflow.publication)
    cases.json                  its cases (as cases.yaml reads) and its hardware cases (inputs inline)
    rows.json                   every track-record row of the version, every target, current and earlier
    trackrecord/<name>.parquet  the track record's files that hold those rows, as their log entries signed
    log.json                    the log's entries 1 .. N (each its signed document)
    checkpoint.json             a checkpoint of the log's first N entries, signed
    receipts/<digest>.json      every receipt a hardware row names, as sealed
    providers/<digest>.json     each provider's describe answer its receipts name (by its digest)
    trust.json                  the trust list of endorsed keys (wai.quantum.receipt-keys/1)

Every JSON member is RFC 8785 canonical text; every zip entry has the same fixed time and mode, in
name order: the bytes depend only on what the bundle holds.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from qsolve.receipts.canonical import canonical_bytes
from qsolve.receipts.strict_json import depth
from qsolve.safezip import Reading, ZipRefused, ZipRules

FORMAT = "qsolve.replay-bundle/1"
INDEX = "bundle.json"
ARCHIVE = "archive.bin"
CASES = "cases.json"
ROWS = "rows.json"
LOG = "log.json"
CHECKPOINT = "checkpoint.json"
TRUST = "trust.json"
FILES, RECEIPTS, PROVIDERS = "trackrecord", "receipts", "providers"
#: every entry's time: the earliest a zip can state (1980-01-01), so that the bytes never hold a clock
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

MAX_ZIP_BYTES = 1024 * 2**20
MAX_EXTRACTED_BYTES = 2048 * 2**20
#: a bundle extracts to at most this many times its zip's size (and at least MIN_EXTRACTED_BYTES): what
#: it holds (Parquet, an archive, receipts' counts) compresses a few times, never a thousand
MAX_RATIO = 100
MIN_EXTRACTED_BYTES = 64 * 2**20
MAX_ENTRIES = 200_000
#: a JSON member's bound before it is parsed, and how deep its arrays and objects may nest
MAX_JSON_BYTES = 256 * 2**20
MAX_DEPTH = 64


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(f"the member {k[:80]!r} is given twice in one object")
        out[k] = v
    return out


class RowEntry(BaseModel):
    """A row of ``rows.json`` as read at the boundary: its run id a string (the rest is held to the file
    its log entry signed)."""

    model_config = ConfigDict(extra="allow", strict=True)

    run_id: str
    workflow: str
    version: str


class LogDocument(BaseModel):
    """An entry of ``log.json`` as read at the boundary (its form and signature: ``trackrecord_log``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    entry: dict[str, Any]
    signature: str


class BundleRefused(ValueError):
    """A bundle that does not read: its zip, its index or a member, named."""


class Platform(BaseModel):
    """What the platform ran with when it exported the bundle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    qsolve: str
    qiskit: str
    qiskit_aer: str
    python: str


class Index(BaseModel):
    """``bundle.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["qsolve.replay-bundle/1"] = FORMAT
    workflow: str
    version: str
    digest: str  # the published archive's digest (BLAKE3 of its bytes), as the platform names the version
    platform: Platform
    files: list[str]  # the track record's files, by name
    receipts: list[str]  # blob digests
    providers: list[str]  # describe digests
    log_size: int


@dataclass
class Bundle:
    """A bundle's content, in memory."""

    index: Index
    archive: bytes
    cases: dict[str, Any]
    rows: list[dict[str, Any]]
    files: dict[str, bytes]
    log: list[dict[str, Any]]
    checkpoint: dict[str, Any]
    receipts: dict[str, bytes] = field(default_factory=dict)
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    trust: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # what reads, but not as the exporter writes it

    def entries(self) -> dict[str, bytes]:
        """Every zip entry's bytes, by name."""
        out = {
            INDEX: canonical_bytes(self.index.model_dump(mode="json")),
            ARCHIVE: self.archive,
            CASES: canonical_bytes(self.cases),
            ROWS: canonical_bytes(self.rows),
            LOG: canonical_bytes(self.log),
            CHECKPOINT: canonical_bytes(self.checkpoint),
            TRUST: canonical_bytes(self.trust),
        }
        out |= {f"{FILES}/{name}": data for name, data in self.files.items()}
        out |= {f"{RECEIPTS}/{digest}.json": data for digest, data in self.receipts.items()}
        out |= {f"{PROVIDERS}/{d}.json": canonical_bytes(v) for d, v in self.providers.items()}
        return out

    def to_bytes(self) -> bytes:
        """The zip: entries in name order, each deflated, dated :data:`ZIP_TIME`, mode 0644."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as zf:
            for name, data in sorted(self.entries().items()):
                info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3
                info.external_attr = 0o100644 << 16
                zf.writestr(info, data, compresslevel=9)
        return buffer.getvalue()


def rules(zip_bytes: int | None = None) -> ZipRules:
    """The safe reader's rules for a bundle; ``zip_bytes``: its zip's size, which bounds what it may
    extract to (:data:`MAX_RATIO`)."""
    extracted = MAX_EXTRACTED_BYTES
    if zip_bytes is not None:
        extracted = min(extracted, max(MIN_EXTRACTED_BYTES, MAX_RATIO * zip_bytes))
    return ZipRules(
        refused="bundle refused",
        noun="a bundle",
        directory="bundle",
        folder="bundle",
        owner="the bundle's",
        marker=INDEX,
        max_zip_bytes=MAX_ZIP_BYTES,
        max_extracted_bytes=extracted,
        max_entries=MAX_ENTRIES,
        suffixes=(".json", ".parquet", ".bin"),
        suffixes_rule="a bundle holds only .json, .parquet and .bin files",
        one_marker=True,
        zip_noun="a bundle",
    )


def read_bundle(data: bytes) -> Bundle:
    """A bundle from its zip's bytes, read with the safe reader; BundleRefused names what does not read."""
    tmp = Path(tempfile.mkdtemp(prefix="qsolve-replay-"))
    try:
        try:
            with Reading(rules(len(data)), data) as zipped:
                zipped.extract(tmp / "bundle")
        except ZipRefused as e:
            raise BundleRefused(str(e)) from None
        return _read_folder(tmp / "bundle")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_folder(folder: Path) -> Bundle:
    def raw(name: str) -> bytes:
        try:
            return (folder / name).read_bytes()
        except FileNotFoundError:
            raise BundleRefused(f"bundle refused: {name} is missing") from None

    problems: list[str] = []

    def value(name: str) -> Any:
        data = raw(name)
        if len(data) > MAX_JSON_BYTES:
            raise BundleRefused(f"bundle refused: {name} is larger than {MAX_JSON_BYTES // 2**20} MiB")
        try:
            try:
                found = json.loads(data, object_pairs_hook=_no_duplicates)
            except _Duplicate as e:
                problems.append(f"{name}: {e} (a value forged over another)")
                found = json.loads(data)
        except RecursionError:
            raise BundleRefused(f"bundle refused: {name} nests deeper than {MAX_DEPTH}") from None
        except ValueError as e:
            raise BundleRefused(f"bundle refused: {name} does not read as JSON ({str(e)[:200]})") from None
        if depth(found) > MAX_DEPTH:
            raise BundleRefused(f"bundle refused: {name} nests deeper than {MAX_DEPTH}")
        return found

    def refused(name: str, what: str, e: ValidationError) -> BundleRefused:
        first = e.errors()[0]
        at = ".".join(str(p) for p in first["loc"])
        return BundleRefused(f"bundle refused: {name} is not {what} (at {at or 'the top'}: {first['msg']})")

    try:
        index = Index.model_validate(value(INDEX))
    except ValidationError as e:
        raise refused(INDEX, f"a {FORMAT} index", e) from None
    rows, log = value(ROWS), value(LOG)
    try:
        TypeAdapter(list[RowEntry]).validate_python(rows)
    except ValidationError as e:
        raise refused(ROWS, "a list of rows, each with its run_id, workflow and version as text", e) from None
    try:
        TypeAdapter(list[LogDocument]).validate_python(log)
    except ValidationError as e:
        raise refused(LOG, "a list of signed entries ({entry, signature})", e) from None
    return Bundle(
        index=index,
        archive=raw(ARCHIVE),
        cases=value(CASES),
        rows=rows,
        files={name: raw(f"{FILES}/{name}") for name in index.files if _plain(name)},
        log=log,
        checkpoint=value(CHECKPOINT),
        receipts={d: raw(f"{RECEIPTS}/{d}.json") for d in index.receipts if _plain(d)},
        providers={d: value(f"{PROVIDERS}/{d}.json") for d in index.providers if _plain(d)},
        trust=value(TRUST),
        problems=problems,
    )


def _plain(name: str) -> bool:
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise BundleRefused(f"bundle refused: {INDEX} names {name[:80]!r}, not a plain file name")
    return True
