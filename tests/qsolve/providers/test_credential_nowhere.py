"""A planted credential goes to its provider and nowhere else (quantum-provider-protocol §1.1, §2).

A credential is planted in an environment variable and given to ``qsolve providers add`` for an HTTP
reference that requires it; every provider command is run (add, list, describe, test --yes, run --yes
--json, follow of a job whose first client stopped) and a failing one (a wrong credential); a process
provider is given one too, and writes it to its own log and echoes it in its answers. Then every output
captured, every file under QSOLVE_HOME but the credential store (the state database's bytes and its
tables dumped, the blobs, providers.yaml, the provider logs), the providers' job folders and the HTTP
provider's log are searched for it, as it is, in hex and in base64 at every alignment: it is nowhere.
The process provider finds it in its environment, as WAI_PROVIDER_CREDENTIAL, and not on its command
line (/proc/<pid>/cmdline).
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from qiskit import QuantumCircuit

from qsolve.cli import main
from qsolve.providers.connect import open_client
from qsolve.providers.jobs import StillRunning

PLANTED = "PLANTED-cred-7f3a9c"
WRONG = "WRONG-cred-0b5e21"
REPO = Path(__file__).resolve().parents[3]
REFERENCE = [sys.executable, "-m", "qsolve.providers.reference"]


def needles(secret: str) -> dict[str, bytes]:
    """The secret as it is, in hex, and in base64 (standard and URL-safe) at each of the three alignments
    it can have inside a longer encoded text (the groups it shares with its neighbours left out)."""
    raw = secret.encode()
    found = {"as it is": raw, "hex": raw.hex().encode(), "base64": base64.b64encode(raw)}
    for k in range(3):
        for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
            text = encode(b"\0" * k + raw)
            found[f"{name} at offset {k}"] = text[4 if k else 0 : len(text) - 4]
    return found


def found_in(data: bytes, secret: str) -> list[str]:
    return [form for form, needle in needles(secret).items() if needle in data]


class Outputs:
    """Every command's standard output and error."""

    def __init__(self, capsys) -> None:
        self.capsys = capsys
        self.seen: list[tuple[str, str]] = []

    def run(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(argv))
        got = self.capsys.readouterr()
        self.seen.append((" ".join(argv), got.out + got.err))
        return code, got.out, got.err


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # the owner-only file
    monkeypatch.delenv("WAI_PROVIDER_CREDENTIAL", raising=False)
    return home


@pytest.fixture
def secure_reference(tmp_path):
    """The HTTP reference with ``--require-credential``, the credential in its own environment only; its
    request log (standard error) kept to be searched."""
    jobs, log = tmp_path / "sec-jobs", tmp_path / "sec-server.log"
    env = {**os.environ, "WAI_PROVIDER_CREDENTIAL": PLANTED}
    with log.open("w") as err:
        proc = subprocess.Popen(
            [*REFERENCE, "--http", "127.0.0.1:0", "--require-credential", "--jobs", str(jobs)],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            text=True,
        )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        yield url, jobs, log
    finally:
        proc.terminate()
        proc.wait(timeout=10)


#: a process provider (the reference) that reports where it finds the credential, writes it to its own
#: standard error, and echoes it in its describe answer: a careless provider the host must not repeat
CARELESS = textwrap.dedent(
    """
    import json, os, sys
    report, jobs = sys.argv[1], sys.argv[2]
    credential = os.environ.get("WAI_PROVIDER_CREDENTIAL", "")
    with open(report, "w") as f:
        json.dump({"pid": os.getpid(), "in_env": bool(credential),
                   "in_argv": any(credential and credential in a for a in sys.argv)}, f)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    options = ReferenceOptions(credential=credential, require_credential=True, jobs_dir=jobs)
    provider = ReferenceProvider(options)
    print(f"careless provider: started with credential {credential}", file=sys.stderr, flush=True)
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        answer = provider.handle(message) if provider.authorized(credential) else {"ok": False}
        if message.get("op") == "describe" and answer.get("ok"):
            answer["provider"] = "careless, holding " + credential
        print(f"careless provider: {message.get('op')} with {credential}", file=sys.stderr, flush=True)
        out.write(json.dumps(answer).encode() + b"\\n")
    """
)


class StopsAfterSubmit:
    """The state database, and a client stopped (the person pressed Ctrl-C) as soon as the provider's id
    of the job is stored: the job is recorded as submitted and followed later."""

    def __init__(self, db) -> None:
        self.db = db

    def __getattr__(self, name: str):
        return getattr(self.db, name)

    def provider_job_submitted(self, job_id: str, job: str):
        self.db.provider_job_submitted(job_id, job)
        raise StillRunning(f"the client stopped after job {job} was submitted", record=job_id)


def files_to_search(home: Path) -> list[Path]:
    store = home / "credentials"
    return [p for p in home.rglob("*") if p.is_file() and store not in p.parents]


