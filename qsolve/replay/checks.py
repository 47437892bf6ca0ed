"""What a replay checks of a bundle before it runs anything, offline, with nothing of the platform:

    log         every entry of its form, signed strictly by a key of the trust list (in its window),
                numbered 1, 2, ... and naming the hash of the one before (``trackrecord_log.Chain``)
    checkpoint  signed by a trusted key; the bundle's entries are exactly its first ``size``, ending in
                its ``head``
    files       each track-record file is live in the log's fold, its bytes have the digest and size its
                entry signed, and its runs are those the entry lists (a batch) or hashes (a compaction)
    rows        ``rows.json`` is exactly the version's rows in those files, member for member
    archive     its bytes have the digest the bundle names, it is that workflow's version, and
                ``cases.json``'s cases are its own ``benchmarks/cases.yaml``
    receipts    each receipt a hardware row names has the bytes of its digest, verifies strictly against
                the trust list, seals the row's run in its request, and the row's circuits and shots are
                its receipts' (one receipt a circuit)

Each failure is one line naming what and where.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from blake3 import blake3

from qsolve.receipts import trackrecord_log as log

from .bundle import ARCHIVE, CASES, CHECKPOINT, LOG, ROWS, TRUST, Bundle
from .rows import Row, file_run_ids, version_rows


@dataclass
class RowReceipts:
    """A hardware row's receipts: read in the row's order when they all hold, else why not."""

    jobs: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class Checked:
    problems: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    receipts: dict[str, RowReceipts] = field(default_factory=dict)  # run id -> its receipts
    said: list[str] = field(default_factory=list)
    trust: str = ""  # whose keys the checks rest on, and where they came from


def _bundle_trust(bundle: Bundle, out: Checked) -> Any:
    """The bundle's trust list as the reader may use it: with a root the reader holds
    (``QSOLVE_RECEIPT_ROOT``), only the keys whose endorsement in the list holds by that root; with none,
    the list as it is (which shows only that the bundle agrees with itself)."""
    import os

    from qsolve.receipts.endorsement import endorsed_list, standing
    from qsolve.receipts.root import ROOT_VARIABLE, NoReceiptRoot, configured_root

    if not os.environ.get(ROOT_VARIABLE, "").strip():
        keys = bundle.trust.get("keys") if isinstance(bundle.trust, dict) else None
        named = [str(k.get("key"))[:16] for k in keys or [] if isinstance(k, dict)]
        out.trust = (
            f"keys {', '.join(named) or '(none)'} from the bundle's own {TRUST} (no --trust and no "
            f"{ROOT_VARIABLE}): this shows only that the bundle agrees with itself; compare them with the "
            "operator's keys"
        )
        return bundle.trust
    try:
        root = configured_root()
    except NoReceiptRoot as e:
        out.problems.append(f"{ROOT_VARIABLE}: {e}")
        return {"format": "wai.quantum.receipt-keys/1", "keys": []}
    keys = bundle.trust.get("keys") if isinstance(bundle.trust, dict) else None
    standings = []
    for n, entry in enumerate(keys if isinstance(keys, list) else []):
        key = entry.get("key") if isinstance(entry, dict) else None
        endorsement = entry.get("endorsement") if isinstance(entry, dict) else None
        found = standing(str(key), None if endorsement is None else json.dumps(endorsement), root)
        if found.endorsed:
            standings.append(found)
        else:
            out.problems.append(
                f"{TRUST}: keys[{n}] ({str(key)[:16]}) is not endorsed by the root {root[:16]} "
                f"({ROOT_VARIABLE}): {found.why}"
            )
    out.trust = (
        f"keys {', '.join(s.key[:16] for s in standings) or '(none)'} of the bundle's {TRUST}, each "
        f"endorsed by the root {root[:16]} ({ROOT_VARIABLE})"
    )
    return endorsed_list(standings)


def trusted_keys(trust: Any) -> tuple[dict[str, Any], Any]:
    """A trust list's keys (key -> its window) and the list itself, read strictly."""
    from qsolve.receipts.trust import TrustList

    found = TrustList.from_value(trust)
    return dict(found.entries), found


