"""The receipts behind hardware rows (issue 13, item 6; issue 34, item 3): each row's ``receipt_digest``
names the blobs of its device jobs' sealed receipts. A receipt counts as verified for its row only when

- it belongs to the row: its sealed request names the row's run (``request.run``: its id, workflow,
  version, case and target, as the platform sealed them; ``qsolve.providers.sealing.run_member``), and
  the state database's record of the job that sealed it, where it has one, is of that run too. A receipt
  sealed before requests named their run is shown to be the row's only by that record, of a run the
  state database holds as the row's (its workflow, version, case and target);
- its seal verifies, held to the host keys the operator's root endorsed (``StateDB.trust_list``); and
- its counts are the ones the row's numbers came from: its counts and shots are those the state database
  recorded as the answer of its job, where it recorded one, and the row's ``circuits`` and ``shots``
  are its receipts' (one receipt per circuit sent, their shots summed).

The class the page gives a row (``measured`` by a device, or ``simulated``) is what its verified receipts
seal, never the row's own ``measured``: a row whose receipts do not all verify has no class.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from qsolve_pipeline.storage.bounds import RECEIPT_BYTES, RECEIPT_PAGE_BYTES

if TYPE_CHECKING:
    from .row import TrackRecordRow

#: what failed, in the order the label names them: (field, one receipt, several)
FAILURES = (
    ("missing", "is missing", "are missing"),
    ("repeated", "is named again", "are named again"),
    ("invalid", "does not verify", "do not verify"),
    ("unendorsed", "is signed by a key not endorsed now", "are signed by a key not endorsed now"),
    ("other_run", "belongs to another run", "belong to another run"),
    ("no_run", "names no run of this row", "name no run of this row"),
    ("counts_differ", "seals counts other than its job's", "seal counts other than their jobs'"),
)


#: a seal that holds, by a key the trust list does not take now: not endorsed, revoked, or outside its window
KEY_REASONS = frozenset({"key_untrusted", "key_revoked", "key_window"})


class JobRecord(BaseModel):
    """What the state database recorded of one sealed device job: the run it was sent for, its shots
    and the counts its answer gave (None where it holds no answer)."""

    run_id: str | None
    shots: int
    counts: dict[str, int] | None = None


class PlatformRecord(BaseModel):
    """What the state database recorded of the receipts a page names (none: a home with no database)."""

    jobs: dict[str, JobRecord] = {}  # receipt digest -> the job that sealed it
    runs: dict[str, dict[str, str]] = {}  # run id -> the run as a request seals it (run_member)


class RowReceipts(BaseModel):
    """What a hardware row's receipts say."""

    named: int  # receipts the row names
    verified: int  # of those, found, valid under an endorsed key, the row's run's, with its job's counts
    measured: int  # of the verified, sealed with accuracy.class measured (the rest: simulated)
    missing: int = 0  # named, and no blob holds it
    repeated: int = 0  # named more than once by the row (each circuit sent is one job, one receipt)
    invalid: int = 0  # found, and its seal does not verify (a key not endorsed aside)
    unendorsed: int = 0  # its seal holds, by a key the root did not endorse (or revoked, or out of window)
    other_run: int = 0  # its sealed request, or the job's record, names another run than the row's
    no_run: int = 0  # sealed naming no run, and no record of its job shows it the row's
    counts_differ: int = 0  # its counts or shots are not those recorded as its job's answer
    totals: str = ""  # why the row's circuits and shots are not its receipts' ("" when they are)

    @property
    def ok(self) -> bool:
        """Every receipt named verified for this row, and the row's totals are theirs."""
        return self.named > 0 and self.verified == self.named and not self.totals

    @property
    def kind(self) -> str | None:
        """The class the receipts seal, ``measured`` or ``simulated``; None unless they all verify."""
        if not self.ok:
            return None
        return "measured" if self.measured == self.named else "simulated"

    @property
    def failures(self) -> list[str]:
        """What failed, each as a phrase: "1 receipt belongs to another run"."""
        out = []
        for name, one, several in FAILURES:
            if n := getattr(self, name):
                out.append(f"{n} receipt {one}" if n == 1 else f"{n} receipts {several}")
        return out + ([self.totals] if self.totals else [])

    @property
    def label(self) -> str:
        if self.named == 0:
            return "no receipt"
        if self.ok:
            verb = "receipt verifies" if self.named == 1 else "receipts verify"
            return f"{self.named} {verb}; {self.kind}"
        return f"{self.verified} of {self.named} verify: {'; '.join(self.failures)}; not verified"


