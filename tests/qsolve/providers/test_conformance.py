"""The conformance checker (quantum-provider-protocol §9): its vectors held to qsolve's readers and to the
reference provider, and ``qsolve providers test`` run against the reference over both transports, with
no price, and against providers that break the protocol."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve.providers.compiler import compile_circuit, ideal_distribution
from qsolve.providers.conformance import NOT_RUN_COST, load_vectors
from qsolve.providers.conformance.checker import build_circuit, expand, judge, reference_counts
from qsolve.providers.messages import AnswerRefused, read_billing, read_estimate, read_result
from qsolve.providers.reference import ReferenceOptions

REPO = Path(__file__).resolve().parents[3]
VECTORS = load_vectors()
REFERENCE = [sys.executable, "-m", "qsolve.providers.reference", "--stdio"]
LINE = re.compile(r"^(pass|FAIL|skip|n/a) {1,3}[a-z]+/[a-z0-9-]+: .+$")
SUMMARY = re.compile(r"^(\d+) checks: (\d+) pass")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return tmp_path / "home"


@pytest.fixture(scope="module")
def http_reference():
    """``python -m qsolve.providers.reference --http 127.0.0.1:0``: its URL, printed on one line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "qsolve.providers.reference", "--http", "127.0.0.1:0", "--quiet"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def add(name: str, *where: str) -> None:
    assert main(["providers", "add", name, *where]) == 0


def checked(capsys, name: str, *flags: str) -> tuple[int, dict[str, tuple[str, str]], str]:
    """``qsolve providers test NAME``: its exit code, each check's (status, detail), the summary."""
    capsys.readouterr()
    code = main(["providers", "test", name, *flags])
    out = capsys.readouterr().out.strip().splitlines()
    *lines, summary = out
    checks = {}
    for line in lines:
        assert LINE.match(line), line
        status, rest = line.split(None, 1)
        check, detail = rest.split(": ", 1)
        checks[check] = (status, detail)
    assert SUMMARY.match(summary), summary
    assert int(SUMMARY.match(summary).group(1)) == len(lines)
    return code, checks, summary


# ---- the vectors ------------------------------------------------------------------------------------


