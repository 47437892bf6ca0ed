"""Providers that misbehave, met by a whole provider session (qsolve.providers.jobs): compile, estimate,
confirm, describe again, record, submit, follow, seal (quantum-provider-protocol §2, §5, §5.7, §7).

Every provider here is real: a Python program run as a process provider (the reference provider with one
thing broken, recording every message it receives), or an HTTP server on 127.0.0.1 around the reference.
For each: the error names the provider and the operation; nothing is sealed for what was refused (no
blob); nothing that is not free is submitted unconfirmed (the provider received no submit); and a job
that was submitted stays recorded in the state database, so ``qsolve providers follow`` comes back to it.
"""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from qiskit import QuantumCircuit

from qsolve.cli import main
from qsolve.providers.client import ProviderClient
from qsolve.providers.connect import open_client
from qsolve.providers.errors import ProviderError
from qsolve.providers.jobs import (
    Confirmation,
    JobStopped,
    NotConfirmed,
    ProviderSession,
    StillRunning,
    SubmitIncomplete,
)
from qsolve.providers.reference import ReferenceOptions, ReferenceProvider
from qsolve.receipts import verify
from qsolve.receipts.keys import load_host_key
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import connect

SHOTS = 100

# ---- the providers ------------------------------------------------------------------------------------

#: the reference provider with one thing broken (argv: MODE RECORD JOBS); every message is recorded first
PROCESS = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path

    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # standard output for answers alone
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    mode, record, jobs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    provider = ReferenceProvider(ReferenceOptions(qubits=4, jobs_dir=jobs))


    def send(answer):
        out.write(json.dumps(answer).encode() + b"\\n")


    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        op = message.get("op")
        with record.open("a") as f:
            f.write(json.dumps(message) + "\\n")
        answer = provider.handle(message)
        if mode == "hang:" + op:
            time.sleep(600)
        if mode == "not-json:" + op:
            out.write(b"this is not JSON\\n")
            continue
        if mode == "two-lines:" + op:
            out.write(json.dumps(answer).encode() + b"\\n" + json.dumps(answer).encode() + b"\\n")
            continue
        if mode == "dies-after-submit" and op == "submit" and not (jobs / "died").exists():
            (jobs / "died").write_text("the submit was taken, then the process ended")
            os._exit(3)
        if mode == "miscount" and op == "result" and answer.get("ok"):
            first = next(iter(answer["counts"]))
            answer["counts"][first] -= 1
        if mode.startswith("running:") and op == "status" and answer.get("ok"):
            polls = jobs / (message["job"] + ".polls")
            seen = int(polls.read_text()) + 1 if polls.exists() else 1
            polls.write_text(str(seen))
            if seen <= int(mode.split(":")[1]):
                answer = {"ok": True, "status": "running"}
        if mode == "cannot-cancel":
            if op == "describe" and answer.get("ok"):
                answer["cancels"] = False
            if op == "cancel":
                why = "this device cannot cancel"
                answer = {"ok": False, "error": {"code": "unsupported", "message": why}}
        send(answer)
    """
)


class Http(ThreadingHTTPServer):
    """The reference provider over HTTP on 127.0.0.1, each answer passed through ``alter(message,
    answer, headers)``, which gives ``(status, answer)``; every message received is kept."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, alter, options: ReferenceOptions | None = None):
        self.provider = ReferenceProvider(options or ReferenceOptions(qubits=4))
        self.alter = alter
        self.messages: list[dict] = []
        self.headers_seen: list[dict] = []
        self.calls: dict[str, int] = {}
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    @property
    def ops(self) -> list[str]:
        return [m.get("op") for m in self.messages]

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server = self.server
        server.messages.append(message)
        server.headers_seen.append(dict(self.headers))
        op = message.get("op")
        server.calls[op] = server.calls.get(op, 0) + 1
        status, answer = server.alter(message, server.provider.handle(message), self.headers)
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# ---- the host -----------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return home


@pytest.fixture
def sessions(home):
    made: list[ProviderSession] = []

    def make(name: str, client, kind: str, *, yes: bool = False, wait_s: float = 30.0) -> ProviderSession:
        blobs = BlobStore(home)

        def keep(text: str) -> tuple[str, str]:
            digest = blobs.put(text.encode("utf-8"))
            return digest, str(blobs.path(digest))

        told: list[str] = []
        session = ProviderSession(
            name=name,
            kind=kind,
            client=client,
            book=connect(home=home),
            signer=load_host_key(home),
            keep=keep,
            confirmation=Confirmation(yes=yes),
            tell=told.append,
            wait_s=wait_s,
        )
        session.told = told
        made.append(session)
        return session

    yield make
    for s in made:
        s.client.close()
        s.book.close()


