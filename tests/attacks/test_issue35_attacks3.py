"""Issue 35 attacked (third round): what a confined process provider still reaches, what it can make the
host hold, and whether one host's jobs share one memory budget. Each test is a finding that fails today
(``xfail(strict=True)``) and passes once mended: it asserts what the attacker should get, nothing.

- ``providers add --env NAME`` takes any name: the host's ``QISKIT_IBM_TOKEN``, ``AWS_SECRET_ACCESS_KEY``
  and ``QSOLVE_DATABASE_URL`` reach the program, which docs/providers.md says never happens;
- a provider's standard error is appended to ``QSOLVE_HOME/providers/logs/NAME.log`` without a bound: a
  program that writes 64 MiB to it leaves 64 MiB there (and, for as long as it runs, fills the disk the
  state database and the host's keys are on);
- the network is left open, loopback too: the program is let in by a PostgreSQL on 127.0.0.1 that
  admits by address (this machine's, and deploy.md's passwordless ``qsolve@db/qsolve``), with the
  rights of the platform's own database role, without any secret of the host;
- the "machine-wide" budget of jobs' memory is one per ``QSOLVE_HOME``: a person's ``qsolve test``
  (``./.qsolve`` by default) and a worker's flow runs each claim up to the whole budget;
- a program ended by its memory bound is said to be "killed by signal 9": the rule is not named;
- the program keeps the capabilities to read past files' modes, so every folder bound for it is read
  whole: ``/etc/ssl``, bound for every provider, gives it ``/etc/ssl/private`` (the host's TLS keys);
- an error a provider answers is taken whole, however long: a 32 MiB message becomes a 32 MiB "line"
  of the error, and the provider job's record in the state database keeps all of it;
- a describe answer of a few hundred bytes claiming 10^12 qubits, all coupled, is compiled against: the
  host builds a list of every place (``qsolve run`` held 24 GB, in the platform's own process, outside
  every cgroup, until the kernel killed it, taking a platform worker first);
- ``qsolve run`` and a hardware run hold a provider job's wait to the job's limit from *before* the job
  waits for memory (``hold_to``, then the admission): a job admitted after its limit sends its first
  device job (spending) and gives it up at its first poll, "still running after the job's time limit".
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import textwrap

import pytest

from qsolve.cli import main
from qsolve.providers.connect import open_client
from qsolve.providers.errors import ProviderError
from qsolve.validation.jobs import Limits, admitted
from tests.qsolve.providers.test_misbehaving import SHOTS, bell, sessions  # noqa: F401 - a fixture, by name

DESCRIBE = {"protocol": "wai.quantum.provider/1", "op": "describe"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "HOST-BUCKET-SECRET")
    monkeypatch.setenv("QISKIT_IBM_TOKEN", "HOST-IBM-SECRET")
    return home


def _add(name: str, script, *flags: str) -> int:
    return main(["providers", "add", name, "--process", *flags, "--", sys.executable, str(script)])


# ---- 1: --env passes the host's secrets on ---------------------------------------------------------------

ENVIRON = textwrap.dedent(
    """
    import json, os, sys
    for line in sys.stdin:
        print(json.dumps({"ok": True, "env": dict(os.environ)}), flush=True)
    """
)


def test_env_never_passes_the_hosts_own_secrets(home, tmp_path, monkeypatch, capsys):
    script = tmp_path / "environ.py"
    script.write_text(ENVIRON)
    names = ("QISKIT_IBM_TOKEN", "AWS_SECRET_ACCESS_KEY", "QSOLVE_DATABASE_URL")
    code = _add("nosy", script, *(f for n in names for f in ("--env", n)))
    if code != 0:  # refused at add, in one line: nothing is passed on
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        return
    # the state database's address, as a worker holds it (set after add, which opened the state here)
    monkeypatch.setenv("QSOLVE_DATABASE_URL", "postgresql+psycopg://qsolve:HOST-DB-PASSWORD@db/qsolve")
    client, _ = open_client("nosy")
    try:
        env = client.transport.exchange(DESCRIBE, 60)["env"]
    finally:
        client.close()
    seen = json.dumps(env)
    for secret in ("HOST-IBM-SECRET", "HOST-BUCKET-SECRET", "HOST-DB-PASSWORD"):
        assert secret not in seen


# ---- 2: the provider's log file has no bound ------------------------------------------------------------

#: 64 MiB on standard error, then its answer
NOISY = textwrap.dedent(
    """
    import json, os, sys
    line = b"x" * 65535 + b"\\n"
    for _ in range(1024):
        os.write(2, line)
    for message in sys.stdin:
        print(json.dumps({"ok": True}), flush=True)
    """
)
WRITTEN = 64 * 2**20


def test_a_provider_that_writes_its_standard_error_forever_does_not_fill_the_hosts_disk(home, tmp_path):
    script = tmp_path / "noisy.py"
    script.write_text(NOISY)
    assert _add("noisy", script) == 0
    client, _ = open_client("noisy")
    try:
        assert client.transport.exchange(DESCRIBE, 60) == {"ok": True}
    finally:
        client.close()
    logs = home / "providers" / "logs"
    kept = sum(p.stat().st_size for p in logs.rglob("*") if p.is_file())
    assert kept <= WRITTEN // 2, f"{kept} bytes of the provider's log kept in QSOLVE_HOME"


# ---- 3: loopback services that admit by address ---------------------------------------------------------

PG_HOST, PG_PORT = "127.0.0.1", 5432


def _startup(user: str, database: str) -> bytes:
    body = struct.pack("!I", 196608)
    for key, value in (("user", user), ("database", database)):
        body += key.encode() + b"\0" + value.encode() + b"\0"
    body += b"\0"
    return struct.pack("!I", len(body) + 4) + body


def _admitted_by_postgres(host: str = PG_HOST, port: int = PG_PORT) -> str:
    """What a PostgreSQL server at ``host:port`` says to a client with no password: ``trusted`` when it
    lets it in as ``postgres`` (AuthenticationOk), else why not."""
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(_startup("postgres", "postgres"))
            head = s.recv(9)
    except OSError as e:
        return f"refused: {e}"
    if len(head) >= 9 and head[:1] == b"R" and struct.unpack("!I", head[5:9])[0] == 0:
        return "trusted"
    return f"not trusted: {head[:1]!r}"


LOOPBACK = textwrap.dedent(
    """
    import json, socket, struct, sys
    body = struct.pack("!I", 196608) + b"user\\0postgres\\0database\\0postgres\\0\\0"
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=3) as s:
            s.sendall(struct.pack("!I", len(body) + 4) + body)
            head = s.recv(9)
        trusted = len(head) >= 9 and head[:1] == b"R" and struct.unpack("!I", head[5:9])[0] == 0
        got = "trusted" if trusted else f"not trusted: {head[:1]!r}"
    except OSError as e:
        got = f"refused: {e}"
    for message in sys.stdin:
        print(json.dumps({"ok": True, "got": got}), flush=True)
    """
)


def test_a_provider_is_not_let_into_the_hosts_database_by_its_address(home, tmp_path):
    if _admitted_by_postgres() != "trusted":
        pytest.skip("no PostgreSQL at 127.0.0.1:5432 that admits by address on this machine")
    script = tmp_path / "loopback.py"
    script.write_text(LOOPBACK)
    assert _add("prober", script) == 0
    client, _ = open_client("prober")
    try:
        got = client.transport.exchange(DESCRIBE, 60)["got"]
        assert client.transport.confined["missing"] == []  # confined, whole
    finally:
        client.close()
    assert got != "trusted", "the provider program was let into the host's PostgreSQL as postgres"


# ---- 4: one budget per QSOLVE_HOME, not per machine -------------------------------------------------------

#: an admission under another QSOLVE_HOME of this host: it must wait for the first's claim (the test's
#: platform stop ends its wait after 1.5 s)
OTHER_HOME = """\
import sys, threading
from qsolve.errors import PlatformStopped
from qsolve.runtime.stopping import stopping
from qsolve.validation.jobs import Limits, admitted
from tests.qsolve.providers.test_misbehaving import SHOTS, bell, sessions  # noqa: F401 - a fixture, by name
with stopping() as stop:
    threading.Timer(1.5, stop.set, ["the test stopped it"]).start()
    try:
        with admitted(Limits(timeout_s=60, memory_mb=1000), "the second job", lambda l: print("said:", l)):
            print("admitted", flush=True)
    except PlatformStopped as e:
        print("stopped:", e, flush=True)
