"""Attacks on issue 40 (replay bundles): a bundle forger, a hostile zip, a dishonest platform.

Each test builds its forgery from the one bundle ``tests.replay.test_replay``'s module fixture exports
(max-cut's version: four sim/fake rows and one hardware row on the reference provider, ten receipts,
five log entries of one file each) and asserts what a reader must see. Where the forgery is caught (or
not) by the bundle's checks, the test holds ``qsolve.replay.checks.check`` to it: a replay runs the rows
of a bundle whose checks find nothing, and passes where they reproduce (they do: the forgeries below
change no number a re-run gives)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve.receipts import trackrecord_log as log
from qsolve.receipts.keys import HostKey
from qsolve.replay.bundle import read_bundle
from qsolve.replay.checks import check
from tests.replay import test_replay as base
from tests.replay.test_replay import entries, replay_json, rezip

#: the replay tests' fixtures: one exported bundle for the module, a fresh reader's home per test
exported, fresh = base.exported, base.fresh

FORGER = HostKey(bytes(range(1, 33)))


def _file_of(files: dict[str, bytes], run_id: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name in sorted(files):
        if name.startswith("trackrecord/"):
            ids = pq.read_table(pa.BufferReader(files[name]), columns=["run_id"]).column("run_id")
            if run_id in ids.to_pylist():
                return name
    raise AssertionError(f"no file holds {run_id}")


def _hardware_row(files: dict[str, bytes]) -> dict:
    return next(r for r in json.loads(files["rows.json"]) if r["target"].startswith("provider:"))


def _resign(files: dict[str, bytes], key: HostKey, changed: dict[str, bytes] | None = None) -> None:
    """The log's entries and its checkpoint signed again by ``key`` (the chain rebuilt), with the files
    named in ``changed`` (name -> new bytes) re-described in the entry that adds them."""
    from blake3 import blake3

    changed = changed or {}
    out, prev = [], log.GENESIS
    for document in json.loads(files["log.json"]):
        e = document["entry"]
        adds = []
        for a in e["adds"]:
            data = changed.get(a["name"])
            adds.append(a if data is None else a | {"digest": blake3(data).hexdigest(), "size": len(data)})
        out.append(log.entry_document(len(out) + 1, prev, e["kind"], adds, e["retires"], key, e["host"],
                                      e["at_ms"]))  # fmt: skip
        prev = log.document_hash(out[-1])
    files["log.json"] = json.dumps(out).encode()
    cp = json.loads(files["checkpoint.json"])["checkpoint"]
    files["checkpoint.json"] = json.dumps(
        log.checkpoint_document(len(out), prev, key, cp["host"], cp["at_ms"])
    ).encode()
    for name, data in changed.items():
        files[f"trackrecord/{name}"] = data


# --- a row removed, with the whole file that holds it -------------------------------------------------


def test_a_row_removed_with_the_file_that_holds_it_is_named(exported, fresh: Path, capsys) -> None:
    """The log's fold at the checkpoint still holds the file live; nothing holds the bundle to carry
    every live file that has rows of the version, so a row removed this way is never named."""
    files = entries(exported["bundle"])
    hardware = _hardware_row(files)
    name = _file_of(files, hardware["run_id"])
    del files[name]
    index = json.loads(files["bundle.json"])
    index["files"].remove(name.split("/", 1)[1])
    files["bundle.json"] = json.dumps(index).encode()
    rows = [r for r in json.loads(files["rows.json"]) if r["run_id"] != hardware["run_id"]]
    files["rows.json"] = json.dumps(rows).encode()
    # only the bundle's checks decide here: a replay of what is left reproduces every remaining row
    problems = check(read_bundle(rezip(files))).problems
    assert problems, "a bundle with the hardware row (and its file) removed verifies"


# --- a row duplicated in rows.json, the forged copy first ---------------------------------------------


def _row_twice(files: dict[str, bytes]) -> None:
    rows = json.loads(files["rows.json"])
    forged = dict(rows[0]) | {"gap": 0.5, "passed": False, "verdict": "forged"}
    files["rows.json"] = json.dumps([forged, *rows]).encode()


def _member_twice(files: dict[str, bytes]) -> None:
    """The first row's text starts with a forged ``gap`` and ``passed``: Python's reader keeps the last."""
    rows = json.loads(files["rows.json"])
    texts = [json.dumps(r) for r in rows]
    texts[0] = '{"gap": 0.5, "passed": false, ' + texts[0][1:]
    files["rows.json"] = ("[" + ", ".join(texts) + "]").encode()


DUPLICATED = {"a row twice, the forged copy first": _row_twice,
              "a member twice in a row, the forged value first": _member_twice}  # fmt: skip


@pytest.mark.parametrize("duplicated", list(DUPLICATED))
def test_a_row_duplicated_in_rows_json_with_other_numbers_is_named(exported, duplicated) -> None:
    files = entries(exported["bundle"])
    DUPLICATED[duplicated](files)
    problems = check(read_bundle(rezip(files))).problems
    assert problems, "rows.json with a forged duplicate verifies"


# --- the bundle's own trust list: a key no root endorsed ----------------------------------------------


def test_a_log_re_signed_with_a_key_no_root_endorsed_is_not_trusted(
    exported, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/replay.md: trust.json is "the host keys the operator's root endorsed"; each of the
    exporter's keys carries its endorsement. A key with none (here, with the operator's root known to
    the reader, ``QSOLVE_RECEIPT_ROOT``) vouches for nothing."""
    from tests.qsolve.receipts.roots import trust_root

    trust_root(monkeypatch)
    files = entries(exported["bundle"])
    _resign(files, FORGER)
    trust = json.loads(files["trust.json"])
    trust["keys"].append({"key": FORGER.public_hex, "host": "forger"})
    files["trust.json"] = json.dumps(trust).encode()
    problems = check(read_bundle(rezip(files))).problems
    assert problems, "a log and checkpoint signed by a key no root endorsed verify against the bundle's list"


