"""A tester's attacks on issue 38 as merged (items 1 to 4), from the seeds (calibration-evaluation.md,
quantum-provider-protocol.md) and the issue's own promises, each a finding that failed as merged (a strict
xfail then) and passes since it was mended (i38-fix: the markers taken off, the assertions kept).

- a provider's error ``message`` of many lines (a traceback pasted in) is printed as many lines by
  ``qsolve run`` (its describe), ``qsolve providers describe`` and ``qsolve providers follow``: the issue
  says every provider error is one line;
- a provider URL whose userinfo is a user alone (a token written as ``http://TOKEN@host/``), stored before
  ``providers add`` refused it, is printed whole by ``providers list``; a providers.yaml that does not read
  as YAML is quoted by ``providers list`` with the URL's password in it, over several lines (§1: a
  credential never in an answer the host prints);
- ``EVALUATION_STALE_AFTER_SECONDS`` and ``EVALUATION_HEARTBEAT_SECONDS`` past what a timedelta or a wait
  holds (1e300, 1e10) pass the check "before a run is stored": ``evaluations list`` is then a traceback,
  a stored run cannot be executed, and the heartbeat's thread dies;
- Ctrl-C while ``qsolve providers test`` waits on a job it submitted names no job at all;
- the checker sends §4's ``0 ≤ m`` and ``k ≤ 32`` to one gate per basis only: a provider that takes a
  ``zz`` at ``[-1, 2]``, an ``xx`` or a ``prx`` phase at ``[1, 33]`` (tests/qsolve/providers/bent.py,
  ``lax-angle``) passes it.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve_pipeline.storage.state import connect
from tests.qsolve.providers.test_attacks import SECRET, Sly
from tests.qsolve.providers.test_edges import _interrupted

REPO = Path(__file__).resolve().parents[2]
MAX_CUT = str(REPO / "workflows" / "max-cut")
RUN = ["run", MAX_CUT, "--case", "single-edge", "--target", "provider:sly"]
TOKEN = "ghp_0f9e8d7c6b5a4f3e2d1c"
PASSWORD = "pw-9a8b7c6d5e4f"
#: a provider's error message as a careless provider writes it: its own traceback pasted in
MANY_LINES = (
    'the device is down\nTraceback (most recent call last):\n  File "/srv/provider.py", line 9\nKeyError: 1'
)


def _error(op_message: str) -> str:
    return json.dumps({"ok": False, "error": {"code": "internal", "message": op_message}})


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("SLY_KEY", SECRET)
    return home


@pytest.fixture
def http_sly(home):
    made = Sly(home, "http")
    yield made
    made.close()


# ---- every provider error one line (item 4) -----------------------------------------------------------


@pytest.mark.parametrize("breaks", ["\n", "\r"], ids=["newline", "carriage-return"])
def test_a_describe_error_of_many_lines_ends_qsolve_run_in_one_line(home, http_sly, capsys, breaks):
    http_sly.behave(raw={"describe": _error(MANY_LINES.replace("\n", breaks))})
    capsys.readouterr()
    assert main(RUN) == 1
    err = capsys.readouterr().err
    assert err.startswith("qsolve run: provider sly: describe: internal: the device is down")
    assert len(err.splitlines()) == 1, repr(err)
    assert http_sly.received("submit") == 0


def test_providers_describe_prints_a_many_line_error_in_one_line(home, http_sly, capsys):
    http_sly.behave(raw={"describe": _error(MANY_LINES)})
    capsys.readouterr()
    assert main(["providers", "describe", "sly"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("qsolve providers: provider sly: describe: internal: the device is down")
    assert err.count("\n") == 1, err


def test_providers_follow_prints_a_many_line_status_error_in_one_line(home, http_sly, capsys):
    http_sly.behave(status="running")
    session = http_sly.session()
    program = {"format": "wai.native/1", "basis": "rzsxxcz", "bits": 1, "gates": [], "measure": []}
    with connect(home=home) as db:
        record = db.record_provider_job("sly", program, session.description(), 10)
        db.provider_job_submitting(record.id)
        db.provider_job_submitted(record.id, "s-1")
    http_sly.behave(raw={"status": _error(MANY_LINES)})
    capsys.readouterr()
    assert main(["providers", "follow", record.id]) == 1
    err = capsys.readouterr().err
    assert "status: internal: the device is down" in err
    assert err.count("\n") == 1, err


def test_a_job_id_of_two_lines_cannot_split_the_interrupted_line(home, http_sly):
    from tests.qsolve.providers.test_edges import _submitted

    forged = "s-1\nqsolve run: the job finished; nothing is left to follow"
    http_sly.behave(
        raw={"submit": json.dumps({"ok": True, "job": forged}), "status": '{"ok": true, "status": "running"}'}
    )
    job, code, err = _interrupted(RUN, _submitted(home))
    assert code == 130, err
    said = [line for line in err.splitlines() if line.startswith("qsolve run: ")]
    assert len(said) == 1, err
    assert f"recorded as {job.id}" in said[0] and f"qsolve providers follow {job.id}" in said[0]
    assert "nothing is left to follow" not in err.replace(said[0], ""), err


# ---- no credential in what the host prints (item 4, §1) ---------------------------------------------


def test_a_stored_url_with_a_user_alone_is_not_printed(home, capsys):
    home.mkdir(parents=True)
    (home / "providers.yaml").write_text(
        f"providers:\n  lab: {{transport: http, url: 'http://{TOKEN}@127.0.0.1:9/'}}\n", encoding="utf-8"
    )
    capsys.readouterr()
    assert main(["providers", "list"]) == 0
    listed = capsys.readouterr()
    assert listed.out.startswith("lab  http  http://[credential redacted]@127.0.0.1:9/  ")
    assert TOKEN not in listed.out + listed.err, listed.out


def test_a_providers_file_that_is_not_yaml_is_refused_without_its_password(home, capsys):
    home.mkdir(parents=True)
    (home / "providers.yaml").write_text(
        f"providers:\n  lab: {{url: 'http://u:{PASSWORD}@127.0.0.1:9/' transport: http}}\n", encoding="utf-8"
    )
    capsys.readouterr()
    assert main(["providers", "list"]) == 2
    printed = capsys.readouterr()
    assert "not YAML" in printed.err
    assert printed.err.rstrip().endswith("providers.yaml: not YAML (line 2, column 54)"), printed.err
    assert PASSWORD not in printed.out + printed.err, printed.err
    assert printed.err.count("\n") == 1, printed.err


@pytest.mark.parametrize(
    "form", ["http:u:{pw}@127.0.0.1:9/", "http:/u:{pw}@127.0.0.1:9/", "http:\\\\u:{pw}@127.0.0.1:9/"]
)
def test_a_url_without_its_slashes_is_refused_without_its_password(home, capsys, form):
    capsys.readouterr()
    assert main(["providers", "add", "lab", "--http", form.format(pw=PASSWORD)]) == 2
    printed = capsys.readouterr()
    assert printed.err.count("\n") == 1
    assert "the URL names a user or a password" in printed.err, printed.err
    assert PASSWORD not in printed.out + printed.err, printed.err
    assert not (home / "providers.yaml").exists()


# ---- Ctrl-C while the checker waits on a job ----------------------------------------------------------


def test_ctrl_c_while_the_checker_waits_names_the_job_left_running(home, http_sly):
    http_sly.behave(status="running")  # every job it takes runs on
    _, code, err = _interrupted(
        ["providers", "test", "sly"], lambda: True if http_sly.received("status") > 0 else None
    )
    assert "Traceback" not in err, err
    with connect(home=home) as db:
        recorded = db.list_provider_jobs("sly")
    assert http_sly.received("submit") >= 1 and http_sly.received("cancel") == 0
    # the job the provider took is named (its id, s-1 …, or a record to follow), as qsolve run names it
    assert "s-1" in err or any(r.id in err for r in recorded), err
    # in one line, as the checker's Ctrl-C ends (130, as qsolve run's), never cancelled (§5.7)
    said = [line for line in err.splitlines() if line.startswith("qsolve providers test: interrupted")]
    assert len(said) == 1 and "job s-1 (programs/probe)" in said[0] and "not cancelled" in said[0], err
    assert code == 130, err


# ---- EVALUATION_* settings (item 2) -------------------------------------------------------------------


@pytest.fixture
def eval_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from qsolve_pipeline.storage.calibration import open_store
    from tests.qsolve.calibration.calibration_runs import made

    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    for name in ("QCALEVAL_MODEL", "EVALUATION_CONCURRENCY", "EVALUATION_STALE_AFTER_SECONDS",
                 "EVALUATION_HEARTBEAT_SECONDS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(tmp_path / "evaluation.yaml"))
    (tmp_path / "evaluation.yaml").write_text("version: 1\nmodels: []\n")  # the classical judge judges
    with open_store(tmp_path) as store:
        store.record_all([made("Q00", true_status="SUCCESS")])
    return tmp_path


def test_a_stale_after_past_a_timedelta_is_read_past_without_a_traceback(eval_home, monkeypatch, capsys):
    monkeypatch.setenv("EVALUATION_STALE_AFTER_SECONDS", "1e300")
    capsys.readouterr()
    assert main(["evaluations", "list"]) == 0
    err = capsys.readouterr().err
    assert "EVALUATION_STALE_AFTER_SECONDS" in err and "Traceback" not in err and err.count("\n") == 1, err


def test_a_stale_after_past_a_timedelta_is_refused_before_a_run_is_stored(eval_home, monkeypatch):
    from qsolve.evaluation.runs import RunRefused, RunRequest, execute_run, request_run
    from qsolve_pipeline.storage.calibration import open_store

    monkeypatch.setenv("EVALUATION_STALE_AFTER_SECONDS", "1e300")
    with open_store(eval_home) as store:
        try:
            run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
        except RunRefused:
            assert store.db.list_evaluation_runs() == []
            return
        assert execute_run(store.db, store, run.id).status.value == "completed"


def test_a_heartbeat_past_a_wait_is_refused_or_beats(eval_home, monkeypatch):
    from qsolve.evaluation.runs import RunRefused, RunRequest, execute_run, request_run
    from qsolve_pipeline.storage.calibration import open_store

    died: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    monkeypatch.setenv("EVALUATION_HEARTBEAT_SECONDS", "1e10")
    with open_store(eval_home) as store:
        try:
            run = request_run(store.db, store, RunRequest(task_ids=[store.list(qid="Q00")[0].id]))
        except RunRefused:
            assert store.db.list_evaluation_runs() == []
            return
        execute_run(store.db, store, run.id)
    assert died == [], died


# ---- the checker: every angle rule of §4 on every gate (item 3) ---------------------------------------

BENT = [sys.executable, str(REPO / "tests" / "qsolve" / "providers" / "bent.py")]


@pytest.mark.parametrize(
    ("basis", "lax", "gate"),
    [
        ("gpizz", "zz:angle [-1, 2]", {"gate": "zz", "qubits": [0, 1], "turns": [[-1, 2]]}),
        ("prxrzxx", "xx:angle [1, 33]", {"gate": "xx", "qubits": [0, 1], "turns": [[1, 33]]}),
        ("prxcz", "prx:turns.1: angle [1, 33]", {"gate": "prx", "qubits": [0], "turns": [[0, 0], [1, 33]]}),
    ],
    ids=["zz-negative", "xx-exponent-past-32", "prx-phase-exponent-past-32"],
)
def test_a_provider_taking_one_gates_angle_out_of_range_fails_the_checker(
    home, capsys, monkeypatch, basis, lax, gate
):
    monkeypatch.setenv("BENT_BASIS", basis)
    argv = ["providers", "add", "lax", "--env", "BENT_BASIS", "--process", "--", *BENT, "--stdio"]
    assert main([*argv, "lax-angle", lax]) == 0
    from qsolve.providers.connect import open_client

    client = open_client("lax")[0]
    try:  # the provider does take that program, which §4 says it MUST refuse invalid
        program = {"format": "wai.native/1", "basis": basis, "bits": 1, "gates": [gate]}
        program["measure"] = [{"qubit": 0, "bit": 0}]
        message = {"protocol": "wai.quantum.provider/1", "op": "estimate", "shots": 10, "program": program}
        assert client.raw(message).get("ok") is True
    finally:
        client.close()
    capsys.readouterr()
    code = main(["providers", "test", "lax"])
    out = capsys.readouterr().out
    assert code == 1, out  # the provider takes an angle §4 says it MUST refuse invalid
