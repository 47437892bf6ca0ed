"""``qsolve export NAME[@VERSION]``: a version's replay bundle (issue 40; its form:
``qsolve.replay.bundle``), gathered from the state database, the blobs and the track record's files.

The bundle holds every track-record file live in the log at entry N (whole, as their log entries
signed them; a reader holds it to all of them), the log's first N entries, where N is the last entry
adding a file that holds the version's rows (the whole log where a file live then is gone since), and a
checkpoint of those N entries signed by this host's key at the time of entry N: so the same track
record always gives the same bytes (Ed25519 signs deterministically), on this host.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
from pathlib import Path
from typing import Any

from qsolve.replay.bundle import Bundle, Index, Platform
from qsolve.replay.rows import SIMULATED, version_rows


class ExportRefused(ValueError):
    """The version cannot be exported as asked; the message says why."""


def _version_of(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def platform_versions() -> Platform:
    return Platform(
        qsolve=_version_of("qsolve"),
        qiskit=_version_of("qiskit"),
        qiskit_aer=_version_of("qiskit-aer"),
        python=platform.python_version(),
    )


def _signed_at(trust: dict[str, Any], key: str, last: dict[str, Any]) -> int:
    """When the checkpoint is signed: at its last entry's time, or, where this host's key was endorsed
    only later (another host filed that entry), from the key's endorsement on; either is fixed for the
    same track record, so the checkpoint is the same bytes."""
    from qsolve.receipts.trust import TrustList

    at = last["entry"]["at_ms"]
    entry = TrustList.from_value(trust).entries.get(key)
    if entry is None:
        raise ExportRefused(
            f"this host's receipt key {key[:16]} is not endorsed by the operator's root: a checkpoint it "
            "signs would verify nowhere (qsolve receipt-key; docs/receipts.md)"
        )
    return max(at, entry.not_before_ms or 0)


def _live_at(documents: list[dict[str, Any]], size: int, have: dict[str, bytes], read) -> dict | None:
    """Every file live in the log's fold at entry ``size`` (a reader holds the bundle to carry each), by
    name: those in ``have`` and the rest read; None where one no longer reads as its entry signed."""
    from qsolve.receipts import trackrecord_log as log

    out = {}
    for name, add in sorted(log.fold(d["entry"] for d in documents[:size]).items()):
        data = have.get(name)
        if data is None:
            try:
                data = read(name, add["size"])
            except Exception:  # noqa: BLE001 - a file gone since (retired, removed) is not the entry's
                data = None
        if data is None or log.blake3(data).hexdigest() != add["digest"]:
            return None
        out[name] = data
    return out


def export(
    name: str, version: str | None = None, home: Path | str | None = None, *, key_as_it_is: bool = False
) -> Bundle:
    """The bundle of ``name``'s ``version`` (default: its latest published). ``key_as_it_is``: sign the
    checkpoint with the host's key as it is, never making, registering or rotating one (what a web
    download does: a GET changes nothing); where the host has none, ExportRefused says so."""
    from qsolve.home import host_name, qsolve_home
    from qsolve.receipts import trackrecord_log as log
    from qsolve.receipts.root import NoReceiptRoot
    from qsolve.workflow.folder import CASES
    from qsolve.workflow.publication import unpack
    from qsolve_pipeline.storage.blobs import BlobStore
    from qsolve_pipeline.storage.bounds import ARCHIVE_BYTES, RECEIPT_BYTES
    from qsolve_pipeline.storage.state import NotFound, connect

    from .layout import Layout
    from .verify import file_reader

    home = qsolve_home(home)
    blobs = BlobStore(home)
    with connect(home=home) as db:
        try:
            found = db.get_version(name, version)
        except NotFound as e:
            raise ExportRefused(str(e)) from None
        try:
            trust = db.trust_list()
        except NoReceiptRoot as e:
            raise ExportRefused(f"no trust list to put in the bundle: {e}") from None
        archive = blobs.get(found.digest, limit=ARCHIVE_BYTES)
        read = file_reader(Layout(home))
        files: dict[str, bytes] = {}
        rows: list[dict[str, Any]] = []
        seqs = []
        for live in db.trackrecord_live_files():
            data = read(live.name, live.size)
            if data is None or log.blake3(data).hexdigest() != live.digest:
                raise ExportRefused(
                    f"trackrecord/{live.name}: missing, or not the bytes its log entry signed"
                )
            mine = version_rows(data, found.workflow, found.version)
            if mine:
                files[live.name] = data
                rows += mine
                seqs.append(live.seq)
        if not rows:
            raise ExportRefused(f"{found.workflow} {found.version} has no track-record row to replay")
        size = max(seqs)
        every = [json.loads(d) for d in db.trackrecord_log_documents()]
        files = _live_at(every, size, files, read)
        if files is None:  # a file live then is gone since: the whole log, with every file live now
            size = len(every)
            files = _live_at(every, size, {}, read)
            if files is None:
                raise ExportRefused("the track record's live files do not read as their log entries signed")
        documents = every[:size]
        last = documents[-1]
        if key_as_it_is:
            from qsolve.receipts.keys import load_host_key

            try:
                key = load_host_key(home, create=False)
            except FileNotFoundError:
                raise ExportRefused(
                    "this host has no receipt key to sign the bundle's checkpoint with (qsolve receipt-key; "
                    "docs/receipts.md)"
                ) from None
        else:
            key = db.signing_key(home)
        checkpoint = log.checkpoint_document(
            size, log.document_hash(last), key, host_name(), _signed_at(trust, key.public_hex, last)
        )
        digests = sorted({d for r in rows if not r["target"].startswith(SIMULATED)
                          for d in (r["receipt_digest"] or "").split(",") if d})  # fmt: skip
        receipts = {d: blobs.get(d, limit=RECEIPT_BYTES) for d in digests}
        providers: dict[str, dict[str, Any]] = {}
        if digests:
            from qsolve.providers.sealing import describe_digest

            for job in db.receipt_jobs(digests).values():
                providers[describe_digest(job.description)] = dict(job.description)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="qsolve-export-") as tmp:
        import yaml

        folder = unpack(archive, Path(tmp) / "workflow")
        cases = yaml.safe_load((folder / CASES).read_text()) or {}
    bundle_cases = {"cases": cases.get("cases") or [], "hardware_cases": list(found.hardware_cases)}
    rows.sort(key=lambda r: r["run_id"])
    return Bundle(
        index=Index(
            workflow=found.workflow,
            version=found.version,
            digest=found.digest,
            platform=platform_versions(),
            files=sorted(files),
            receipts=digests,
            providers=sorted(providers),
            log_size=size,
        ),
        archive=archive,
        cases=bundle_cases,
        rows=rows,
        files=files,
        log=documents,
        checkpoint=checkpoint,
        receipts=receipts,
        providers=providers,
        trust=trust,
    )