def check(bundle: Bundle, trust: Any | None = None) -> Checked:
    """Everything of the module's docstring; ``trust``: the reader's trust list (default the bundle's)."""
    from qsolve.receipts.trust import TrustListRefused

    out = Checked()
    out.problems += bundle.problems
    if trust is None:
        trust = _bundle_trust(bundle, out)
        given = False
    else:
        given = True
        keys = trust.get("keys") if isinstance(trust, dict) else None
        keys = keys if isinstance(keys, list) else []
        named = [str(k.get("key"))[:16] for k in keys if isinstance(k, dict)]
        out.trust = f"keys {', '.join(named) or '(none)'} of the trust list given (--trust)"
    try:
        trusted, trust_list = trusted_keys(trust)
    except TrustListRefused as e:
        out.problems.append(f"{'the trust list given' if given else TRUST}: {e}")
        trusted, trust_list = {}, None
    _log(bundle, trusted, out)
    folded = log.fold(e for e in (_of_form(d) for d in bundle.log) if e is not None)
    rows_in_files = _files(bundle, folded, out)
    _rows(bundle, rows_in_files, out)
    _archive(bundle, out)
    for row in out.rows:
        if not row.simulated:
            out.receipts[row.run_id] = _receipts(bundle, row, trust_list)
            if row.receipts:  # a row that names none (filed before receipts) is only not recomputed
                out.problems += out.receipts[row.run_id].problems
    _hardware_cases(bundle, out)
    held = [r for r in out.receipts.values() if not r.problems]
    if held:
        n = sum(len(r.jobs) for r in held)
        rows = "1 hardware row" if len(held) == 1 else f"{len(held)} hardware rows"
        out.said.append(
            f"{n} receipts ({rows}) verify strictly against the trust list, each sealing its row's run"
        )
    return out


def _of_form(document: dict[str, Any]) -> dict[str, Any] | None:
    """An entry of its form (only these are folded: a malformed one is named by the chain)."""
    try:
        return log.check_entry(document)
    except Exception:  # noqa: BLE001 - an entry not of its form is not folded, whatever the reason
        return None


def _log(bundle: Bundle, trusted: dict[str, Any], out: Checked) -> list[dict[str, Any]]:
    chain = log.Chain.of(bundle.log, trusted)
    out.problems += [f"{LOG}: {p}" for p in chain.problems]
    try:
        statement = log.check_checkpoint(bundle.checkpoint)
    except (log.LogRefused, TypeError, KeyError) as e:
        out.problems.append(f"{CHECKPOINT}: {e}")
        return chain.entries
    key = statement["key"]
    if key not in trusted:
        out.problems.append(f"{CHECKPOINT}: signed by key {key[:16]}, not in the trust list")
    elif (why := log.key_refused(trusted[key], statement["at_ms"])) is not None:
        out.problems.append(f"{CHECKPOINT}: signed by key {key[:16]}, {why}")
    if (why := chain.extends(statement)) is not None:
        out.problems.append(f"{CHECKPOINT}: {why}")
    elif statement["size"] != len(bundle.log):
        out.problems.append(
            f"{LOG}: holds {len(bundle.log)} entries, its checkpoint {statement['size']}: entries were "
            "added after the checkpoint"
        )
    else:
        out.said.append(f"{len(bundle.log)} log entries chain to the checkpoint, signed by trusted keys")
    return chain.entries