@pytest.fixture
def servers():
    made: list[Http] = []

    def make(alter, options=None) -> Http:
        made.append(Http(alter, options))
        return made[-1]

    yield make
    for s in made:
        s.stop()


class Process:
    """A misbehaving process provider, added to providers.yaml as ``name``."""

    def __init__(self, tmp: Path, name: str, mode: str, *, timeout: float = 20.0, jobs: Path | None = None):
        script = tmp / "misbehaving_provider.py"
        script.write_text(PROCESS)
        self.record = tmp / f"{name}-received.jsonl"
        self.jobs = jobs or tmp / f"{name}-jobs"
        self.name = name
        argv = [sys.executable, str(script), mode, str(self.record), str(self.jobs)]
        self.record.touch()  # what it writes: made here, and allowed by name (nothing else is writable)
        self.jobs.mkdir(parents=True, exist_ok=True)
        writes = ["--allow-write", str(self.record), "--allow-write", str(self.jobs)]
        add = ["providers", "add", name, "--timeout", str(timeout), *writes, "--process", "--", *argv]
        assert main(add) == 0

    @property
    def ops(self) -> list[str]:
        if not self.record.exists():
            return []
        return [json.loads(line).get("op") for line in self.record.read_text().splitlines()]


def bell() -> QuantumCircuit:
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    return circuit


def process_session(sessions, provider: Process, **kw) -> ProviderSession:
    client, entry = open_client(provider.name)
    return sessions(provider.name, client, entry.transport, **kw)


def jobs_of(session: ProviderSession):
    return session.book.list_provider_jobs()


def nothing_sealed(home: Path) -> bool:
    blobs = home / "blobs"
    return not blobs.exists() or not any(p.is_file() for p in blobs.rglob("*"))


def refused_before_submit(session: ProviderSession, ops: list[str], home: Path) -> None:
    """Nothing was sent to be run, nothing recorded as sent, nothing sealed."""
    assert "submit" not in ops
    assert jobs_of(session) == []
    assert nothing_sealed(home)


# ---- process providers that break the transport ----------------------------------------------------------


def test_a_provider_that_hangs_on_submit(home, sessions, tmp_path):
    provider = Process(tmp_path, "hangs", "hang:submit", timeout=3.0)
    session = process_session(sessions, provider)
    with pytest.raises(SubmitIncomplete) as caught:
        session.run(bell(), SHOTS, seed=3)
    message = str(caught.value)
    assert message.startswith("provider hangs: submit: timeout: no answer within 3 s")
    assert "may have taken it" in message and f"qsolve providers follow {caught.value.record}" in message
    assert provider.ops == ["describe", "estimate", "describe", "submit"]  # the submit was taken
    (job,) = jobs_of(session)
    assert job.id == caught.value.record and job.status == "submitting" and job.job is None
    assert nothing_sealed(home)


def test_a_provider_that_writes_a_line_that_is_not_json(home, sessions, tmp_path):
    provider = Process(tmp_path, "garbles", "not-json:status")
    session = process_session(sessions, provider)
    with pytest.raises(ProviderError) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert (
        str(caught.value) == "provider garbles: status: protocol: the answer is not JSON: 'this is not JSON'"
    )
    (job,) = jobs_of(session)
    assert job.status == "submitted" and job.job.startswith("ref-")  # recorded, with the provider's id
    assert nothing_sealed(home)
    session.client.close()
    # the provider mended (the same name, the same jobs): the recorded job is followed to its end
    Process(tmp_path, "garbles", "well", jobs=provider.jobs)
    assert main(["providers", "follow", job.id]) == 0
    done = session.book.get_provider_job(job.id)
    assert done.status == "done" and verify(BlobStore(home).get(done.receipt).decode()).valid


def test_a_provider_that_writes_two_lines_for_one_message(home, sessions, tmp_path):
    provider = Process(tmp_path, "twice", "two-lines:estimate")
    session = process_session(sessions, provider)
    with pytest.raises(ProviderError) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert str(caught.value) == (
        "provider twice: estimate: protocol: the provider wrote more than one line for one message"
    )
    refused_before_submit(session, provider.ops, home)


def test_counts_that_do_not_sum_are_refused_and_nothing_is_sealed(home, sessions, tmp_path):
    provider = Process(tmp_path, "miscounts", "miscount")
    session = process_session(sessions, provider)
    with pytest.raises(JobStopped) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert str(caught.value) == (
        f"provider miscounts: result: protocol: the counts sum to {SHOTS - 1}, not to the {SHOTS} shots "
        "asked: nothing was sealed"
    )
    (job,) = jobs_of(session)
    assert job.status == "failed" and job.error == str(caught.value) and job.receipt is None
    assert nothing_sealed(home)