def check_row(
    row: TrackRecordRow,
    home: Path,
    trust: dict[str, Any] | None = None,
    record: PlatformRecord | None = None,
) -> RowReceipts:
    """Read and check every receipt ``row`` names (see the module's docstring), held to ``trust`` where
    given: the host keys the operator's root endorsed (``StateDB.trust_list``), as ``qsolve verify
    --registered`` holds them, so that a receipt sealed by a key the root did not endorse (one written
    straight into the database), or one revoked, does not count as verified; ``record``: what the state
    database recorded of the receipts' jobs and of the row's run."""
    from qsolve.providers.sealing import RUN, run_member
    from qsolve.receipts import verify
    from qsolve_pipeline.storage.blobs import BlobStore

    held = held_to(trust)
    record = record or PlatformRecord()
    digests = [d for d in row.receipt_digest.split(",") if d]
    blobs = BlobStore(home)
    expected = run_member(row.run_id, row.workflow, row.version, row.case_name, row.target)
    recorded_run = record.runs.get(row.run_id)
    found: dict[str, int] = dict.fromkeys((name for name, _, _ in FAILURES), 0)
    verified = measured = shots = read = 0
    seen: set[str] = set()
    for digest in digests:
        if digest in seen:
            found["repeated"] += 1
            continue
        seen.add(digest)
        try:
            text = blobs.get(digest, limit=RECEIPT_PAGE_BYTES)  # a page's bound (storage.bounds)
            job = json.loads(text)
            request, result = job["request"], job["result"]
            if not isinstance(request, dict) or not isinstance(result, dict):
                raise ValueError(digest)
        except (OSError, ValueError, KeyError, TypeError):
            found["missing"] += 1
            continue
        read += 1
        shots += result["shots"] if type(result.get("shots")) is int else 0
        verdict = verify(text, held=held)
        good = verdict.valid
        if not verdict.valid:
            found["unendorsed" if set(verdict.reasons) <= KEY_REASONS else "invalid"] += 1
        job_record = record.jobs.get(digest)
        belongs = _belongs(request.get(RUN), expected, job_record, recorded_run, row.run_id)
        if belongs != "yes":
            found[belongs] += 1
            good = False
        if job_record is not None and not _same_counts(job_record, result):
            found["counts_differ"] += 1
            good = False
        if good:
            verified += 1
            accuracy = result.get("accuracy")
            measured += isinstance(accuracy, dict) and accuracy.get("class") == "measured"
    totals = ""
    if digests and (row.circuits, row.shots) != (len(digests), shots) and read == len(seen):
        totals = (
            f"the row's {row.circuits} circuits and {row.shots} shots are not its receipts' "
            f"{len(digests)} and {shots}"
        )
    return RowReceipts(named=len(digests), verified=verified, measured=measured, totals=totals, **found)


def _belongs(
    sealed: Any,
    expected: dict[str, str],
    job: JobRecord | None,
    run: dict[str, str] | None,
    run_id: str,
) -> str:
    """``yes`` when a receipt is the row's run's; else ``other_run`` or ``no_run`` (see the module's
    docstring). ``sealed``: the run its request seals; ``job``: the record of its job; ``run``: the
    row's run as the state database holds it."""
    if job is not None and job.run_id is not None and job.run_id != run_id:
        return "other_run"
    if run is not None and run != expected:
        return "other_run"  # the row says another workflow, version, case or target than its run's
    if sealed is not None:
        return "yes" if sealed == expected else "other_run"
    if job is None or job.run_id is None or run is None:
        return "no_run"  # sealed before requests named their run, and no record shows it the row's
    return "yes"


def platform_record(state: Any, rows: list[TrackRecordRow]) -> PlatformRecord:
    """What the state database ``state`` recorded of ``rows``' receipts' jobs and of their runs."""
    from qsolve.providers.sealing import run_member
    from qsolve_pipeline.storage.state import NotFound

    digests = [d for r in rows for d in r.receipt_digest.split(",") if d]
    jobs = {
        digest: JobRecord(
            run_id=job.run_id,
            shots=job.shots,
            counts=_counts((job.answer or {}).get("counts")),
        )
        for digest, job in state.receipt_jobs(digests).items()
    }
    runs = {}
    for r in rows:
        if not r.receipt_digest or r.run_id in runs:
            continue
        try:
            run = state.get_run(r.run_id)
        except NotFound:
            continue
        runs[r.run_id] = run_member(run.id, run.workflow, run.version, run.case_name, run.target)
    return PlatformRecord(jobs=jobs, runs=runs)


def _same_counts(job: JobRecord, result: dict[str, Any]) -> bool:
    """The receipt's sealed counts and shots are those the platform recorded as its job's answer (as a
    host lists them: no outcome counted 0); true where it recorded none."""
    from qsolve.providers.sealing import listed_counts

    if job.counts is None:
        return True
    return listed_counts(job.counts)[0] == result.get("counts") and job.shots == result.get("shots")


def _counts(counts: Any) -> dict[str, int] | None:
    if not isinstance(counts, dict):
        return None
    try:
        return {str(k): int(v) for k, v in counts.items()}
    except (TypeError, ValueError):
        return None


def held_to(trust: dict[str, Any] | None) -> Any:
    """What a receipt is held to: the trust list ``trust`` (a ``wai.quantum.receipt-keys/1`` value), or
    nothing beyond its seal (None)."""
    from qsolve.receipts.trust import HeldTo, TrustList

    return None if trust is None else HeldTo(trust=TrustList.from_value(trust))


def receipt_classes(digests: list[str], home: Path) -> list[str | None]:
    """The ``accuracy.class`` each receipt seals (``measured``, ``simulated``; None where a blob is
    missing or says none), as filing reads them to set a row's ``measured`` (row.measured_of)."""
    from qsolve_pipeline.storage.blobs import BlobStore

    blobs = BlobStore(home)
    out: list[str | None] = []
    for digest in digests:
        try:
            accuracy = (
                json.loads(blobs.get(digest, limit=RECEIPT_BYTES)).get("result", {}).get("accuracy", {})
            )
        except (OSError, ValueError, KeyError, AttributeError):
            out.append(None)
            continue
        out.append(accuracy.get("class") if isinstance(accuracy, dict) else None)
    return out


def write_receipts(digests: list[str], home: Path, out: Path) -> list[Path]:
    """The receipts as files anyone can check with ``qsolve verify``: ``OUT/<digest>.json``."""
    from qsolve_pipeline.storage.blobs import BlobStore

    out.mkdir(parents=True, exist_ok=True)
    blobs = BlobStore(home)
    written = []
    for digest in digests:
        path = out / f"{digest}.json"
        path.write_bytes(blobs.get(digest, limit=RECEIPT_BYTES))
        written.append(path)
    return written