def test_the_vectors_are_package_data():
    with open(REPO / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    assert "provider-v1.json" in data["qsolve.providers.conformance"]
    assert VECTORS["protocol"] == "wai.quantum.provider/1"
    names = [p["name"] for p in VECTORS["programs"]]
    assert names == ["probe", "bits-out-of-order", "interference", "phase-kickback", "bell", "triangle"]
    codes = {m["code"] for m in VECTORS["messages"]}
    assert codes == {"unsupported", "unsupported_version", "invalid", "not_found", "refused"}
    by_name = {m["name"]: m for m in VECTORS["messages"]}
    assert by_name["zero-shots"]["send"]["shots"] == 0 and by_name["zero-shots"]["code"] == "invalid"
    assert by_name["other-basis"]["code"] == "refused"


@pytest.mark.parametrize("vector", VECTORS["billing"], ids=lambda v: json.dumps(v["billing"]))
def test_billing_vectors_read_as_they_say(vector):
    billing = read_billing(vector["billing"])
    assert billing.kind == vector["read"]
    assert billing.free is (vector["read"] == "free")
    if vector["read"] == "refused":
        assert billing.reason and billing.text().startswith("the cost is unknown")


@pytest.mark.parametrize("vector", VECTORS["estimates"], ids=lambda v: json.dumps(v["estimate"]))
def test_estimate_vectors_read_as_they_say(vector):
    estimate = read_estimate(vector["estimate"])
    assert estimate.kind == vector["read"]
    assert estimate.cost_known is (vector["read"] in ("free", "priced"))
    shown = estimate.shown()
    if vector["read"] in ("unpriced", "refused"):
        assert "unknown" in shown and "amount" not in shown  # a cost unknown shows no figure
        amount = vector["estimate"].get("amount")
        assert amount is None or str(amount) not in estimate.text()


@pytest.mark.parametrize("vector", VECTORS["results"]["answers"], ids=lambda v: json.dumps(v["answer"]))
def test_result_vectors_read_as_they_say(vector):
    job = VECTORS["results"]["job"]
    if vector["read"] == "kept":
        result = read_result(vector["answer"], job["shots"], bits=job["bits"])
        assert result.kept_shots == vector["kept_shots"] == sum(result.counts.values())
    else:
        with pytest.raises(AnswerRefused):
            read_result(vector["answer"], job["shots"], bits=job["bits"])


@pytest.mark.parametrize("vector", VECTORS["programs"], ids=lambda v: v["name"])
def test_each_program_holds_on_its_ideal_and_not_when_its_bits_are_reversed(vector):
    circuit = build_circuit(vector, 8)
    shots = vector["shots"]
    ideal = {k: round(p * shots) for k, p in ideal_distribution(circuit).items()}
    assert judge(vector["expect"], ideal, sum(ideal.values()), circuit.num_clbits) == []
    reversed_ = {k[::-1]: v for k, v in ideal.items()}
    if reversed_ != ideal:  # a client that reads bits the wrong way round fails it
        assert judge(vector["expect"], reversed_, shots, circuit.num_clbits) != []
    nothing = {"0" * circuit.num_clbits: shots}
    assert judge(vector["expect"], nothing, shots, circuit.num_clbits) != []  # nor does a device that idles


def test_outcomes_written_with_an_ellipsis_fill_the_width():
    assert expand("0…01", 8) == "00000001" and expand("0…01", 2) == "01" and expand("0…01", 1) == "1"
    assert expand("11", 5) == "11"


def test_the_triangle_needs_routing_on_a_line():
    triangle = next(v for v in VECTORS["programs"] if v["name"] == "triangle")
    line = ReferenceOptions(connectivity="line").device()
    assert compile_circuit(build_circuit(triangle, 8), line, seed=1).swaps >= 1
    assert compile_circuit(build_circuit(triangle, 8), ReferenceOptions().device(), seed=1).swaps == 0


@pytest.mark.parametrize("connectivity", ["all", "line"])
def test_the_reference_gives_the_vectors_counts_at_seed_1(connectivity):
    options = ReferenceOptions(connectivity=connectivity)
    held = VECTORS["reference"]["devices"][options.description()["device"]]
    assert reference_counts(options) == held


# ---- the checker against the reference ----------------------------------------------------------------


#: the checks that do not apply to the reference's default device (every pair coupled, no resonator)
#: or to a provider with no credential
NOT_FOR_THE_DEFAULT = {
    f"{at}/{name}"
    for at in ("messages", "submit")
    for name in ("program-missing-pair", "program-resonator-out-of-turn", "program-measured-resonator")
} | {
    f"{at}/{m['name']}"  # a program of other bases only (issue 38: every gate's angles)
    for at in ("messages", "submit")
    for m in VECTORS["messages"]
    if "gates_by_basis" in m and "rzsxxcz" not in m["gates_by_basis"]
}
CREDENTIALS = {"credentials/wrong-credential", "credentials/no-credential", "credentials/not-echoed"}


def assert_all_pass(
    code: int, checks: dict, summary: str, *, na: set[str] = NOT_FOR_THE_DEFAULT | CREDENTIALS
):
    assert code == 0, [f"{k}: {v}" for k, v in checks.items() if v[0] != "pass"]
    assert {name for name, (status, _) in checks.items() if status != "pass"} == na
    assert all(checks[name][0] == "n/a" for name in na)
    passed = len(checks) - len(na)
    assert summary == f"{len(checks)} checks: {passed} pass" + (
        f", {len(na)} n/a (not for this device; not failures)" if na else ""
    )
    groups = {name.split("/")[0] for name in checks}
    assert groups == {"describe", "estimates", "messages", "submit", "credentials", "programs", "charged",
                      "reference", "cancel"}  # fmt: skip
    for program in VECTORS["programs"]:
        assert checks[f"programs/{program['name']}"][0] == "pass"
        assert re.fullmatch(r"job ref-[0-9a-f]{24}: no charge stated \(its estimate: .+\)",
                            checks[f"charged/{program['name']}"][1])  # fmt: skip
    for message in VECTORS["messages"]:  # each program refused at submit as at estimate (§4)
        if message["send"].get("op") == "estimate" and f"submit/{message['name']}" not in na:
            assert checks[f"submit/{message['name']}"] == ("pass", message["code"])
        assert checks[f"cancel/{program['name']}"] == ("pass", "done (the job had finished)")
    assert checks["messages/zero-shots"] == ("pass", "invalid")
    assert checks["messages/other-basis"] == ("pass", "refused")
    assert checks["programs/probe"][1].startswith("00000001 1.000 of 1000 shots")


def test_the_reference_passes_as_a_process(home, capsys):
    add("ref", "--process", "--", *REFERENCE)
    assert_all_pass(*checked(capsys, "ref"))


def test_the_reference_passes_over_http(home, capsys, http_reference):
    add("refh", "--http", http_reference)
    assert_all_pass(*checked(capsys, "refh"))


def test_an_unpriced_reference_runs_its_programs_only_with_yes(home, capsys):
    add("free-not", "--process", "--", *REFERENCE, "--unpriced", "--connectivity", "line")
    code, checks, summary = checked(capsys, "free-not")
    assert code == 1
    assert checks["describe/billing"][0] == "pass" and "unpriced" in checks["describe/billing"][1]
    for program in VECTORS["programs"]:
        assert checks[f"estimates/{program['name']}"][0] == "pass"
        assert checks[f"programs/{program['name']}"] == ("skip", NOT_RUN_COST)
        assert f"cancel/{program['name']}" not in checks  # nothing ran, nothing to cancel
    submits = {name: v for name, v in checks.items() if name.startswith("submit/")}
    resonators = {"submit/program-resonator-out-of-turn", "submit/program-measured-resonator"}
    other_bases = {n for n in NOT_FOR_THE_DEFAULT if n.startswith("submit/")}
    resonators |= other_bases - {"submit/program-missing-pair"}
    assert {name for name, (status, _) in submits.items() if status == "n/a"} == resonators
    assert {v for name, v in submits.items() if name not in resonators} == {("skip", NOT_RUN_COST)}
    assert NOT_RUN_COST == "not run: the cost is unknown; --yes allows the spend"
    not_run = 6 + len(submits) - len(resonators)
    assert f"{not_run} not run (counted as failures" in summary and "FAIL" not in summary
    assert not any(status == "FAIL" for status, _ in checks.values())
    paired = {f"{at}/program-missing-pair" for at in ("messages", "submit")}  # a line misses pairs
    on_a_line = (NOT_FOR_THE_DEFAULT - paired) | CREDENTIALS
    assert_all_pass(*checked(capsys, "free-not", "--yes"), na=on_a_line)


def test_an_unknown_provider_is_misuse(home, capsys):
    assert main(["providers", "test", "nobody"]) == 2
    assert "no provider named 'nobody'" in capsys.readouterr().err


# ---- the checker against providers that break the protocol ----------------------------------------------

BROKEN = textwrap.dedent(
    """
    import json, os, sys, time
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # standard output for answers alone
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    flags = set(sys.argv[1:])
    provider = ReferenceProvider(ReferenceOptions())
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        op = message.get("op") if isinstance(message, dict) else None
        if "ok-to-everything" in flags:
            answer = {"ok": True}
        elif op == "estimate" and "hangs-on-estimate" in flags:
            time.sleep(600)
        elif op == "status" and message.get("job") == "qsolve-conformance-no-such-job" and "garbles" in flags:
            out.write(b"not JSON at all\\n")
            continue
        elif op == "cancel" and "cannot-cancel" in flags:
            answer = {"ok": False, "error": {"code": "unsupported", "message": "this device cannot cancel"}}
        else:
            answer = provider.handle(message)
            if answer.get("ok") and op == "describe":
                if "says-it-cannot-cancel" in flags:
                    answer["cancels"] = False
                if "priced" in flags:
                    answer["billing"] = {"unit": "shot", "price": "0.01", "currency": "USD"}
            if answer.get("ok") and op == "estimate" and "priced" in flags:
                answer = {"ok": True, "free": False, "amount": "10.00", "currency": "USD", "unit": "shot"}
            if answer.get("ok") and op == "result" and "reversed-bits" in flags:
                answer["counts"] = {k[::-1]: v for k, v in answer["counts"].items()}
        out.write(json.dumps(answer).encode() + b"\\n")
    """
)


@pytest.fixture
def broken(tmp_path):
    script = tmp_path / "broken_provider.py"
    script.write_text(BROKEN)
    return [sys.executable, str(script)]


def test_a_provider_that_answers_ok_to_everything_fails(home, capsys, broken):
    add("yes-man", "--process", "--", *broken, "ok-to-everything")
    code, checks, summary = checked(capsys, "yes-man")
    assert code == 1
    status, detail = checks["describe/complete"]
    assert status == "FAIL" and detail.startswith("provider yes-man: describe: protocol: ")
    for m in VECTORS["messages"]:
        status, detail = checks[f"messages/{m['name']}"]
        if '"$' not in json.dumps(m["send"]):
            assert status == "FAIL" and detail.startswith('answered "ok": true'), (m["name"], detail)
        else:  # a program written for the device: there is no description to write it for
            assert status == "skip"
    assert all(checks[f"programs/{p['name']}"][0] == "skip" for p in VECTORS["programs"])
    assert re.search(r"\d+ FAIL", summary)


def test_a_provider_that_reads_bits_backwards_and_cancels_quietly_fails_those_checks(home, capsys, broken):
    add("backwards", "--process", "--", *broken, "reversed-bits", "cannot-cancel")
    code, checks, summary = checked(capsys, "backwards")
    assert code == 1
    failed = {name for name, (status, _) in checks.items() if status == "FAIL"}
    programs = {"programs/probe", "programs/bits-out-of-order", "programs/triangle"}
    references = {p.replace("programs/", "reference/") for p in programs}
    cancels = {f"cancel/{p['name']}" for p in VECTORS["programs"]}
    assert failed == programs | references | cancels | {"messages/cancel-of-no-job"}
    assert checks["messages/cancel-of-no-job"][1].startswith(
        "answered unsupported (this device cannot cancel)"
    )
    assert "the most frequent outcome is 10000000, not 00000001" in checks["programs/probe"][1]
    assert "the most frequent outcome is 110, not 011" in checks["programs/bits-out-of-order"][1]
    assert checks["programs/bell"][0] == "pass"  # 00 and 11 read either way
    assert checks["cancel/bell"][1] == "answered unsupported, and its describe says cancels true"
    others = set(checks) - failed
    assert all(checks[name][0] in ("pass", "n/a") for name in others), [(n, checks[n]) for n in others]
    assert f"{len(failed)} FAIL" in summary


def test_a_provider_that_cannot_cancel_and_says_so_passes(home, capsys, broken):
    add("no-cancel", "--process", "--", *broken, "cannot-cancel", "says-it-cannot-cancel")
    code, checks, _ = checked(capsys, "no-cancel")
    assert code == 0
    assert checks["cancel/probe"] == (
        "pass",
        "unsupported: the provider cannot cancel (its describe says so)",
    )
    assert checks["messages/cancel-of-no-job"] == (
        "pass",
        "unsupported: it cannot cancel (its describe says so)",
    )


def test_a_priced_provider_runs_nothing_without_yes(home, capsys, broken):
    add("dear", "--process", "--", *broken, "priced")
    code, checks, _ = checked(capsys, "dear")
    assert code == 1
    assert checks["describe/billing"] == ("pass", "priced: 0.01 USD a shot")
    assert checks["estimates/probe"] == ("pass", "priced: 10.00 USD (shot) (1000 shots)")
    status, detail = checks["programs/probe"]
    assert (
        status == "skip"
        and detail == "not run: the jobs are not free (10.00 USD (shot)); --yes allows the spend"
    )


def test_a_provider_that_hangs_stops_the_checker(home, capsys, broken):
    add("stuck", "--timeout", "2", "--process", "--", *broken, "hangs-on-estimate")
    code, checks, summary = checked(capsys, "stuck")
    assert code == 1
    assert checks["describe/complete"][0] == "pass"
    status, detail = checks["estimates/probe"]
    assert status == "FAIL" and detail.startswith("provider stuck: estimate: timeout: no answer within 2 s")
    rest = [name for name in checks if not name.startswith(("describe/", "estimates/probe"))]
    assert rest and all(checks[name][0] == "skip" for name in rest)
    assert checks["messages/unknown-op"][1].startswith("not run: stuck did not answer in time")
    assert "1 FAIL" in summary


def test_a_process_that_writes_what_is_not_json_is_started_again_for_the_next_check(home, capsys, broken):
    add("garbled", "--process", "--", *broken, "garbles")
    code, checks, _ = checked(capsys, "garbled")
    assert code == 1
    failed = {name: detail for name, (status, detail) in checks.items() if status == "FAIL"}
    why = "provider garbled: status: protocol: the answer is not JSON: 'not JSON at all'"
    assert failed == {"messages/status-of-no-job": why}
    assert checks["messages/result-of-no-job"] == ("pass", "not_found")  # the next check, a new process


def test_providers_add_offers_the_probe_and_test_sends_it_first(home, capsys, tmp_path):
    """Issue 21, item 9 (§6: the first job on a new provider SHOULD be the probe): ``providers add`` says
    so, and the first submit ``providers test`` sends is the probe's, before any message vector's."""
    from tests.flows.priced_provider import process_command, received

    price, record = tmp_path / "price.txt", tmp_path / "received.jsonl"
    price.write_text("free")
    capsys.readouterr()
    command = process_command(tmp_path, price, record)
    add("new", "--process", "--allow-write", str(record), "--", *command)
    said = capsys.readouterr().out
    assert "its first job is §6's probe" in said and "can spend your money" in said
    code, checks, _ = checked(capsys, "new")
    assert checks["programs/probe"][0] == "pass", checks["programs/probe"]
    messages = received(record)
    first = next(m for m in messages if m.get("op") == "submit")
    vectors = next(i for i, m in enumerate(messages) if m.get("op") == "teleport")  # the first message vector
    assert messages.index(first) < vectors  # sent before any of them, so before any submit among them
    assert first["taken"] and first["program"]["gates"] == [{"gate": "x", "qubits": [0]}]
    assert [m["qubit"] for m in first["program"]["measure"]] == [0, 1, 2, 3]  # every qubit measured