"""


def test_two_homes_on_one_host_share_its_budget_of_jobs_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("QSOLVE_JOBS_MEMORY_MB", "2000")  # one job of 1000 MB (1768 with its overhead)
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "worker-home"))
    env = {**os.environ, "QSOLVE_HOME": str(tmp_path / "person-home")}
    with admitted(Limits(timeout_s=60, memory_mb=1000), "the first job", lambda line: None):
        done = subprocess.run(
            [sys.executable, "-c", OTHER_HOME], capture_output=True, text=True, timeout=30, env=env
        )
    assert "admitted" not in done.stdout, "two jobs of 1768 MB ran at once on a host budget of 2000 MB"
    assert "said:" in done.stdout and "stopped:" in done.stdout, done.stdout + done.stderr


# ---- 5: a program ended by its memory bound -------------------------------------------------------------

GREEDY = textwrap.dedent(
    """
    import json, sys
    held = [bytearray(100 * 2**20) for _ in range(20)]  # 2 GB: past its cgroup's 1,024 MB + 256 MB
    for message in sys.stdin:
        print(json.dumps({"ok": True}), flush=True)
    """
)


def test_a_provider_ended_by_its_memory_bound_is_told_so(home, tmp_path):
    script = tmp_path / "greedy.py"
    script.write_text(GREEDY)
    assert _add("greedy", script) == 0
    client, _ = open_client("greedy")
    try:
        with pytest.raises(ProviderError) as caught:
            client.describe()
    finally:
        client.close()
    said = str(caught.value)
    assert len(said.splitlines()) == 1 and "greedy" in said
    assert "memory" in said, said


# ---- 6: what a bound folder holds is read past its modes -----------------------------------------------

PRIVATE = "/etc/ssl/private"  # the host's TLS private keys: root's (and group ssl-cert's) alone

PAST_MODES = textwrap.dedent(
    """
    import json, os, sys
    try:
        got = sorted(os.listdir("/etc/ssl/" + "private"))  # not named on its command line
    except OSError as e:
        got = f"refused: {e.strerror}"
    for message in sys.stdin:
        print(json.dumps({"ok": True, "got": got}), flush=True)
    """
)


def test_a_provider_does_not_read_the_hosts_private_tls_keys(home, tmp_path):
    mode = os.stat(PRIVATE).st_mode if os.path.isdir(PRIVATE) else None
    if mode is None or mode & 0o005:
        pytest.skip(f"no {PRIVATE} closed to others on this machine")
    script = tmp_path / "past_modes.py"
    script.write_text(PAST_MODES)
    assert _add("keys", script) == 0
    client, _ = open_client("keys")
    try:
        got = client.transport.exchange(DESCRIBE, 60)["got"]
        assert client.transport.confined["uid"] == 65534  # nobody, to whom the folder is closed
    finally:
        client.close()
    assert isinstance(got, str) and got.startswith("refused"), f"{PRIVATE} listed by the program: {got}"


# ---- 7: a provider job's wait counts the job's wait for memory ---------------------------------------------

#: the reference provider, whose every job says "running" at its first status poll and "done" after
FIRST_POLL_RUNNING = textwrap.dedent(
    """
    import json, os, sys
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    provider, polled = ReferenceProvider(ReferenceOptions(qubits=4)), set()
    for line in sys.stdin.buffer:
        message = json.loads(line)
        answer = provider.handle(message)
        if message.get("op") == "status" and answer.get("ok") and message["job"] not in polled:
            polled.add(message["job"])
            answer = {"ok": True, "status": "running"}
        out.write(json.dumps(answer).encode() + b"\\n")
    """
)
LIMIT_S = 10  # the job's own limit (the seed's floor of 300 s lowered, so that the test is cheap)
WAIT_S = LIMIT_S + 2  # how long the job waits for memory first: not the job's time (docs/validation.md)


def test_a_wait_for_memory_is_not_taken_from_a_provider_jobs_time(
    home, tmp_path, monkeypatch, capsys, caplog
):
    import shutil
    import threading
    from pathlib import Path

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
    script = tmp_path / "first_poll_running.py"
    script.write_text(FIRST_POLL_RUNNING)
    assert _add("slow", script) == 0
    monkeypatch.setenv("QSOLVE_JOBS_MEMORY_MB", "1500")  # the case's 1024 MB waits for another job's 1000
    held, release = threading.Event(), threading.Event()

    def other_job() -> None:
        with admitted(Limits(timeout_s=60, memory_mb=1000 - jobs.JOB_OVERHEAD_MB), "another job", print):
            held.set()
            release.wait(WAIT_S)

    other = threading.Thread(target=other_job)
    other.start()
    try:
        assert held.wait(30)
        capsys.readouterr()
        code = main(["run", str(folder), "--case", "single-edge", "--target", "provider:slow", "--json"])
        out, err = capsys.readouterr()
    finally:
        release.set()
        other.join()
    assert "waits for memory" in caplog.text  # it did wait, longer than its limit
    assert "still running after" not in out + err, err[-2000:]
    assert code == 0 and json.loads(out)["case"]["passed"] is True, err[-2000:]


# ---- 8: a provider's error message has no bound of its own ------------------------------------------------

#: the reference provider, whose every ``result`` is an error with a message of :data:`LONG` characters
LONG_ERROR = textwrap.dedent(
    """
    import json, os, sys
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    from qsolve.providers.reference import ReferenceOptions, ReferenceProvider

    provider = ReferenceProvider(ReferenceOptions(qubits=4))
    for line in sys.stdin.buffer:
        message = json.loads(line)
        answer = provider.handle(message)
        if message.get("op") == "result":
            answer = {"ok": False, "error": {"code": "internal", "message": "E" * (32 * 2**20)}}
        out.write(json.dumps(answer).encode() + b"\\n")
    """
)
SAID_AT_MOST = 64 * 2**10  # far more than a person reads in one line


def test_a_providers_error_message_is_bounded_where_it_is_said_and_kept(home, tmp_path, sessions):  # noqa: F811
    from qsolve.providers.jobs import JobStopped

    script = tmp_path / "long_error.py"
    script.write_text(LONG_ERROR)
    assert _add("wordy", script) == 0
    client, entry = open_client("wordy")
    session = sessions("wordy", client, entry.transport)
    with pytest.raises(JobStopped) as caught:
        session.run(bell(), SHOTS, seed=3)
    said = str(caught.value)
    assert "wordy" in said and len(said.splitlines()) == 1
    kept = session.book.get_provider_job(caught.value.record).error or ""
    assert max(len(said), len(kept)) <= SAID_AT_MOST, f"said: {len(said)} characters; kept: {len(kept)}"


# ---- 9: a describe answer of a few bytes claims a device of 10^12 qubits --------------------------------

#: the reference provider, whose describe claims ``sys.argv[1]`` qubits, all coupled
HUGE_DEVICE = textwrap.dedent(
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
            answer["qubits"], answer["connectivity"] = int(sys.argv[1]), "all"
        out.write(json.dumps(answer).encode() + b"\\n")
    """
)
#: what ``qsolve run`` does first with a provider target, in a process of its own held to 2 GiB of
#: address space (unbounded, the same claim took this 24 GB machine's memory whole: killed by the
#: kernel after 93 s)
COMPILE = """\
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from qiskit import QuantumCircuit
from qsolve.providers.connect import open_client
from qsolve.providers.errors import ProviderError

circuit = QuantumCircuit(2, 2)
circuit.h(0)
circuit.cx(0, 1)
circuit.measure([0, 1], [0, 1])
client, _ = open_client("huge")
try:
    from qsolve.providers.compiler import compile_circuit

    compile_circuit(circuit, client.describe().device(), seed=3)
    print("compiled", flush=True)
except MemoryError:
    print("MemoryError", flush=True)
except Exception as e:
    print("refused:", type(e).__name__, e, flush=True)
finally:
    client.close()
"""


def test_a_device_of_a_trillion_qubits_is_refused_not_built(home, tmp_path):
    script = tmp_path / "huge_device.py"
    script.write_text(HUGE_DEVICE)
    argv = ["providers", "add", "huge", "--process", "--", sys.executable, str(script), str(10**12)]
    assert main(argv) == 0
    try:
        done = subprocess.run(
            [sys.executable, "-c", COMPILE], capture_output=True, text=True, timeout=60, env=dict(os.environ)
        )
        said = done.stdout.strip()
    except subprocess.TimeoutExpired:
        said = "still building after 60 s"
    assert said.startswith("refused:") and "huge" in said and len(said.splitlines()) == 1, said
