"""The tester's attacks on issue 21 (cost before submit, credentials that stay with their owner), through
the core, with a provider written apart from qsolve (tests/qsolve/providers/sly.py), as a process and over
HTTP on loopback port 0. Each test counts the submits the provider received.

- a huge amount is quoted and authorised exactly, as a decimal string (it was rounded to 28 digits and
  written as ``5.300000000000000000000000000E+41``);
- a job charged past its estimate (estimated free and charged 5000 EUR, say) stops the run before the
  next job (every job was sent, each charged, and nobody was told);
- an answer that is not JSON is quoted without any part of the credential (its first 60 characters kept
  the credential's start when the cut fell inside it);
- an answer naming a member twice (two counts of one outcome) is refused, nothing sealed (the last was
  taken);
- an estimate that rises, turns priced, or is malformed between the quote and the run sends nothing
  past what the quote's confirmation authorised; a description that changes before submit sends nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from qiskit import QuantumCircuit

from qsolve.cli import main
from qsolve.providers.connect import open_client
from qsolve.providers.cost import Authority, CostRefused, provider_cost, quote_cost
from qsolve.providers.errors import ProviderError
from qsolve.providers.jobs import Confirmation, JobStopped, NotConfirmed, ProviderSession
from qsolve.providers.messages import DECIMAL
from qsolve.receipts import verify
from qsolve.receipts.keys import load_host_key
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import connect

SLY = Path(__file__).with_name("sly.py")
SECRET = "sly-own-credential-0123456789"
SHOTS = 100


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("SLY_KEY", SECRET)
    return home


class Sly:
    """The sly provider added as ``sly`` over ``transport``: its behaviour set by :meth:`behave` at any
    time, the messages it received read by :meth:`received`."""

    def __init__(self, home: Path, transport: str) -> None:
        self.home, self.config, self.record = home, home.parent / "sly.json", home.parent / "sly.jsonl"
        self.config.write_text("{}")
        self.record.touch()  # what it writes: made here, and allowed by name (nothing else is writable)
        argv = [sys.executable, str(SLY), str(self.config), str(self.record)]
        self.proc = None
        if transport == "http":
            self.proc = subprocess.Popen([*argv, "--http"], stdout=subprocess.PIPE, text=True)
            url = self.proc.stdout.readline().strip()
            assert main(["providers", "add", "sly", "--http", url, "--credential-env", "SLY_KEY"]) == 0
        else:
            writes = ["--allow-write", str(self.record)]
            assert main(["providers", "add", "sly", "--process", "--credential-env", "SLY_KEY", *writes, "--",
                         *argv, "--stdio"]) == 0  # fmt: skip
        self.sessions: list[ProviderSession] = []

    def behave(self, **config) -> None:
        self.config.write_text(json.dumps(config))

    def received(self, op: str) -> int:
        lines = [json.loads(line) for line in self.record.read_text().splitlines()]
        return sum(1 for m in lines if m.get("op") == op)

    def client(self):
        return open_client("sly", self.home)[0]

    def session(self, *, yes: bool = False, authority: Authority | None = None) -> ProviderSession:
        client, entry = open_client("sly", self.home)
        blobs = BlobStore(self.home)

        def keep(text: str) -> tuple[str, str]:
            digest = blobs.put(text.encode("utf-8"))
            return digest, str(blobs.path(digest))

        told: list[str] = []
        session = ProviderSession(
            name="sly", kind=entry.transport, client=client, book=connect(home=self.home),
            signer=load_host_key(self.home), keep=keep, confirmation=Confirmation(yes=yes), tell=told.append,
            authority=authority,
        )  # fmt: skip
        session.told = told
        self.sessions.append(session)
        return session

    def close(self) -> None:
        for s in self.sessions:
            s.close()
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc.stdout.close()


@pytest.fixture(params=["process", "http"])
def sly(home, request):
    made = Sly(home, request.param)
    yield made
    made.close()


def bell() -> QuantumCircuit:
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    return circuit


def priced(amount, currency: str = "EUR", **more) -> dict:
    return {"free": False, "amount": amount, "currency": currency, **more}


def quoted(sly: Sly, circuits: int, shots: int) -> dict:
    client = sly.client()
    try:
        return quote_cost(client, client.describe().answer, circuits=circuits, shots=shots)
    finally:
        client.close()


# ---- money -----------------------------------------------------------------------------------------


def test_a_huge_amount_is_quoted_and_authorised_exactly(sly):
    huge = "1" + "0" * 40 + ".01"
    sly.behave(estimate=priced(huge))
    shown = quoted(sly, 53, 30624)
    assert shown["cost"] == "priced"
    assert shown["total"]["amount"] == "53" + "0" * 40 + ".53"  # not 5.300000000000000000000000000E+41
    assert DECIMAL.fullmatch(provider_cost(shown)["amount"])
    authority = Authority("q", shown)
    for _ in range(53):
        authority.admit("sly", priced(huge), False)
    with pytest.raises(CostRefused, match=r"job 54 of the run was not sent: .*to 54" + "0" * 40 + r"\.54;"):
        authority.admit("sly", priced(huge), False)


@pytest.mark.parametrize(
    ("estimate", "charged", "why"),
    [
        ({"free": True}, {"amount": "5000.00", "currency": "EUR"}, "whose estimate said free"),
        (priced("2.50"), {"amount": "2.51", "currency": "EUR"}, "more than its estimate of 2.50 EUR"),
        (priced("2.50"), {"amount": "2.50", "currency": "USD"}, "whose estimate was 2.50 EUR"),
    ],
)
def test_a_job_charged_past_its_estimate_stops_the_next_one(sly, estimate, charged, why):
    sly.behave(estimate=estimate, result={"charged": charged})
    session = sly.session(yes=True)
    sealed = session.run(bell(), SHOTS, seed=1)  # the first could not be known: it ran, and is sealed
    assert sealed.job["result"]["cost"]["charged"] == charged
    assert verify(Path(sealed.path).read_text()).valid
    assert any(why in line for line in session.told)  # the person is told at once
    with pytest.raises(CostRefused, match=f"charged .* for job record {sealed.record}, {why}: no further"):
        session.run(bell(), SHOTS, seed=2)
    assert sly.received("submit") == 1


@pytest.mark.parametrize(
    ("estimate", "charged"),
    [
        (priced("2.50", at_least=True), {"amount": "9.00", "currency": "EUR"}),  # at least: more is said
        (priced("2.50"), {"amount": "2.40", "currency": "EUR"}),
        ({"free": True}, {"amount": "0", "currency": "EUR"}),
    ],
)
def test_a_charge_within_its_estimate_goes_on(sly, estimate, charged):
    sly.behave(estimate=estimate, result={"charged": charged})
    session = sly.session(yes=True)
    session.run(bell(), SHOTS, seed=1)
    session.run(bell(), SHOTS, seed=2)
    assert sly.received("submit") == 2


def test_jobs_past_the_quote_are_never_sent(sly):
    sly.behave(estimate=priced("10.00"))
    shown = quoted(sly, 2, 2 * SHOTS)
    assert provider_cost(shown) == {"amount": "20.00", "currency": "EUR", "jobs": 2, "each": "10.00"}
    session = sly.session(authority=Authority("q1", shown))
    session.run(bell(), SHOTS)
    session.run(bell(), SHOTS)
    with pytest.raises(CostRefused, match="job 3 of the run was not sent"):
        session.run(bell(), SHOTS)
    assert sly.received("submit") == 2


@pytest.mark.parametrize(
    "at_run",
    [
        priced("10.01"),  # it rose
        priced("10.00", "USD"),
        priced("10.00", at_least=True),
        priced("-5.00"),  # none of the three forms: a cost unknown, where a price was shown
        priced("1e1"),
        priced("NaN"),
        priced(5),
        {"free": False},
        {"free": False, "priced": False},
    ],
)
def test_an_estimate_changed_between_quote_and_run_sends_nothing(sly, at_run):
    sly.behave(estimate=priced("10.00"))
    shown = quoted(sly, 2, 2 * SHOTS)
    sly.behave(estimate=at_run)
    session = sly.session(authority=Authority("q2", shown))
    with pytest.raises(CostRefused, match="job 1 of the run was not sent"):
        session.run(bell(), SHOTS)
    assert sly.received("submit") == 0


def test_a_quote_that_was_free_authorises_no_job_priced_at_the_run(sly):
    shown = quoted(sly, 2, 2 * SHOTS)  # describe billing free, the estimate free
    assert shown["cost"] == "free" and provider_cost(shown) is None
    sly.behave(estimate=[{"free": True}, priced("0.01")])
    session = sly.session(authority=Authority("q3", shown))
    session.run(bell(), SHOTS)
    with pytest.raises(CostRefused, match="job 2 of the run was not sent"):
        session.run(bell(), SHOTS)
    assert sly.received("submit") == 1


def test_a_priced_job_without_confirmation_is_never_sent(sly):
    sly.behave(estimate=priced("99.00"))
    with pytest.raises(NotConfirmed, match=r"not free \(costs 99.00 EUR\)"):
        sly.session().run(bell(), SHOTS)
    assert sly.received("submit") == 0


def test_a_description_that_changes_before_submit_sends_nothing(sly):
    session = sly.session(yes=True)
    assert "max_shots" not in session.description()  # read once, as the program is compiled against it
    sly.behave(describe={"max_shots": 50})
    with pytest.raises(JobStopped, match="describe changed between estimate and submit"):
        session.run(bell(), SHOTS)
    assert sly.received("submit") == 0


# ---- secrets and counts ----------------------------------------------------------------------------


def test_an_answer_that_is_not_json_never_shows_part_of_the_credential(sly):
    sly.behave(raw={"describe": "x" * 45 + " $CREDENTIAL, thanks"})
    client = sly.client()
    try:
        with pytest.raises(ProviderError, match="the answer is not JSON") as caught:
            client.describe()
    finally:
        client.close()
    said = str(caught.value)
    assert SECRET[:5] not in said  # the cut at 60 characters fell inside it
    assert "[credent" in said


def test_an_answer_naming_a_member_twice_is_refused_and_nothing_sealed(sly, home):
    sly.behave(raw={"result": '{"ok": true, "shots": 100, "counts": {"00": 1, "11": 99, "00": 0}}'})
    session = sly.session(yes=True)
    with pytest.raises(JobStopped, match="the answer names the member '00' twice"):
        session.run(bell(), SHOTS)
    assert sly.received("submit") == 1
    blobs = home / "blobs"
    assert not blobs.exists() or not any(p.is_file() for p in blobs.rglob("*"))


def test_no_credential_reaches_the_provider_but_its_own(home, monkeypatch):
    monkeypatch.setenv("QISKIT_IBM_TOKEN", "ibm-key-xyz")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-xyz")
    monkeypatch.setenv("OTHER_KEY", "other-provider-xyz")
    other = ["providers", "add", "other", "--process", "--credential-env", "OTHER_KEY", "--", "prog"]
    assert main(other) == 0
    sly = Sly(home, "process")
    try:
        sly.session(yes=True).run(bell(), SHOTS)
        text = sly.record.read_text()
    finally:
        sly.close()
    assert "ibm-key-xyz" not in text and "aws-secret-xyz" not in text and "other-provider-xyz" not in text
    (environ,) = [json.loads(line)["environ"] for line in text.splitlines() if '"environ"' in line]
    assert environ["WAI_PROVIDER_CREDENTIAL"] == SECRET
    assert [k for k, v in environ.items() if SECRET in v] == ["WAI_PROVIDER_CREDENTIAL"]


# ---- qsolve run, as a person runs it -----------------------------------------------------------------

MAX_CUT = str(Path(__file__).resolve().parents[3] / "workflows" / "max-cut")


def qsolve_run(capsys, *flags: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["run", MAX_CUT, "--case", "single-edge", "--target", "provider:sly", "--json", *flags])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_qsolve_run_sends_no_priced_job_without_yes(sly, capsys):
    sly.behave(estimate=priced("99.00", unit="job"))
    code, said, err = qsolve_run(capsys)
    assert code == 1 and said["jobs"] == [] and said["receipts"] == []
    assert "provider sly: costs 99.00 EUR (billed by job)" in err  # shown before anything is sent
    assert sly.received("submit") == 0


def test_qsolve_run_stops_at_a_charge_its_estimate_did_not_show(sly, capsys):
    sly.behave(estimate={"free": True}, result={"charged": {"amount": "5000.00", "currency": "EUR"}})
    code, said, err = qsolve_run(capsys)
    (job,) = said["jobs"]
    assert code == 1 and job["status"] == "done" and len(said["receipts"]) == 1
    assert f"provider sly charged 5000.00 EUR for job record {job['record']}, whose estimate said free" in err
    assert sly.received("submit") == 1  # the workflow's other nine circuits were not sent


def test_an_estimate_free_beside_an_amount_is_no_free_job(sly):
    """It was read as free: sent without confirmation, shown and sealed as free, its 99.00 EUR never shown
    (billing of that shape was already of no one form)."""
    sly.behave(estimate={"free": True, "amount": "99.00", "currency": "EUR"})
    with pytest.raises(NotConfirmed, match='"free": true beside amount, currency'):
        sly.session().run(bell(), SHOTS)
    shown = quoted(sly, 2, 2 * SHOTS)
    assert shown["cost"] == "unknown" and provider_cost(shown) == "unknown"
    assert sly.received("submit") == 0


def test_a_cancel_goes_to_no_other_provider_than_the_jobs(home, tmp_path):
    """It went to whatever providers.yaml names now: after the entry was replaced by another provider, that
    one's job of the same id was cancelled (and follow would have sealed its counts as this job's)."""
    from qsolve.targets.cancel import cancel_job

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    a = Sly(first / "home", "http")  # its files in first/; added to QSOLVE_HOME, as any provider is
    a.home = home
    b_config, b_record = second / "sly.json", second / "sly.jsonl"
    b_config.write_text(json.dumps({"describe": {"device": "another-device"}}))
    b = subprocess.Popen([sys.executable, str(SLY), str(b_config), str(b_record), "--http"],
                         stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        b_url = b.stdout.readline().strip()
        a.behave(status="running")
        session = a.session(yes=True)
        session.wait_s = 0
        with pytest.raises(JobStopped, match="still running"):
            session.run(bell(), SHOTS)
        (record,) = session.records
        assert main(["providers", "add", "sly", "--http", b_url]) == 0  # the entry replaced
        message = {"protocol": "wai.quantum.provider/1", "op": "submit", "shots": 1,
                   "program": {"bits": 1}}  # fmt: skip
        assert httpx.post(b_url, json=message).json()["job"] == "s-1"  # someone else's, of the same id
        with connect(home=home) as book:
            said = cancel_job(book, record, home=home)
            assert not said.stopped and book.get_provider_job(record).status == "submitted"
        assert said.line.endswith(
            "not cancelled: sly is now provider 'sly', device 'another-device', not the provider 'sly', "
            "device 'sly-2' the job was sent to; nothing was sent"
        )
        follow = a.session()
        with pytest.raises(JobStopped, match="'another-device', not the provider 'sly', device 'sly-2'"):
            follow.follow(record)
        told = [json.loads(line) for line in b_record.read_text().splitlines()]
        assert [m["op"] for m in told if m.get("op") in ("cancel", "status", "result")] == []
    finally:
        a.close()
        b.terminate()
        b.wait(timeout=30)
        b.stdout.close()