def test_the_planted_credential_is_found_nowhere(home, tmp_path, capsys, monkeypatch, secure_reference):
    url, http_jobs, server_log = secure_reference
    monkeypatch.setenv("SEC_TOKEN", PLANTED)
    monkeypatch.setenv("BAD_TOKEN", WRONG)
    out = Outputs(capsys)

    # ---- the HTTP provider, every command ----------------------------------------------------------
    assert out.run("providers", "add", "sec", "--http", url, "--credential-env", "SEC_TOKEN")[0] == 0
    code, listed, _ = out.run("providers", "list")
    assert code == 0 and "sec  http" in listed and "a file only its owner can read" in listed
    code, described, _ = out.run("providers", "describe", "sec")
    assert code == 0 and json.loads(described)["provider"] == "qsolve-reference"
    code, checked, _ = out.run("providers", "test", "sec", "--yes")
    assert code == 0, checked
    code, ran, ran_err = out.run(
        "run", str(REPO / "workflows" / "max-cut"), "--case", "single-edge", "--target", "provider:sec",
        "--yes", "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(ran)["receipts"], (ran, ran_err)

    # a job whose first client stopped once it was submitted, followed later from the command line
    from qsolve_pipeline.storage.sessions import provider_session as session

    s = session("sec", yes=True)
    s.book = StopsAfterSubmit(s.book)
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    with pytest.raises(StillRunning) as stopped:
        s.run(circuit, 64, seed=5)
    s.client.close()
    s.book.close()
    record = stopped.value.record
    code, followed, _ = out.run("providers", "follow", record)
    assert code == 0 and followed.startswith(f"provider job {record}: done; receipt ")

    # ---- a wrong credential ------------------------------------------------------------------------
    assert out.run("providers", "add", "bad", "--http", url, "--credential-env", "BAD_TOKEN")[0] == 0
    code, _, err = out.run("providers", "describe", "bad")
    assert (
        code == 1
        and "provider bad: describe: unauthorized: a credential this provider does not accept" in err
    )
    code, checked_bad, _ = out.run("providers", "test", "bad")
    assert code == 1 and "FAIL  describe/complete: provider bad: describe: unauthorized" in checked_bad

    # ---- a process provider with a credential ------------------------------------------------------------
    script, report, proc_jobs = tmp_path / "careless.py", tmp_path / "careless.json", tmp_path / "proc-jobs"
    script.write_text(CARELESS)
    argv = [sys.executable, str(script), str(report), str(proc_jobs)]
    report.touch()  # what it writes: made here, and allowed by name (nothing else is writable)
    proc_jobs.mkdir(exist_ok=True)
    writes = ["--allow-write", str(report), "--allow-write", str(proc_jobs)]
    add = ["providers", "add", "psec", "--credential-env", "SEC_TOKEN", *writes, "--process", "--", *argv]
    assert out.run(*add)[0] == 0
    client, _ = open_client("psec")
    try:
        described = client.describe()
        cmdline = Path(f"/proc/{client.transport.pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{client.transport.pid}/environ").read_bytes().split(b"\0")
    finally:
        client.close()
    assert described.provider == "careless, holding [credential redacted]"
    assert found_in(cmdline, PLANTED) == [] and cmdline.split(b"\0")[:2] == [a.encode() for a in argv[:2]]
    assert f"WAI_PROVIDER_CREDENTIAL={PLANTED}".encode() in environ  # its environment, as §2.2 says
    seen = json.loads(report.read_text())
    assert seen["in_env"] is True and seen["in_argv"] is False
    code, described_p, _ = out.run("providers", "describe", "psec")
    assert code == 0 and "careless, holding [credential redacted]" in described_p
    code, checked_p, _ = out.run("providers", "test", "psec", "--yes")
    failed = [line.split()[1] for line in checked_p.splitlines() if line.startswith("FAIL")]
    assert code == 1 and failed == [  # careless: it takes any credential, and echoes the one it was given
        "credentials/wrong-credential:",
        "credentials/no-credential:",
        "credentials/not-echoed:",
    ], checked_p
    log = home / "providers" / "logs" / "psec.log"
    assert "careless provider: describe with [credential redacted]" in log.read_text()

    # ---- the search ----------------------------------------------------------------------------------
    store = home / "credentials"
    assert found_in((store / "sec").read_bytes(), PLANTED) == ["as it is"]  # the search finds it where it is
    assert found_in((store / "bad").read_bytes(), WRONG) == ["as it is"]
    places: dict[str, bytes] = {f"output of qsolve {argv}": text.encode() for argv, text in out.seen}
    searched = files_to_search(home)
    assert {p.name for p in searched} >= {"state.db", "providers.yaml", "psec.log"}
    assert any("blobs" in p.parts for p in searched)
    for path in searched:
        places[str(path)] = path.read_bytes()
    with sqlite3.connect(home / "state.db") as db:
        places["state.db, its tables dumped"] = "\n".join(db.iterdump()).encode()
        tables = {r[0] for r in db.execute("select name from sqlite_master where type = 'table'")}
    assert "provider_jobs" in tables
    for folder in (http_jobs, proc_jobs):
        for path in folder.rglob("*"):
            if path.is_file():
                places[str(path)] = path.read_bytes()
    places["the HTTP provider's log"] = server_log.read_bytes()
    assert len(places) > 20
    for secret in (PLANTED, WRONG):
        leaks = {where: forms for where, data in places.items() if (forms := found_in(data, secret))}
        assert leaks == {}, f"{secret} found in {leaks}"
    yaml_text = (home / "providers.yaml").read_text()
    assert "credential: true" in yaml_text