def test_a_provider_that_dies_after_taking_the_submit(home, sessions, tmp_path, capsys):
    provider = Process(tmp_path, "dies", "dies-after-submit")
    session = process_session(sessions, provider)
    with pytest.raises(SubmitIncomplete) as caught:
        session.run(bell(), SHOTS, seed=3)
    record = caught.value.record
    assert str(caught.value).startswith(
        "provider dies: submit: transport: the provider process ended before it answered (exit code 3)"
    )
    assert [p.name for p in provider.jobs.glob("ref-*.json")] != []  # it took the job before it died
    (job,) = jobs_of(session)
    assert job.id == record and job.status == "submitting"
    assert nothing_sealed(home)
    session.client.close()
    # followed later: nothing is sent again without the person's word
    capsys.readouterr()
    assert main(["providers", "follow", record]) == 1
    err = capsys.readouterr().err
    assert (
        "its submit did not complete, so dies may have taken (and billed) it; nothing was sent again" in err
    )
    assert provider.ops.count("submit") == 1
    # with it, the job is sent again, and sealed
    assert main(["providers", "follow", record, "--resubmit"]) == 0
    assert provider.ops.count("submit") == 2 and len(list(provider.jobs.glob("ref-*.json"))) == 2
    out = capsys.readouterr().out
    path = out.strip().rsplit("receipt ", 1)[1]
    assert verify(Path(path).read_text()).valid


def test_a_provider_that_cannot_cancel(home, sessions, tmp_path):
    provider = Process(tmp_path, "keeps", "cannot-cancel")
    session = process_session(sessions, provider)
    sealed = session.run(bell(), SHOTS, seed=3)
    assert session.description()["cancels"] is False
    assert "cancel" not in provider.ops  # a session never cancels a job
    assert verify(Path(sealed.path).read_text()).valid
    with pytest.raises(ProviderError) as caught:
        session.client.cancel(sealed.job["result"]["job"]["id"])
    assert str(caught.value) == "provider keeps: cancel: unsupported: this device cannot cancel"
    assert session.book.get_provider_job(sealed.record).status == "done"


def test_a_job_past_the_wait_is_followed_to_its_end_later(home, sessions, tmp_path, capsys):
    provider = Process(tmp_path, "slow", "running:4")
    session = process_session(sessions, provider, wait_s=0.3)
    with pytest.raises(StillRunning) as caught:
        session.run(bell(), SHOTS, seed=3)
    record = caught.value.record
    assert "is still running after 0.3 s; it was not cancelled" in str(caught.value)
    assert f"`qsolve providers follow {record}` reads it later" in str(caught.value)
    assert "cancel" not in provider.ops
    job = session.book.get_provider_job(record)
    assert job.status == "submitted" and job.polls >= 1
    assert nothing_sealed(home)
    session.client.close()  # the first client stops: its process ends, the job is in the provider's folder
    capsys.readouterr()
    assert main(["providers", "follow", record]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"provider job {record}: done; receipt ")
    path = Path(out.strip().rsplit("receipt ", 1)[1])
    verdict = verify(path.read_text())
    assert verdict.valid, verdict.reasons
    done = session.book.get_provider_job(record)
    assert done.status == "done" and done.polls == 5  # four times running, then done
    assert json.loads(path.read_text())["result"]["job"] == {"id": job.job, "polls": 5}
    assert "cancel" not in provider.ops
    # and once done, following it again says so
    assert main(["providers", "follow", record]) == 0
    assert f"provider job {record} (slow, its id {job.job}): done" in capsys.readouterr().out


# ---- HTTP providers ----------------------------------------------------------------------------------


def passed(message, answer, headers):
    return 200, answer


def test_http_500_with_a_good_looking_estimate(home, sessions, servers):
    def alter(message, answer, headers):
        return (500, {"ok": True, "free": True}) if message.get("op") == "estimate" else (200, answer)

    server = servers(alter)
    session = sessions("five", ProviderClient.over_http("five", server.url), "http")
    with pytest.raises(ProviderError) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert str(caught.value) == (
        "provider five: estimate: transport: HTTP 500 Internal Server Error: "
        "only a 200 response carries an answer"
    )
    refused_before_submit(session, server.ops, home)


def test_http_500_with_a_good_looking_submit_answer(home, sessions, servers):
    def alter(message, answer, headers):
        return (500, answer) if message.get("op") == "submit" else (200, answer)

    server = servers(alter)
    session = sessions("five", ProviderClient.over_http("five", server.url), "http")
    with pytest.raises(SubmitIncomplete) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert str(caught.value).startswith("provider five: submit: transport: HTTP 500")
    (job,) = jobs_of(session)
    assert job.status == "submitting" and job.job is None  # the job the 500's body named is not taken as its
    assert nothing_sealed(home)