def _files(bundle: Bundle, folded: dict[str, dict[str, Any]], out: Checked) -> dict[str, tuple[str, dict]]:
    """The version's rows in the files the log holds live: run id -> (file, row)."""
    found: dict[str, tuple[str, dict]] = {}
    for name in bundle.index.files:
        data = bundle.files.get(name)
        add = folded.get(name)
        where = f"trackrecord/{name}"
        if data is None:
            out.problems.append(f"{where}: missing")
            continue
        if add is None:
            out.problems.append(f"{where}: no entry of the log holds it live (an entry removed or changed)")
            continue
        where += f" (entry {add['seq']})"
        if len(data) != add["size"] or blake3(data).hexdigest() != add["digest"]:
            out.problems.append(f"{where}: its bytes are not those its entry signed (a row changed)")
            continue
        try:
            ids = sorted(file_run_ids(data))
            rows = version_rows(data, bundle.index.workflow, bundle.index.version)
        except Exception as e:  # noqa: BLE001 - a file that does not read is named, whatever the reason
            out.problems.append(f"{where}: does not read as Parquet ({type(e).__name__})")
            continue
        digest = blake3("\n".join(ids).encode()).hexdigest(length=16)
        listed = add.get("run_ids")
        if (
            len(ids) != add["rows"]
            or digest != add["run_ids_digest"]
            or (listed is not None and listed != ids)
        ):
            out.problems.append(f"{where}: its runs are not those its entry names")
            continue
        for r in rows:
            found.setdefault(r["run_id"], (name, r))
    for name in sorted(set(folded) - set(bundle.index.files)):
        out.problems.append(
            f"trackrecord/{name} (entry {folded[name]['seq']}): live in the log at the checkpoint, but not "
            "in the bundle (a file and its rows removed)"
        )
    return found


def _rows(bundle: Bundle, in_files: dict[str, tuple[str, dict]], out: Checked) -> None:
    listed: dict[str, dict] = {}
    for r in bundle.rows:
        if r["run_id"] in listed:
            out.problems.append(f"{ROWS}: row {r['run_id'][:12]} is listed twice (a row duplicated)")
        listed.setdefault(r["run_id"], r)
    for run_id in sorted(set(listed) | set(in_files)):
        if run_id not in in_files:
            out.problems.append(f"{ROWS}: row {str(run_id)[:12]} is in no file the log signed")
            continue
        name, signed = in_files[run_id]
        given = listed.get(run_id)
        if given is None:
            out.problems.append(f"{ROWS}: row {run_id[:12]} of trackrecord/{name} is missing (a row removed)")
        elif given != signed:
            member = next((k for k in signed if signed.get(k) != given.get(k)), None) or "a member"
            out.problems.append(
                f"{ROWS}: row {run_id[:12]}'s {member} is {given.get(member)!r}; the file its entry signed "
                f"says {signed.get(member)!r} (a row changed)"
            )
        out.rows.append(Row.model_validate(signed))
    out.rows.sort(key=lambda r: (r.case_name, r.target, r.run_id))
    out.said.append(f"{len(out.rows)} rows, each in a file its log entry signed")


def _archive(bundle: Bundle, out: Checked) -> None:
    """The archive is the version's digest, of the workflow and version the bundle names, and the cases
    a replay runs are its own ``benchmarks/cases.yaml``."""
    if blake3(bundle.archive).hexdigest() != bundle.index.digest:
        out.problems.append(
            f"{ARCHIVE}: its bytes are not the version's digest {bundle.index.digest[:16]} "
            "(the archive changed)"
        )
        return
    import tempfile
    from pathlib import Path

    import yaml

    from qsolve.workflow.folder import CASES as CASES_FILE
    from qsolve.workflow.folder import load_manifest
    from qsolve.workflow.publication import unpack

    index = bundle.index
    try:
        with tempfile.TemporaryDirectory(prefix="qsolve-replay-") as tmp:
            folder = unpack(bundle.archive, Path(tmp) / "workflow")
            manifest = load_manifest(folder)
            cases = yaml.safe_load((folder / CASES_FILE).read_text()) or {}
    except Exception as e:  # noqa: BLE001 - an archive that does not read is named, whatever the reason
        out.problems.append(f"{ARCHIVE}: does not read as a workflow ({type(e).__name__}: {str(e)[:200]})")
        return
    if (manifest.name, manifest.version) != (index.workflow, index.version):
        out.problems.append(
            f"{ARCHIVE}: it is {manifest.name} {manifest.version}, not {index.workflow} {index.version}"
        )
    given = bundle.cases.get("cases") if isinstance(bundle.cases, dict) else None
    if given != (cases.get("cases") or []):
        out.problems.append(f"{CASES}: its cases are not the archive's {CASES_FILE} (the cases changed)")