# --- a hostile bundle: one line and exit 2, never a traceback -----------------------------------------


def _deep_index(files: dict[str, bytes]) -> None:
    files["bundle.json"] = b"[" * 200_000 + b"]" * 200_000


def _row_without_run_id(files: dict[str, bytes]) -> None:
    rows = json.loads(files["rows.json"])
    extra = {k: v for k, v in rows[0].items() if k != "run_id"}
    files["rows.json"] = json.dumps([*rows, extra]).encode()


def _row_with_a_list_run_id(files: dict[str, bytes]) -> None:
    rows = json.loads(files["rows.json"])
    files["rows.json"] = json.dumps([*rows, {"run_id": ["x"]}]).encode()


def _entry_retiring_a_number(files: dict[str, bytes]) -> None:
    entries_ = json.loads(files["log.json"])
    entries_.append({"entry": {"adds": [], "retires": [1]}, "signature": "00"})
    files["log.json"] = json.dumps(entries_).encode()


HOSTILE = {
    "bundle.json nested 200,000 deep": _deep_index,
    "a row in rows.json with no run_id": _row_without_run_id,
    "a row in rows.json whose run_id is a list": _row_with_a_list_run_id,
    "a log entry retiring a number": _entry_retiring_a_number,
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_bundle_gets_one_line_and_no_traceback(exported, fresh: Path, capsys, hostile) -> None:
    files = entries(exported["bundle"])
    HOSTILE[hostile](files)
    path = fresh.parent / "hostile.zip"
    path.write_bytes(rezip(files))
    capsys.readouterr()
    code = main(["replay", str(path), "--json"])  # an exception here is the finding
    out, err = capsys.readouterr()
    assert code in (1, 2)
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("qsolve replay: "), err
    else:
        report = json.loads(out)
        assert not report["ok"] and report["problems"], report


# --- a dishonest platform: a hardware row that says "measured" over receipts that say "simulated" -----


def test_a_row_saying_measured_over_simulated_receipts_is_named(exported, fresh: Path, capsys) -> None:
    """The host's own key signs everything (the platform is who is not trusted): only the hardware
    row's ``measured`` is changed; its numbers, receipts and counts are the platform's real ones."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from qsolve.receipts.keys import load_host_key

    files = entries(exported["bundle"])
    hardware = _hardware_row(files)
    classes = {json.loads(files[f"receipts/{d}.json"])["result"]["accuracy"]["class"]
               for d in hardware["receipt_digest"].split(",")}  # fmt: skip
    assert classes == {"simulated"} and hardware["measured"] is False
    name = _file_of(files, hardware["run_id"])
    table = pq.read_table(pa.BufferReader(files[name]))
    i = table.schema.get_field_index("measured")
    mine = pc.equal(table.column("run_id"), hardware["run_id"])
    table = table.set_column(i, table.schema.field(i), pc.or_(table.column(i), mine))
    out = io.BytesIO()
    pq.write_table(table, out)
    key = load_host_key(exported["root"] / "home", create=False)
    _resign(files, key, {name.split("/", 1)[1]: out.getvalue()})
    rows = json.loads(files["rows.json"])
    for r in rows:
        if r["run_id"] == hardware["run_id"]:
            r["measured"] = True
    files["rows.json"] = json.dumps(rows).encode()
    code, report = replay_json(rezip(files), fresh.parent, capsys)
    assert code == 1 and not report["ok"], report["verdict"]
    row = next(r for r in report["rows"] if r["run_id"] == hardware["run_id"])
    said = " ".join([*report["problems"], row["detail"] or ""])
    assert "measured" in said, said


# --- a hardware case changed in cases.json --------------------------------------------------------------


def test_a_hardware_case_changed_in_cases_json_is_named(exported, fresh: Path, capsys) -> None:
    """docs/replay.md: cases.json holds the version's hardware cases "written inline at publication";
    the hardware row's own ``expect`` (signed with the row) says what was promised. A bundle whose
    hardware case promises something else is not the version's."""
    files = entries(exported["bundle"])
    hardware = _hardware_row(files)
    cases = json.loads(files["cases.json"])
    (case,) = [c for c in cases["hardware_cases"] if c["name"] == hardware["case_name"]]
    assert json.loads(hardware["expect"])["max_gap"] == case["expect"]["max_gap"] == 0
    case["expect"] = {"max_gap": 0.5}
    files["cases.json"] = json.dumps(cases).encode()
    code, report = replay_json(rezip(files), fresh.parent, capsys)
    assert code == 1 and not report["ok"], report["verdict"]


# --- whose keys a PASS rests on -------------------------------------------------------------------------


def test_a_replay_without_trust_names_the_keys_its_pass_rests_on(exported, fresh: Path, capsys) -> None:
    """docs/replay.md: without ``--trust`` "the bundle's list is used, which only shows that the bundle
    agrees with itself"; what the reader is to compare is the keys (or the root that endorsed them)."""
    files = entries(exported["bundle"])
    keys = [k["key"] for k in json.loads(files["trust.json"])["keys"]]
    path = fresh.parent / "bundle.zip"
    path.write_bytes(exported["bundle"])
    capsys.readouterr()
    code = main(["replay", str(path)])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert all(k[:16] in out for k in keys), out
