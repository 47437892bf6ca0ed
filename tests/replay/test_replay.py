"""Replay (issue 40): max-cut's version exported from a home whose track record the platform built (sim
and fake rows from history runs, a hardware row on the reference provider with its sealed receipts),
replayed in a separate home with no state database and no network; every tamper named, never a pass;
the same bundle bytes on every export."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve.replay.bundle import ZIP_TIME
from tests.conftest import REPO
from tests.once import built_once
from tests.replay.building import WORKFLOW, build
from tests.web.seeding import home_set


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One submitted home for the module, and its version's bundle exported from it: built once for the
    whole run, under xdist too (the first worker to reach it builds it; the others wait and read it; the
    tests only read the home, or write beside it under names of their own)."""
    return built_once(tmp_path_factory, "replay-exported", _export)


def _export(root: Path) -> dict:
    from tests.qsolve.receipts.roots import ROOT

    saved = os.environ.get("QSOLVE_RECEIPT_ROOT")
    os.environ["QSOLVE_RECEIPT_ROOT"] = ROOT.public_hex
    try:
        with home_set(root / "home"):
            built = build(root / "home", root / "work")
            assert main(["export", WORKFLOW, "--out", str(root / "bundle.zip")]) == 0
    finally:
        if saved is None:
            os.environ.pop("QSOLVE_RECEIPT_ROOT", None)
        else:
            os.environ["QSOLVE_RECEIPT_ROOT"] = saved
    return {"root": root, "built": built, "bundle": (root / "bundle.zip").read_bytes()}


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A reader's home: nothing of the platform's, no database configured, no root key trusted."""
    home = tmp_path / "reader"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    for name in ("QSOLVE_DATABASE_URL", "QSOLVE_RECEIPT_ROOT", "QSOLVE_STORAGE_URL"):
        monkeypatch.delenv(name, raising=False)
    return home


def entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def rezip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in sorted(files.items()):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            zf.writestr(info, data)
    return buffer.getvalue()


def replay_json(bundle: bytes, folder: Path, capsys, *extra: str) -> tuple[int, dict]:
    path = folder / "bundle.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bundle)
    capsys.readouterr()
    code = main(["replay", str(path), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_a_bundle_exported_twice_is_the_same_bytes(exported, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.qsolve.receipts.roots import trust_root

    trust_root(monkeypatch)
    monkeypatch.setenv("QSOLVE_HOME", str(exported["root"] / "home"))
    again = exported["root"] / "again.zip"
    assert main(["export", f"{WORKFLOW}@1.0.0", "--out", str(again)]) == 0
    assert again.read_bytes() == exported["bundle"]
    names = list(entries(exported["bundle"]))
    assert names == sorted(names)
    rows = json.loads(entries(exported["bundle"])["rows.json"])
    assert len(rows) == exported["built"].rows
    assert {r["target"] for r in rows} == {"sim-cpu", "fake:fez@1.6", "provider:ref"}


def test_the_bundle_replays_in_a_fresh_home_with_no_database_and_no_network(exported, fresh: Path) -> None:
    """As a reader outside the platform runs it: a new process, its own home, its network cut off
    where the machine allows (``unshare -n``)."""
    bundle = fresh.parent / "bundle.zip"
    bundle.write_bytes(exported["bundle"])
    command = [sys.executable, "-m", "qsolve.cli", "replay", str(bundle), "--json"]
    if (
        shutil.which("unshare")
        and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    ):
        command = ["unshare", "-n", *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QSOLVE_", "PREFECT_API"))}
    env |= {"QSOLVE_HOME": str(fresh), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=fresh.parent, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    outcomes = {(r["case"], r["target"]): r["outcome"] for r in report["rows"]}
    assert len(report["rows"]) == exported["built"].rows
    assert outcomes[("noise-model-ring-6", "fake:fez@1.6")] in ("reproduced", "close")
    assert outcomes[("complete-5", "sim-cpu")] in ("reproduced", "close")
    hardware = [r for r in report["rows"] if r["target"] == "provider:ref"]
    assert [r["outcome"] for r in hardware] == ["recomputed"]
    assert hardware[0]["receipts"] == len(exported["built"].receipts)
    assert report["ok"] and report["verdict"].startswith("PASS") and not report["problems"]
    assert not (fresh / "state.db").exists()  # nothing of the platform's was made to replay it


def _change_row(files: dict[str, bytes]) -> str:
    rows = json.loads(files["rows.json"])
    rows[0]["gap"] = (rows[0]["gap"] or 0.0) + 0.25
    files["rows.json"] = json.dumps(rows).encode()
    return "a row changed"


def _change_row_in_its_file(files: dict[str, bytes]) -> str:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    name = next(n for n in sorted(files) if n.startswith("trackrecord/"))
    table = pq.read_table(pa.BufferReader(files[name]))
    gap = table.column("gap")
    changed = pc.add(pc.fill_null(gap, 0.0), 0.25)
    table = table.set_column(table.schema.get_field_index("gap"), table.schema.field("gap"), changed)
    out = io.BytesIO()
    pq.write_table(table, out)
    files[name] = out.getvalue()
    return "its bytes are not those its entry signed"


def _first_receipt(files: dict[str, bytes]) -> tuple[str, dict]:
    name = next(n for n in sorted(files) if n.startswith("receipts/"))
    return name, json.loads(files[name])


def _change_receipt(files: dict[str, bytes]) -> str:
    name, job = _first_receipt(files)
    job["result"]["job"]["id"] = "another-job"
    files[name] = json.dumps(job).encode()
    return "the receipt changed"


def _change_count(files: dict[str, bytes]) -> str:
    name, job = _first_receipt(files)
    counts = job["result"]["counts"]
    top = max(counts, key=counts.get)
    counts[top] += 1
    files[name] = json.dumps(job).encode()
    return "the receipt changed; its seal: counts"


def _remove_entry(files: dict[str, bytes]) -> str:
    log = json.loads(files["log.json"])
    del log[1]
    files["log.json"] = json.dumps(log).encode()
    return "an entry removed"


def _change_archive(files: dict[str, bytes]) -> str:
    files["archive.bin"] = files["archive.bin"].replace(b"def evaluate", b"def evaluate ", 1)
    return "the archive changed"


def _change_cases(files: dict[str, bytes]) -> str:
    cases = json.loads(files["cases.json"])
    cases["cases"][0]["seed"] = cases["cases"][0].get("seed", 0) + 1
    files["cases.json"] = json.dumps(cases).encode()
    return "the cases changed"


TAMPERS = {
    "a row changed": _change_row,
    "a row changed in its file": _change_row_in_its_file,
    "a receipt changed": _change_receipt,
    "a count changed": _change_count,
    "an entry removed": _remove_entry,
    "the archive changed": _change_archive,
    "the cases changed": _change_cases,
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_a_tampered_bundle_names_what_was_changed_and_never_passes(
    exported, fresh: Path, capsys, tamper
) -> None:
    files = entries(exported["bundle"])
    reason = TAMPERS[tamper](files)
    code, report = replay_json(rezip(files), fresh.parent, capsys)
    assert code == 1 and not report["ok"] and report["verdict"].startswith("FAIL")
    said = " ".join(report["problems"])
    assert reason in said, said
    assert not any(r["outcome"] in ("reproduced", "close", "recomputed") for r in report["rows"])


def test_receipts_and_entries_are_held_to_the_readers_trust_list(exported, fresh: Path, capsys) -> None:
    other = fresh.parent / "trust.json"
    other.write_text(json.dumps({"format": "wai.quantum.receipt-keys/1", "keys": []}))
    code, report = replay_json(exported["bundle"], fresh.parent, capsys, "--trust", str(other))
    assert code == 1 and not report["ok"]
    said = " ".join(report["problems"])
    assert "not in the trust list" in said and "does not verify" in said


def test_an_archive_changed_and_renamed_to_its_new_digest_gives_other_numbers(
    exported, fresh: Path, capsys
) -> None:
    """The archive's digest is the platform's word: a bundle that swaps the code and names the new
    digest still holds the signed rows, and the code run again does not give their numbers."""
    from blake3 import blake3

    from qsolve.workflow.publication import pack, unpack

    files = entries(exported["bundle"])
    folder = unpack(files["archive.bin"], fresh.parent / "unpacked")
    code_file = folder / "workflow.py"
    doubled = "\n\n_evaluate = evaluate\n\n\ndef evaluate(input, solution):\n"
    doubled += "    return 2 * _evaluate(input, solution)\n"
    code_file.write_text(code_file.read_text() + doubled)
    files["archive.bin"] = pack(folder)
    index = json.loads(files["bundle.json"])
    index["digest"] = blake3(files["archive.bin"]).hexdigest()
    files["bundle.json"] = json.dumps(index).encode()
    code, report = replay_json(rezip(files), fresh.parent, capsys)
    assert code == 1 and not report["ok"] and not report["problems"]
    simulated = [r for r in report["rows"] if not r["target"].startswith("provider:")]
    assert simulated and all(r["outcome"] == "different" for r in simulated), report["rows"]
    assert all("recorded" in r["detail"] and "now" in r["detail"] for r in simulated)


def test_a_row_is_reproduced_exactly_equal_within_tolerance_or_different_naming_the_number(exported) -> None:
    """The comparison, on a real run's result as the platform stored it: the same hash; every number
    within the reproducible gate's tolerances (relative 1e-8); or the first number that moved."""
    from qsolve.judging.results import CaseResult
    from qsolve.replay.compare import compare
    from qsolve.replay.rows import Row
    from qsolve_pipeline.storage.state import connect

    rows = [Row.model_validate(r) for r in json.loads(entries(exported["bundle"])["rows.json"])]
    row = next(r for r in rows if r.target == "sim-cpu" and r.quantum)
    with connect(home=exported["root"] / "home") as db:
        result = CaseResult.model_validate(db.get_run(row.run_id).result)
    assert compare(row, result) == ("exact", None)
    nudged = result.model_copy(update={"quantum": result.quantum * (1 + 1e-11)}).with_hash()
    assert nudged.result_hash != row.result_hash
    assert compare(row, nudged) == ("close", None)
    moved = result.model_copy(update={"gap": (result.gap or 0.0) + 0.125}).with_hash()
    how, detail = compare(row, moved)
    assert how == "different" and detail.startswith("gap: recorded")


def test_a_circuit_other_than_the_one_sealed_next_is_named(exported) -> None:
    """The replay target of a hardware row answers a circuit only with the counts of the receipt that
    sealed its compiled program, in order."""
    from qiskit import qasm3

    from qsolve.replay.bundle import read_bundle
    from qsolve.replay.sealed import SealedCounts, SealedMismatch

    bundle = read_bundle(exported["bundle"])
    row = next(r for r in bundle.rows if r["target"].startswith("provider:"))
    jobs = [json.loads(bundle.receipts[d]) for d in row["receipt_digest"].split(",")]
    target = SealedCounts(row["target"], bundle.providers[jobs[0]["result"]["provider"]["describe"]], jobs)
    first = qasm3.loads(jobs[0]["request"]["qasm"])
    sent = target.transpile([first], seed=row["seed"])
    assert target.execute(sent, jobs[0]["result"]["shots"], 0) == [jobs[0]["result"]["counts"]]
    with pytest.raises(SealedMismatch, match="circuit 2 compiles to program .*, and receipt 2 sealed"):
        target.transpile([first], seed=row["seed"])  # the first circuit again, where the second was sealed
    assert target.problem is not None and target.used == 1