def _hardware_cases(bundle: Bundle, out: Checked) -> None:
    """Each hardware row's case in ``cases.json`` promises what the row's signed ``expect`` says."""
    pool = bundle.cases.get("hardware_cases") if isinstance(bundle.cases, dict) else None
    pool = [c for c in pool if isinstance(c, dict)] if isinstance(pool, list) else []
    for row in out.rows:
        if row.simulated or row.expect is None:
            continue
        try:
            signed = json.loads(row.expect)
        except ValueError:
            out.problems.append(f"row {row.run_id[:12]}: its expect does not read as JSON")
            continue
        for case in pool:
            if case.get("name") == row.case_name and _expect(case.get("expect")) != _expect(signed):
                out.problems.append(
                    f"{CASES}: hardware case {row.case_name!r} expects {case.get('expect')!r}; row "
                    f"{row.run_id[:12]}'s signed expect is {signed!r} (the hardware case changed)"
                )


def _expect(value: Any) -> Any:
    """An expect as the platform reads it (defaults filled), or the value itself where it does not read."""
    from qsolve.workflow.cases import Expect

    try:
        return Expect.model_validate(value or {}).model_dump(mode="json")
    except Exception:  # noqa: BLE001 - an expect that does not read differs from any that does
        return ("unread", json.dumps(value, sort_keys=True, default=str))


def _receipts(bundle: Bundle, row: Row, trust_list: Any) -> RowReceipts:
    from qsolve.providers.sealing import RUN, run_member
    from qsolve.receipts import verify
    from qsolve.receipts.trust import HeldTo

    got = RowReceipts()
    where = f"row {row.run_id[:12]} ({row.case_name} on {row.target})"
    if not row.receipts:
        got.problems.append(f"{where}: names no receipt")
        return got
    expected = run_member(row.run_id, row.workflow, row.version, row.case_name, row.target)
    held = HeldTo(trust=trust_list) if trust_list is not None else HeldTo()
    shots = 0
    for n, digest in enumerate(row.receipts, start=1):
        at = f"{where}: receipt {n} ({digest[:12]})"
        data = bundle.receipts.get(digest)
        if data is None:
            got.problems.append(f"{at}: missing")
            continue
        verdict = verify(data, held=held)
        if blake3(data).hexdigest() != digest:
            seal = "its seal still holds" if verdict.valid else f"its seal: {', '.join(verdict.reasons)}"
            got.problems.append(f"{at}: its bytes are not those of its digest (the receipt changed; {seal})")
            continue
        if not verdict.valid or trust_list is None:
            why = ", ".join(verdict.reasons) or "no trust list to hold it to"
            got.problems.append(f"{at}: does not verify ({why})")
            continue
        job = json.loads(data)
        if job["request"].get(RUN) != expected:
            got.problems.append(f"{at}: seals another run than the row's")
            continue
        shots += job["result"].get("shots", 0)
        got.jobs.append(job)
    classes = sorted({str((job["result"].get("accuracy") or {}).get("class")) for job in got.jobs})
    sealed = bool(classes) and all(c == "measured" for c in classes)
    if not got.problems and row.measured is not None and row.measured != sealed:
        got.problems.append(
            f"{where}: says measured={str(row.measured).lower()}, but its receipts seal accuracy class "
            f"{', '.join(classes)} (a device claim its receipts do not make)"
        )
    if not got.problems and (row.circuits, row.shots) != (len(row.receipts), shots):
        got.problems.append(
            f"{where}: its {row.circuits} circuits and {row.shots} shots are not its receipts' "
            f"{len(row.receipts)} and {shots}"
        )
    return got
