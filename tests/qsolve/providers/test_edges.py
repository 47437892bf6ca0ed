"""The client's last edges (issue 38, item 4), against the sly provider (tests/qsolve/providers/sly.py), a
real provider over HTTP on loopback or as a process, set to break one rule at a time:

- Ctrl-C (SIGINT) while ``qsolve run`` waits on a job that never finishes: the job is not cancelled, it
  stays recorded, and the command says its record and ``qsolve providers follow RECORD`` (exit 130);
- ``qsolve providers jobs`` lists the job records: id, provider, state, created, the follow command;
- a ``describe`` that fails, or breaks the protocol, ends ``qsolve run`` with one line naming the
  provider and the rule, and nothing sent;
- a provider URL with a user and password is refused at ``providers add`` (a credential goes through
  ``--credential-env``), and one stored before is never printed whole by ``providers list``;
- a job of a provider that gives no estimate is of unknown cost, and says why as §5.2 and §7 say it, for
  a priced billing as for one that sets no price.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve.providers.jobs import Interrupted, NotConfirmed
from qsolve_pipeline.storage.state import connect
from tests.qsolve.providers.test_attacks import SECRET, Sly, bell

REPO = Path(__file__).resolve().parents[3]
MAX_CUT = str(REPO / "workflows" / "max-cut")
RUN = ["run", MAX_CUT, "--case", "single-edge", "--target"]
PASSWORD = "pw-0f9e8d7c6b5a"
DESCRIPTION = {
    "protocol": "wai.quantum.provider/1",
    "provider": "sly",
    "device": "sly-2",
    "provenance": "simulator",
    "simulator": "an answering machine that measures every qubit as 0",
    "qubits": 2,
    "native_gates": ["rz", "sx", "x", "cz"],
    "connectivity": "all",
    "calibration": {"id": "sly-cal"},
    "billing": {"free": True},
}


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


@pytest.fixture
def process_sly(home):
    made = Sly(home, "process")
    yield made
    made.close()


def _default_sigint() -> None:  # the child hears Ctrl-C as a terminal's command would, however pytest runs
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted(
    argv: list[str], ready, sig=signal.SIGINT, bound_s: float = 300.0
) -> tuple[object, int, str]:
    """``qsolve ARGV`` in a process group of its own, sent SIGINT (a terminal's Ctrl-C: the whole group
    hears it, the platform's worker too), or ``sig`` to it alone, once ``ready()`` gives something other
    than None: that, the exit code and what it wrote on standard error. The bound is a failure's, never
    the test's pace."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "qsolve.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        start_new_session=True,
        preexec_fn=_default_sigint,  # noqa: PLW1509 - one call, before exec
    )
    try:
        end = time.monotonic() + bound_s
        while (got := ready()) is None:
            if proc.poll() is not None:
                pytest.fail(
                    f"qsolve {argv[0]} ended ({proc.returncode}) before it waited: {proc.stderr.read()}"
                )
            if time.monotonic() > end:
                pytest.fail(f"qsolve {argv[0]} never waited on a job")
            time.sleep(0.1)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return got, proc.returncode, err


def _submitted(home: Path):
    """A function that gives the first job record once it is ``submitted``, else None."""

    def submitted():
        with connect(home=home) as db:
            jobs = db.list_provider_jobs("sly")
        return jobs[0] if jobs and jobs[0].status == "submitted" else None

    return submitted


