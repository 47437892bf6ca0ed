"""A round-2 attacker's findings on the mends of issue 37 (honest numbers) and issue 35 (providers), each
a test that fails today (``xfail(strict=True)`` until mended).

1. a numpy complex number from ``evaluate`` or as a method's objective is taken as its real part
   (``np.complex128(1+4j)`` is 1.0): ``not_a_number`` lets dtype kind ``c`` through and ``float()``
   drops the imaginary part;
2. a method claiming a NaN or infinite objective whose solution gives 1 passes, its claim never named,
   where a claim of 5 fails (docs/writing-a-workflow.md: "an objective its solution does not give fails
   the case");
3. a ``stderr`` of ``-0.0`` is kept and gives ``accuracy_pm -0.0`` (a negative zero plus-or-minus);
4. a credential variable of a provider added before ``credential_env`` was recorded is passed on to
   another provider by ``--env``: its value, the stored credential of the first, reaches the second;
5. every ``LC_*`` variable reaches every provider program unchecked: ``LC_API_TOKEN`` passes although
   ``host_variable`` calls it a secret;
6. common secret spellings pass ``host_variable``: ``DB_PASS``, ``SMTP_PWD``, ``BROKER_AUTH``,
   ``SENTRY_DSN``, ``GITHUB_PAT``, and a ``MONGO_URL`` or ``HTTPS_PROXY`` whose value holds a password;
7. the provider log file follows a symlink planted at ``NAME.log`` (appends to the file it names);
8. two provider programs of one name logging at once each keep their own count: the file grows past
   its bound (two of them: twice the bound);
9. a describe within every bound (a star: one resonator, every other place coupled to it and moving
   into it) gives the compiler a coupling map quadratic in the places: 512 places, 260,610 edges;
   1,024 places, 1,045,506 edges, 4 s and 325 MB; 4,096 places about 16.8 million edges (pairs through
   the resonator are listed whole, whatever the circuit uses); 2,048 places: 4,188,162 edges, 169 s and
   973 MB under load;
10. a provider job's limit holds only its status and result waits: ``describe``, ``estimate`` and
    ``submit`` wait up to the entry's own ``--timeout`` (60 s), and the workflow process's limit is only
    enforced once the host's call returns: a job of ``timeout_s: 3`` whose provider takes 12 s over
    each estimate and submit ran 221 s, sending 9 jobs, before "stopped at its time limit of 3 s";
11. an ``error_rate`` method's ``details['n_test']`` of ``10**400`` (or ``1e308``) passes ``_n_test`` and
    crashes the host in ``wilson_interval`` (``OverflowError: int too large to convert to float``):
    ``qsolve test`` ends in a traceback;
12. a log file just under its bound when a program starts is kept, not moved aside: the new program's
    every line is dropped for its whole life (a long-lived provider logs nothing), its first lines too;
13. the mend of "a crashed case never ran to a result" is dodged by ``MethodUnavailable``: a quantum
    method unavailable on the first case makes ``estimate_honest`` judge that case ("note: a sent no
    circuits, nothing to compare", passed) while the next case sent 1 circuit against an estimate of
    100, and ``reproducible`` re-runs a case whose quantum method never ran;
14. a describe's strings are unbounded (``device``, ``provider``, ``simulator``, ``emulator``: up to the
    64 MiB answer): a device name of 8 MiB is kept whole with each job, three jobs left a 34 MB
    state.db, a 17 MB WAL and three 8 MiB blobs;
15. what a provider says, bounded and ``shown``, keeps bidirectional overrides and invisible characters
    (U+202E, U+2066, U+200B, tag characters): an error or a failed job's reason can read reversed or
    hide text on the person's terminal (``shown`` escapes control characters only).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from qsolve.cli import main
from qsolve.providers.compiler import _coupling
from qsolve.providers.connect import open_client
from qsolve.providers.device import MAX_PAIRS, Device
from qsolve.providers.program_env import host_variable, provider_environment
from qsolve.providers.program_log import ProviderLog
from tests.attacks.test_issue37_attacks2 import ALWAYS_CRASHES, MODULE, _case, _gates
from tests.conftest import WorkflowDir
from tests.qsolve.providers.test_host_variables import DESCRIBE, ENVIRON, home  # noqa: F401 - a fixture
from tests.qsolve.providers.test_misbehaving import SHOTS, bell, sessions  # noqa: F401 - a fixture

COMPLEX = "__import__('numpy').complex128(1+4j)"
SOLVED = "MethodResult(1.0, solution={'v': 1})"


def test_evaluate_returning_a_numpy_complex_is_not_a_number(wf: WorkflowDir) -> None:
    result = _case(wf, COMPLEX, SOLVED, SOLVED)
    # today: passed, "Matches the best classical answer", both objectives 1.0
    assert not result.passed
    assert "complex" in f"{result.message} {result.cause}", (result.message, result.cause)


def test_a_methods_numpy_complex_objective_is_not_a_number(wf: WorkflowDir) -> None:
    result = _case(wf, "float(solution['v'])", SOLVED, f"MethodResult({COMPLEX})")
    # today: passed, the quantum objective 1.0
    assert not result.passed
    assert "complex" in f"{result.message} {result.cause}", (result.message, result.cause)


@pytest.mark.parametrize("claim", ["float('nan')", "float('inf')", "-float('inf')"])
def test_a_claim_that_is_no_number_is_named_like_any_wrong_claim(wf: WorkflowDir, claim: str) -> None:
    wrong = _case(wf, "float(solution['v'])", SOLVED, "MethodResult(5.0, solution={'v': 1})")
    assert not wrong.passed and "claimed 5" in (wrong.message or "")  # what a wrong finite claim gets
    result = _case(wf, "float(solution['v'])", SOLVED, f"MethodResult({claim}, solution={{'v': 1}})")
    # today: passed, "Matches the best classical answer", the claim unnamed
    assert not result.passed, (result.verdict, result.message)
    assert "claimed" in (result.message or ""), result.message


def test_a_negative_zero_stderr_gives_no_negative_plus_or_minus(wf: WorkflowDir) -> None:
    result = _case(wf, "float(solution['v'])", SOLVED, "MethodResult(1.0, solution={'v': 1}, stderr=-0.0)")
    assert result.passed
    # today: -0.0, shown as a negative zero plus-or-minus
    assert result.accuracy_pm is None or str(result.accuracy_pm) != "-0.0", result.accuracy_pm


def test_an_older_providers_credential_variable_never_reaches_another(home, tmp_path, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setenv("LAB_AUTH", "lab-auth-8c8c")  # a name no pattern marks
    script = tmp_path / "environ.py"
    script.write_text(ENVIRON)
    argv = ["providers", "add", "other", "--process", "--credential-env", "LAB_AUTH", "--"]
    assert main([*argv, sys.executable, str(script)]) == 0
    path = home / "providers.yaml"
    doc = yaml.safe_load(path.read_text())
    assert doc["providers"]["other"].pop("credential_env") == "LAB_AUTH"  # as added before the change
    path.write_text(yaml.safe_dump(doc))
    code = main(
        ["providers", "add", "nosy", "--process", "--env", "LAB_AUTH", "--", sys.executable, str(script)]
    )
    capsys.readouterr()
    if code != 0:  # refused at add: mended there
        return
    client, _ = open_client("nosy")
    try:
        env = client.transport.exchange(DESCRIBE, 60)["env"]
    finally:
        client.close()
    # today: the provider nosy reads LAB_AUTH=lab-auth-8c8c, the stored credential of the provider other
    assert "lab-auth-8c8c" not in json.dumps(env)


def test_a_secret_named_lc_never_reaches_a_provider(tmp_path) -> None:
    env = provider_environment({"PATH": "/bin", "LC_API_TOKEN": "tok-1a1a", "LC_ALL": "C"}, scratch=tmp_path)
    assert env.get("LC_ALL") == "C"
    assert host_variable("LC_API_TOKEN") is not None  # the name marks a secret
    # today: {'LC_API_TOKEN': 'tok-1a1a', ...}
    assert "tok-1a1a" not in env.values(), env


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DB_PASS", "hunter2"),
        ("SMTP_PWD", "hunter2"),
        ("BROKER_AUTH", "hunter2"),
        ("SENTRY_DSN", "https://k3y@o1.ingest.sentry.io/1"),
        ("GITHUB_PAT", "ghp_hunter2"),
        ("MONGO_URL", "mongodb://u:hunter2@db/x"),
        ("HTTPS_PROXY", "http://u:hunter2@proxy:3128"),
    ],
)
def test_common_secret_spellings_never_reach_a_provider(tmp_path, name: str, value: str) -> None:
    env = provider_environment({"PATH": "/bin", name: value}, [name], scratch=tmp_path)
    assert value not in env.values(), (name, host_variable(name))


def test_a_log_file_that_is_a_symlink_is_never_written_through(tmp_path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    path = tmp_path / "p.log"
    os.symlink(victim, path)
    log = ProviderLog(path=path, file_bytes=1000)
    try:
        log.feed(b"written by the provider\n")
    finally:
        log.close()
    # today: the victim reads "keep\nwritten by the provider\n"
    assert victim.read_text() == "keep\n"


def test_two_programs_logging_at_once_keep_the_files_bound(tmp_path) -> None:
    path = tmp_path / "p.log"
    one, two = ProviderLog(path=path, file_bytes=1000), ProviderLog(path=path, file_bytes=1000)
    try:
        for _ in range(50):
            one.feed(b"a" * 99 + b"\n")
            two.feed(b"b" * 99 + b"\n")
    finally:
        one.close()
        two.close()
    # today: 2,404 bytes, each program's count its own
    assert path.stat().st_size < 1400, path.stat().st_size


def test_a_device_within_the_bounds_gives_a_coupling_map_within_them() -> None:
    n = 512  # a star: resonator 0, places 1..511 coupled to it and moving into it (the bound is 4,096)
    star = tuple((i, 0) for i in range(1, n))
    device = Device(
        qubits=n, native_gates=("rz", "sx", "x", "cz"), connectivity=star, resonators=(0,), moves=star
    )
    _, coupling, _, _ = _coupling(device, 2)  # a circuit of two qubits
    # today: 260,610 directed edges (1,045,506 at 1,024 places; about 16.8 million at the bound of 4,096)
    assert len(coupling.get_edges()) <= 2 * MAX_PAIRS, len(coupling.get_edges())


#: the reference provider, whose first ``estimate`` takes :data:`SLOW_S` seconds (its others at once)
SLOW_FIRST_ESTIMATE = textwrap.dedent(
    """
    import json, os, sys, time
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    provider, slow = ReferenceProvider(ReferenceOptions(qubits=4)), [SLOW_S]
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("op") == "estimate" and slow:
            time.sleep(slow.pop())
        out.write(json.dumps(provider.handle(message)).encode() + b"\\n")
    """
)
LIMIT_S = 2  # the job's own limit (the seed's floor of 300 s lowered, so that the test is cheap)


def test_no_provider_job_is_sent_past_the_jobs_limit(home, tmp_path, monkeypatch, capsys):  # noqa: F811
    from qsolve.validation import jobs

    monkeypatch.setattr(jobs, "TIMEOUT_RANGE", (1, 7200))
    folder = tmp_path / "max-cut"
    shutil.copytree(Path(__file__).resolve().parents[2] / "workflows" / "max-cut", folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text().replace(
        "{timeout_s: 600, memory_mb: 2048}", f"{{timeout_s: {LIMIT_S}, memory_mb: 256}}"
    )
    assert f"timeout_s: {LIMIT_S}," in text
    manifest.write_text(text)
    script = tmp_path / "slow_first_estimate.py"
    script.write_text(SLOW_FIRST_ESTIMATE.replace("SLOW_S", str(3 * LIMIT_S)))
    argv = ["providers", "add", "slow", "--process", "--timeout", "60", "--", sys.executable, str(script)]
    assert main(argv) == 0
    capsys.readouterr()
    code = main(["run", str(folder), "--case", "single-edge", "--target", "provider:slow", "--json", "--yes"])
    out, err = capsys.readouterr()
    assert code != 0 and "time limit" in err, err[-2000:]  # it is stopped by its limit, in the end
    sent = re.search(r"(\d+) provider job\(s\) sent", err)
    # today: "9 provider job(s) sent": the first estimate alone took three times the job's limit, and
    # every job after it was still estimated, sent and waited on
    assert sent is None or int(sent.group(1)) <= 1, err[-2000:]


@pytest.mark.parametrize("n_test", ["10**400", "1e308"])
def test_an_n_test_past_a_doubles_range_is_the_workflows_mistake(
    wf: WorkflowDir, capsys, n_test: str
) -> None:
    methods = {
        "{EVAL}": "float(solution['v'])",
        "{REF}": "MethodResult(0.1, solution={'v': 0.1}, details={'n_test': 100})",
        "{QUANTUM}": f"MethodResult(0.1, solution={{'v': 0.1}}, details={{'n_test': {n_test}}})",
    }
    module = MODULE
    for key, value in methods.items():
        module = module.replace(key, value)
    wf.write("workflow.py", module)
    wf.write("schemas/output.json", {"type": "object"})
    wf.manifest["metric"] = {"kind": "error_rate", "tolerance": 0.0}
    wf.cases["cases"] = [{"name": "c", "input": {"x": 0}, "expect": {"max_abs_error": 100}}]
    wf.save()
    # today: OverflowError out of qsolve.judging.deciding.wilson_interval, through main
    code = main(["test", str(wf.root)])
    out, err = capsys.readouterr()
    assert code != 0 and "n_test" in out + err, (code, (out + err)[-2000:])


def test_a_new_programs_first_lines_are_kept_when_the_old_log_is_nearly_full(tmp_path, monkeypatch) -> None:
    path = tmp_path / "p.log"
    path.write_text("o" * 990)  # the program before's, 10 bytes short of the bound
    log = ProviderLog(path=path, file_bytes=1000)
    try:
        log.feed(b"started: the new program's first line\n")
    finally:
        log.close()
    kept = path.read_text() + ((tmp_path / "p.log.1").read_text() if (tmp_path / "p.log.1").exists() else "")
    # today: p.log holds the old 990 bytes, "started: t", the bound's note and "28 bytes ... dropped"
    assert "started: the new program's first line" in kept, kept[-300:]


def test_estimate_honest_never_judges_a_case_whose_quantum_method_did_not_run(wf: WorkflowDir) -> None:
    module = ALWAYS_CRASHES.replace(
        "from qsolve import MethodResult", "from qsolve import MethodResult, MethodUnavailable"
    ).replace("        return 1 / 0", "        raise MethodUnavailable('no device today')")
    assert "MethodUnavailable('no device today')" in module
    wf.write("workflow.py", module)
    wf.write("schemas/output.json", {"type": "object"})
    wf.cases["cases"] = [{"name": "unavailable", "input": {"x": 0}}, {"name": "runs", "input": {"x": 1}}]
    wf.save()
    gates = _gates(wf)
    # today: pass, "note: unavailable sent no circuits, nothing to compare"; "runs" sent 1 circuit of 100
    # shots where estimate() says 100 circuits and 10000 shots
    assert not gates["estimate_honest"].passed, gates["estimate_honest"].message
    assert "runs" in gates["estimate_honest"].message, gates["estimate_honest"].message


#: the reference provider, whose describe names its device in :data:`LONG_NAME` characters
LONG_DEVICE_NAME = textwrap.dedent(
    """
    import json, os, sys
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    provider = ReferenceProvider(ReferenceOptions(qubits=4))
    for line in sys.stdin.buffer:
        message = json.loads(line)
        answer = provider.handle(message)
        if message.get("op") == "describe":
            answer["device"] = "D" * LONG_NAME
        out.write(json.dumps(answer).encode() + b"\\n")
    """
)
LONG_NAME = 1 << 20


def test_a_describes_long_strings_are_not_kept_whole(home, tmp_path, sessions):  # noqa: F811
    from qsolve.providers.errors import ProviderError
    from qsolve.providers.jobs import JobStopped

    script = tmp_path / "long_device_name.py"
    script.write_text(LONG_DEVICE_NAME.replace("LONG_NAME", str(LONG_NAME)))
    argv = ["providers", "add", "wordy", "--process", "--", sys.executable, str(script)]
    assert main(argv) == 0
    client, entry = open_client("wordy")
    session = sessions("wordy", client, entry.transport)
    try:
        session.run(bell(), SHOTS, seed=3)
    except (ProviderError, JobStopped):
        pass  # refused: what the mend may do
    finally:
        client.close()
    run = b"D" * (1 << 16)
    kept = []
    for root, _, files in os.walk(home):
        for name in files:
            path = Path(root, name)
            with path.open("rb") as f:
                if run in f.read():
                    kept.append(f"{path.relative_to(home)} ({path.stat().st_size} bytes)")
    # today: the job's blob holds the 1 MiB name whole (state.db too, in pages of its own)
    assert not kept, kept


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\U000e0041"])
def test_a_providers_message_shows_no_bidi_override_nor_invisible_character(char: str) -> None:
    from qsolve.providers.errors import ProviderError

    said = str(ProviderError("lab", "status", "internal", f"cost 1 USD{char}0001 credits"))
    # today: the character is kept as it is, and the terminal reverses or hides what follows it
    assert char not in said, ascii(said)