def test_describe_changing_between_estimate_and_submit(home, sessions, servers):
    def alter(message, answer, headers):
        if message.get("op") == "describe" and answer.get("ok"):
            answer = {**answer, "calibration": {"id": f"calibration-{server.calls['describe']}"}}
        return 200, answer

    server = servers(alter)
    session = sessions("drifts", ProviderClient.over_http("drifts", server.url), "http")
    with pytest.raises(JobStopped) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert str(caught.value) == (
        "provider drifts: describe changed between estimate and submit (the program was compiled against "
        "the earlier description): nothing was submitted"
    )
    assert server.ops == ["describe", "estimate", "describe"]
    refused_before_submit(session, server.ops, home)


def test_an_unpriced_estimate_needs_the_persons_confirmation(home, sessions, servers):
    server = servers(passed, ReferenceOptions(qubits=4, unpriced=True))
    session = sessions("unpriced", ProviderClient.over_http("unpriced", server.url), "http")
    with pytest.raises(NotConfirmed) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert str(caught.value) == (
        "provider unpriced: the job is not free (the cost is unknown (the provider sets no price for this "
        "job)) and this run has no confirmation (--yes, or yes when asked): nothing was submitted"
    )
    assert session.told == [
        "provider unpriced: the cost is unknown (the provider sets no price for this job)"
    ]
    refused_before_submit(session, server.ops, home)

    confirmed = sessions("unpriced", ProviderClient.over_http("unpriced", server.url), "http", yes=True)
    sealed = confirmed.run(bell(), SHOTS, seed=3)
    assert server.ops.count("submit") == 1
    assert confirmed.confirmation.given and "Submit it?" in confirmed.confirmation.given[0]
    text = Path(sealed.path).read_text()
    assert verify(text).valid
    cost = json.loads(text)["result"]["cost"]
    assert cost["free"] is False and cost["confirmed"] is True and cost["charged"] is None
    assert cost["estimate"]["priced"] is False and "unknown" in cost["estimate"]
    assert "confirmed_by" not in cost  # a host's receipt: its own confirmation


def test_an_estimate_of_no_form_is_a_cost_unknown_and_shows_no_figure(home, sessions, servers):
    def alter(message, answer, headers):
        if message.get("op") == "estimate" and answer.get("ok"):
            return 200, {"ok": True, "free": False, "amount": 0.37, "currency": "USD"}
        return 200, answer

    server = servers(alter)
    session = sessions("vague", ProviderClient.over_http("vague", server.url), "http")
    with pytest.raises(NotConfirmed) as caught:
        session.run(bell(), SHOTS, seed=3)
    assert "the cost is unknown" in str(caught.value) and "nothing was submitted" in str(caught.value)
    shown = " ".join([str(caught.value), *session.told])
    assert "0.37" not in shown and "USD" not in shown  # no figure of an estimate refused
    refused_before_submit(session, server.ops, home)

    confirmed = sessions("vague", ProviderClient.over_http("vague", server.url), "http", yes=True)
    sealed = confirmed.run(bell(), SHOTS, seed=3)
    cost = json.loads(Path(sealed.path).read_text())["result"]["cost"]
    assert cost["confirmed"] is True and "amount" not in cost["estimate"] and "unknown" in cost["estimate"]
    assert "0.37" not in json.dumps(cost)


def test_a_wrong_credential_is_unauthorized_and_never_quoted(home, sessions, servers):
    right, wrong = "RIGHT-cred-2b1e77", "WRONG-cred-9d4c55"

    def alter(message, answer, headers):
        token = (headers.get("Authorization") or "").removeprefix("Bearer ")
        if token != right:  # a careless provider that quotes what it was sent
            return 200, {
                "ok": False,
                "error": {"code": "unauthorized", "message": f"{token} is not accepted"},
            }
        return 200, answer

    server = servers(alter)
    session = sessions("locked", ProviderClient.over_http("locked", server.url, credential=wrong), "http")
    with pytest.raises(ProviderError) as caught:
        session.run(bell(), SHOTS, seed=3)
    e = caught.value
    assert (e.provider, e.op, e.code) == ("locked", "describe", "unauthorized")
    assert str(e) == "provider locked: describe: unauthorized: [credential redacted] is not accepted"
    assert wrong not in repr(e) and right not in str(e)
    assert server.headers_seen[0]["Authorization"] == f"Bearer {wrong}"  # it went to its provider only
    refused_before_submit(session, server.ops, home)