def test_ctrl_c_while_waiting_leaves_the_job_recorded_and_says_how_to_follow_it(home, http_sly, capsys):
    http_sly.behave(status="running")  # every job it takes runs on, never done
    job, code, err = _interrupted([*RUN, "provider:sly"], _submitted(home))
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    said = [line for line in err.splitlines() if line.startswith("qsolve run: ")]
    assert said == [
        f"qsolve run: provider sly: interrupted (Ctrl-C) while waiting on job {job.job}; it was not "
        f"cancelled and is recorded as {job.id}: `qsolve providers follow {job.id}` reads it later"
    ]
    assert f"job record {job.id} (the provider's id {job.job}): submitted" in err
    with connect(home=home) as db:
        jobs = db.list_provider_jobs("sly")
    assert [(j.id, j.status) for j in jobs] == [(job.id, "submitted")]  # the record remains, to follow
    assert http_sly.received("cancel") == 0  # never cancelled because the client stopped waiting

    capsys.readouterr()
    assert main(["providers", "jobs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["RECORD", "PROVIDER", "STATE", "CREATED", "FOLLOW"]
    assert lines[1].split() == [
        job.id, "sly", "submitted", job.created_at.isoformat(timespec="seconds"),
        "qsolve", "providers", "follow", job.id,
    ]  # fmt: skip

    asked = http_sly.received("status")  # follow it later, and Ctrl-C that wait too: the same line
    _, code, err = _interrupted(
        ["providers", "follow", job.id], lambda: True if http_sly.received("status") > asked else None
    )
    assert code == 130 and "Traceback" not in err, err
    assert err == (
        f"qsolve: provider sly: interrupted (Ctrl-C) while waiting on job {job.job}; it was not "
        f"cancelled and is recorded as {job.id}: `qsolve providers follow {job.id}` reads it later\n"
    )
    with connect(home=home) as db:
        assert db.get_provider_job(job.id).status == "submitted"
    assert http_sly.received("cancel") == 0


def test_sigterm_while_waiting_names_the_record_too(home, http_sly):
    """Stopped by SIGTERM (a supervisor's, a container's), qsolve run says what Ctrl-C says: the job is
    recorded, not cancelled, and followed later (it printed no record id)."""
    http_sly.behave(status="running")
    job, code, err = _interrupted([*RUN, "provider:sly"], _submitted(home), signal.SIGTERM)
    assert code == 143 and "Traceback" not in err, err
    assert (
        f"qsolve run: provider sly: interrupted (SIGTERM) while waiting on job {job.job}; it was not "
        f"cancelled and is recorded as {job.id}: `qsolve providers follow {job.id}` reads it later\n"
    ) in err
    with connect(home=home) as db:
        assert db.get_provider_job(job.id).status == "submitted"
    assert http_sly.received("cancel") == 0


def test_the_interrupted_line_of_a_submit_that_never_answered(home, process_sly):
    """Ctrl-C before the submit's answer: the provider may have taken it, so it is followed, and sent
    again only on the person's word, as a submit that failed says."""
    session = process_sly.session()
    program = {"format": "wai.native/1", "basis": "rzsxxcz", "bits": 1, "gates": [], "measure": []}
    record = session.book.record_provider_job("sly", program, DESCRIPTION, 10)
    session.book.provider_job_submitting(record.id)
    with pytest.raises(Interrupted) as stopped:
        raise Interrupted(session.interrupted(record.id), record=record.id)
    said = str(stopped.value)
    assert said.startswith("provider sly: interrupted (Ctrl-C) before its submit's answer came; ")
    assert f"recorded as {record.id}; `qsolve providers follow {record.id}` says what is known" in said
    assert f"`qsolve providers follow {record.id} --resubmit --yes` sends it again" in said
    assert isinstance(stopped.value, KeyboardInterrupt) and "\n" not in said


def test_providers_jobs_lists_every_record(home, capsys):
    assert main(["providers", "jobs"]) == 0
    assert capsys.readouterr().out == "no provider job is recorded here\n"
    with connect(home=home) as db:
        first = db.record_provider_job("lab", {"bits": 1}, DESCRIPTION, 10)
        second = db.record_provider_job("ref", {"bits": 1}, DESCRIPTION, 10)
        db.provider_job_submitting(second.id)
        db.provider_job_submitted(second.id, "ref-7")
    assert main(["providers", "jobs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["provider"], r["state"], r["job"]) for r in rows] == [
        (first.id, "lab", "recorded", None),
        (second.id, "ref", "submitted", "ref-7"),
    ]
    assert rows[0]["follow"] == f"qsolve providers follow {first.id}"
    assert rows[0]["created"] == first.created_at.isoformat(timespec="seconds")
    assert main(["providers", "jobs", "--provider", "ref"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].startswith(f"{second.id}  ref ")
    assert main(["providers", "jobs", "--provider", "nobody"]) == 0
    assert capsys.readouterr().out == "no provider job of provider nobody is recorded here\n"


def _run_line(capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["run", MAX_CUT, "--case", "single-edge", "--target", "provider:sly"])
    printed = capsys.readouterr()
    assert printed.out == ""
    return code, printed.err


@pytest.mark.parametrize(
    ("transport", "describe", "rule"),
    [
        ("http", '{"ok": false, "error": {"code": "internal", "message": "the device is down"}}',
         "describe: internal: the device is down"),
        ("http", "the device is down", "describe: protocol: the answer is not JSON"),
        ("http", json.dumps({"ok": True, **DESCRIPTION, "protocol": "wai.quantum.provider/9"}),
         "describe: protocol: "),
        ("process", json.dumps({"ok": True, **DESCRIPTION}) + "\n" + json.dumps({"ok": True, **DESCRIPTION}),
         "describe: protocol: the provider wrote more than one line for one message"),
    ],
    ids=["error", "not-json", "other-protocol", "second-line"],
)  # fmt: skip
def test_a_describe_that_fails_ends_qsolve_run_in_one_line(home, request, capsys, transport, describe, rule):
    sly = request.getfixturevalue(f"{transport}_sly")
    sly.behave(raw={"describe": describe})
    code, err = _run_line(capsys)
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"qsolve run: provider sly: {rule}"), err
    assert err.endswith(": nothing was sent\n")
    assert SECRET not in err
    assert sly.received("submit") == 0 and sly.received("estimate") == 0
    with connect(home=home) as db:
        assert db.list_provider_jobs() == []


def test_a_url_with_a_password_is_refused_at_add(home, capsys):
    url = f"http://user:{PASSWORD}@127.0.0.1:9/"
    capsys.readouterr()
    assert main(["providers", "add", "lab", "--http", url]) == 2
    printed = capsys.readouterr()
    assert printed.err.count("\n") == 1 and PASSWORD not in printed.out + printed.err
    assert "--credential-env" in printed.err and "names a user or a password" in printed.err
    assert not (home / "providers.yaml").exists()
    assert main(["providers", "add", "lab", "--http", "http://user@127.0.0.1:9/"]) == 2  # a user alone too


def test_a_stored_url_with_a_password_is_never_printed(home, capsys):
    home.mkdir(parents=True)
    (home / "providers.yaml").write_text(
        f"providers:\n  lab: {{transport: http, url: 'http://user:{PASSWORD}@127.0.0.1:9/'}}\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main(["providers", "list"]) == 0
    listed = capsys.readouterr().out
    # the whole userinfo is taken out: a user alone may be a token (http://TOKEN@host/)
    assert PASSWORD not in listed and "lab  http  http://[credential redacted]@127.0.0.1:9/" in listed
    assert main(["providers", "describe", "lab"]) == 1  # its transport refuses it: one line, no password
    printed = capsys.readouterr()
    assert printed.err.count("\n") == 1 and PASSWORD not in printed.err
    assert printed.err.startswith("qsolve providers: provider lab: connect: transport: the URL names a user")
    assert main(["run", MAX_CUT, "--case", "single-edge", "--target", "provider:lab"]) == 1
    printed = capsys.readouterr()
    assert printed.err.count("\n") == 1 and PASSWORD not in printed.err
    assert printed.err.startswith("qsolve run: provider lab: connect: ")

    (home / "providers.yaml").write_text(  # a credential beside it, to another machine: refused on load
        "providers:\n"
        f"  lab: {{transport: http, url: 'http://user:{PASSWORD}@example.com/', credential: true}}\n",
        encoding="utf-8",
    )
    assert main(["providers", "list"]) == 2
    printed = capsys.readouterr()
    assert PASSWORD not in printed.out + printed.err and "[credential redacted]" in printed.err


@pytest.mark.parametrize(
    ("billing", "why"),
    [
        ({"unit": "shot", "price": "0.0003", "currency": "EUR"},
         "the provider gives no estimate: its billing prices one shot at 0.0003 EUR, and this job's cost "
         "is unknown"),
        ({"free": False, "priced": False}, "the provider gives no estimate, and its billing sets no price"),
        ({"free": False}, "the provider gives no estimate, and its billing states nothing (billing is "
         '"free": false alone: it states no price, nor that none is set)'),
    ],
    ids=["priced", "unpriced", "of-no-form"],
)  # fmt: skip
def test_no_estimate_is_an_unknown_cost_said_as_the_seed_says(home, http_sly, billing, why):
    http_sly.behave(
        describe={"billing": billing},
        raw={"estimate": '{"ok": false, "error": {"code": "unsupported", "message": "no estimates"}}'},
    )
    session = http_sly.session()
    with pytest.raises(NotConfirmed):
        session.run(bell(), 100)
    assert session.told == [f"provider sly: the cost is unknown ({why})"]
    assert http_sly.received("submit") == 0
    from qsolve.providers.cost import quote_cost

    client = http_sly.client()
    try:
        described = client.describe().answer
        assert quote_cost(client, described, circuits=2, shots=200)["note"] == why
    finally:
        client.close()
