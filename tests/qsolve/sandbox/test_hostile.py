"""Hostile workflows: what a workflow's code gets when it attacks the platform, and that the report stays
the platform's.

Each attack that worked against the old sandbox is tried from a workflow built in a temporary folder.
Independent attacks share one job: the probe's quantum method tries each in turn and returns, in its
``details``, ``refused: <error>`` or ``GOT: <what it got>`` per attack, so that each is asserted on its
own; a control runs the same reads, writes and connections unconfined and sees them succeed. Attacks
that end their workflow process (forged or malformed lines on the result channel) are cases of one job:
a process that failed is replaced by a fresh one for the next case. An attack that still succeeds is
marked ``xfail(strict=True)`` with what it gets.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import platform
import resource
import select
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from qsolve.sandbox import landlock, seccomp
from qsolve.sandbox.process import MAX_VALUES
from qsolve.validation import jobs
from qsolve.validation.jobs import Limits, Outcome, run_job
from qsolve.workflow.manifest import Resources
from tests.conftest import REPO, WorkflowDir

FAST = Limits(timeout_s=60, memory_mb=2048)
SECRET = "secret-" + uuid.uuid4().hex
GATES = [
    "manifest",
    "example_inputs",
    "benchmark_cases",
    "methods_declared",
    "fidelity_checked",
    "cases_pass",
    "reproducible",
    "estimate_honest",
]
#: what a refusal by the sandbox says: the kernel's EPERM / EACCES (ESRCH: a pid outside its PID
#: namespace; ENOENT, EROFS: a path not in the filesystem made for it, which the control shows is there,
#: or one bound read-only), or
#: the audit hooks' early error
DENIED = (
    "No such file or directory",
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
    "Function not implemented",
    "No such process",
    "SandboxRefused",
    "unable to open",
)
#: raw system call numbers of the attacks that differ between architectures
SYSCALLS = {
    "x86_64": {"fork": 57, "clone": 56, "ptrace": 101, "modify_ldt": 154},
    "aarch64": {"clone": 220, "ptrace": 117},
}
OPEN_TREE_ATTR = 467  # Linux 6.15, the same number everywhere: newer than the sandbox's list
NUMBERS = SYSCALLS.get(platform.machine(), {})
confinable = pytest.mark.skipif(
    os.geteuid() != 0 or landlock.abi_version() < 6 or not seccomp.available() or not NUMBERS,
    reason="the whole boundary needs root (to leave it), Landlock ABI 6+, libseccomp, x86_64 or aarch64",
)

#: what every hostile module starts with: raw system calls through libc (around Python's audit hooks),
#: the result channel found among its file descriptors, and the classical half of a workflow
HEAD = """\
import ctypes, fcntl, json, os, stat
from qsolve import MethodResult

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


def checked(result):
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def libc(name, *args):  # a libc function, str arguments as paths
    return checked(getattr(LIBC, name)(*(os.fsencode(a) if isinstance(a, str) else a for a in args)))


def sys_call(number, *args):
    return checked(LIBC.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args)))


def c_open(path, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    return checked(LIBC.open(os.fsencode(path), flags, 0o644))


def c_write(path, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = c_open(path, flags)
    try:
        return checked(LIBC.write(fd, b"planted", 7))
    finally:
        LIBC.close(fd)


def c_read(path):
    fd = c_open(path, os.O_RDONLY)
    buffer = ctypes.create_string_buffer(256)
    try:
        return buffer.raw[: checked(LIBC.read(fd, buffer, 256))]
    finally:
        LIBC.close(fd)


def channel():
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & 3 == os.O_WRONLY:
                return fd
        except OSError:
            pass
    raise LookupError("no result channel")


def send(*lines):
    fd = channel()
    for line in lines:
        data = line if isinstance(line, bytes) else (json.dumps(line) + "\\n").encode()
        while data:
            data = data[os.write(fd, data):]


def evaluate(input, solution):
    return -float(solution["x"])


def reference(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1})
"""


def hostile_job(wf: WorkflowDir, body: str, cases: list[dict], limits: Limits = FAST) -> Outcome:
    """The gates of a workflow whose module is :data:`HEAD` and ``body`` (which defines ``quantum``)."""
    wf.write("workflow.py", HEAD + body)
    wf.cases["cases"] = cases
    wf.save()
    return run_job(wf.root, "sim-cpu", None, Resources(), limits=limits)


def gates(outcome: Outcome) -> dict[str, dict[str, Any]]:
    """The report's gates by name, which must be the platform's, in the seed's order."""
    assert outcome.died is None, (outcome.died, outcome.log_tail)
    got = {g["name"]: g for g in outcome.report["gates"]}
    assert list(got) == GATES[: len(got)] and len(got) >= 6, got
    return got


def cases_of(outcome: Outcome) -> dict[str, dict[str, Any]]:
    assert outcome.report is not None, (outcome.died, outcome.log_tail)
    return {c["name"]: c for c in outcome.report["cases"]}


def one_case(x: int = 1, **fields: Any) -> list[dict[str, Any]]:
    return [{"name": "one", "input": {"x": x}, **fields}]


class Recorded(jobs.JobProcess):
    """A workflow process that the platform started, remembered so that a test can see it end."""

    started: list[Recorded] = []

    def __init__(self) -> None:
        super().__init__()
        Recorded.started.append(self)

    @classmethod
    def pids(cls) -> set[int]:
        """The platform's children, the processes that ran their jobs (as the platform saw them), and
        any process of uid 65534 whose working folder is in one of their folders (one they started)."""
        pids = {pid for p in cls.started for pid in (p.proc.pid, p.inner) if pid}
        folders = tuple(str(p.tmp) for p in cls.started)
        for entry in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                uid = next(ln for ln in (entry / "status").read_text().splitlines() if ln.startswith("Uid:"))
                if uid.split()[1] == "65534" and os.readlink(entry / "cwd").startswith(folders):
                    pids.add(int(entry.name))
        return pids


@contextlib.contextmanager
def recording() -> Iterator[type[Recorded]]:
    Recorded.started = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jobs, "JobProcess", Recorded)
        yield Recorded


def running(pids: set[int], wait_s: float = 3.0) -> list[int]:
    """Those of ``pids`` still running (not zombies) after up to ``wait_s`` for them to end."""
    deadline = time.monotonic() + wait_s
    while True:
        alive = []
        for pid in sorted(pids):
            with contextlib.suppress(OSError):
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    alive.append(pid)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def kill(pids: Iterator[int] | set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGESIZE") / 2**20


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class PeakMemory:
    """How far this process's memory rose while in the block, in MiB: the larger of its resident size
    sampled every 10 ms above where it was (a sample waits while native code holds the GIL) and the
    rise of ``ru_maxrss`` (which only ever grows: an earlier test's peak hides a lower one)."""

    def __enter__(self) -> PeakMemory:
        self.start = self.peak = _rss_mb()
        self.maxrss = _maxrss_mb()
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, _rss_mb())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sampler.join()
        self.grew_mb = max(self.peak - self.start, _maxrss_mb() - self.maxrss)


def make_home(home: Path) -> Path:
    """A platform home with secrets in it: a key, a state database, the device cache it unpickles."""
    (home / "keys").mkdir(parents=True)
    (home / "keys" / "receipt.key").write_text(SECRET)
    (home / "keys" / "receipt.key").chmod(0o600)
    (home / "keys" / "receipt-ed25519.seed").write_bytes(os.urandom(32))
    (home / "credentials").mkdir()
    (home / "credentials" / "ibm").write_text(SECRET)
    (home / "credentials" / "ibm").chmod(0o600)
    (home / "cache" / "devices").mkdir(parents=True)
    with contextlib.closing(sqlite3.connect(home / "state.db")) as db:
        db.execute("create table secrets (value text)")
        db.execute("insert into secrets values (?)", (SECRET,))
        db.commit()
    return home


@pytest.fixture(scope="module", autouse=True)
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The platform's home for every test here (:func:`make_home`)."""
    home = make_home(tmp_path_factory.mktemp("qsolve-home"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QSOLVE_HOME", str(home))
        yield home


@pytest.fixture
def started() -> Iterator[type[Recorded]]:
    with recording() as processes:
        yield processes


# 1. Forged results -----------------------------------------------------------------------------------

FORGED = """\
import qsolve.validation.gates, qsolve.judging.deciding
from qiskit import QuantumCircuit
from qiskit.providers.basic_provider import BasicSimulator

# at import: this process's copy of the platform's judging says every case and every gate passes
PASSED = [{"name": n, "passed": True, "message": "forged"} for n in GATES]
qsolve.judging.deciding.first_failure = lambda evidence: None
qsolve.judging.deciding.meets_expect = lambda *a, **k: True
qsolve.validation.gates.judge = lambda inputs: [qsolve.validation.gates.GateResult(**g) for g in PASSED]
try:  # the platform's own modules, as far as this process can import them
    import qsolve.validation.case_runner, qsolve.validation.gate_run
    qsolve.validation.case_runner.first_failure = qsolve.judging.deciding.first_failure
    qsolve.validation.case_runner.meets_expect = qsolve.judging.deciding.meets_expect
    qsolve.validation.gate_run.judge = qsolve.validation.gates.judge
except Exception:
    pass
RIGHT = {"objective": -1.0, "solution": {"x": 1}, "details": {}}
CASE = {"name": "one", "passed": True, "message": None, "fidelity": 1.0, "max_two_qubit_gates": 0}


def ghz(n):
    qc = QuantumCircuit(n)
    qc.h(0)
    for i in range(n - 1):
        qc.cx(i, i + 1)
    qc.measure_all()
    return qc


def quantum(input, params, ctx):
    patched = {"patched": qsolve.judging.deciding.meets_expect(None, 0.0, 1.0)}
    attack = input["x"]
    if attack == 4:  # the circuits of a noisy device, and then the numbers rewritten
        ctx.backend = BasicSimulator()
        counts = ctx.sample([ghz(5)], 2000)
        ctx.records = ctx._records = [{"qubits": 5, "two_qubit_gates": 0, "shots": 2000, "fidelity": 1.0}]
        ctx.postselection = None
        return MethodResult(-1.0, solution={"x": 1}, details={**patched, "fidelity": 1.0, "counts": counts})
    ctx.sample([ghz(2)], 100)
    if attack == 2:  # a whole forged report, then the end of the process
        send({"event": "report", "gates": PASSED, "cases": [CASE], "timing": {}},
             {"event": "returned", **RIGHT}, {"event": "confined", "uid": 65534, "seccomp": True})
        os._exit(0)
    if attack == 3:  # a forged return, then the method's own (wrong) one
        send({"event": "returned", **RIGHT})
    return MethodResult(0.0, solution={"x": 0}, details=patched)
"""


def test_forged_results_do_not_make_a_failing_workflow_pass(wf: WorkflowDir) -> None:
    fidelity = {"min_fidelity": 0.97, "max_gap": 0.0}
    outcome = hostile_job(
        wf,
        f"GATES = {GATES!r}\n" + FORGED,
        [
            {"name": "judging-patched", "input": {"x": 1}, "expect": {"max_gap": 0.0}},
            {"name": "report-forged", "input": {"x": 2}, "expect": {"max_gap": 0.0}},
            {"name": "return-forged", "input": {"x": 3}, "expect": {"max_gap": 0.0}},
            {"name": "fidelity-rewritten", "input": {"x": 4}, "target": "fake:fez@10", "expect": fidelity},
        ],
    )
    judged, cases = gates(outcome), cases_of(outcome)
    assert not any(g["message"] == "forged" for g in judged.values())
    assert not judged["cases_pass"]["passed"]
    assert "4 of 4 cases fail" in judged["cases_pass"]["message"]
    assert not any(c["passed"] for c in cases.values())

    patched = cases["judging-patched"]
    assert patched["methods"][0]["details"] == {"patched": True}  # the patch held in the workflow process
    assert patched["gap"] > 0 and patched["quantum"] == 0.0

    for name in ("report-forged", "return-forged"):
        assert "the workflow process broke the protocol" in cases[name]["message"], cases[name]
        assert cases[name]["fidelity"] is None

    noisy = cases["fidelity-rewritten"]
    assert noisy["fidelity"] < 0.97, noisy
    assert noisy["message"].startswith("fidelity 0.") and noisy["message"].endswith(" < 0.97")
    assert noisy["max_two_qubit_gates"] >= 4 and noisy["circuits"] == 1 and noisy["shots"] == 2000
    (record,) = noisy["methods"][0]["circuits"]
    assert record["qubits"] == 5 and record["fidelity"] == noisy["fidelity"]


# 2-4. The probe: secrets, writes, network, processes and signals, each tried in one method ----------

PROBE = """\
import multiprocessing, multiprocessing.util, socket, sqlite3, struct, subprocess, tempfile
from pathlib import Path
from qiskit import QuantumCircuit

TEST_PID, HOME, OUT, REPO, USER_HOME = %(test_pid)r, %(home)r, %(out)r, %(repo)r, %(user_home)r
PORT, UNIX, ABSTRACT, TOKEN, SYSCALLS = %(port)r, %(unix)r, %(abstract)r, %(token)r, %(syscalls)r
AF_INET, AF_UNIX, SOCK_STREAM, SIGCHLD, SIGKILL = 2, 1, 1, 17, 9
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000


def attempt(fn):
    try:
        got = fn()
    except BaseException as e:
        return f"refused: {type(e).__name__}: {e}"[:300]
    return f"GOT: {got!r}"[:300]


def spawn(*argv):  # _posixsubprocess.fork_exec, as multiprocessing calls it
    return multiprocessing.util.spawnv_passfds(argv[0], list(argv), ())


def forked(pid):
    if pid == 0:  # the child, had there been one: gone at once
        os._exit(0)
    return f"pid {pid}"


def c_connect(family, address):
    fd = checked(LIBC.socket(family, SOCK_STREAM, 0))
    if family == AF_INET:
        raw = struct.pack("=HH4s8x", AF_INET, socket.htons(address[1]), socket.inet_aton(address[0]))
    else:
        raw = struct.pack("=H", AF_UNIX) + os.fsencode(address)
    checked(LIBC.connect(fd, raw, len(raw)))
    return "connected"


def setns(path, kind):
    return checked(LIBC.setns(os.open(path, os.O_RDONLY), kind))


def parquet(path):
    import pyarrow, pyarrow.parquet
    pyarrow.parquet.write_table(pyarrow.table({"x": [1]}), path)


def sqlite_write(path):
    db = sqlite3.connect(path)
    db.execute("create table if not exists secrets (value text)")
    db.execute("insert into secrets values ('forged')")
    db.commit()


def watch(path):  # an inotify watch on path: what happens in it, as it happens
    return checked(LIBC.inotify_add_watch(checked(LIBC.inotify_init1(0)), os.fsencode(path), 0xFFF))


def numpy_fd():  # numpy's __init__.py: a file every workflow process may read
    import numpy
    return os.open(numpy.__file__, os.O_RDONLY)


def lock(command, kind=fcntl.F_RDLCK):  # struct flock: a read lock on byte 0 (F_GETLK: who holds one)
    return fcntl.fcntl(numpy_fd(), command, struct.pack("hhqqi", kind, 0, 0, 1, 0))


def fill(size_mb, file_mb):
    # write size_mb MiB into the scratch folder in files of file_mb MiB; how far it got
    block, written, files = bytes(2**20), 0, []
    try:
        while written < size_mb:
            files.append(f"fill-{len(files)}")
            with open(files[-1], "wb") as f:
                for _ in range(file_mb):
                    f.write(block)
                    f.flush()
                    written += 1
    except OSError as e:
        raise OSError(e.errno, f"{e.strerror} after {written} MiB") from None
    finally:
        for name in files:
            os.remove(name)
    return f"{written} MiB written"


ATTACKS = {
%(attacks)s
}


def quantum(input, params, ctx):
    details = {name: attempt(fn) for name, fn in ATTACKS.items()}
    details["env: names"] = sorted(os.environ)
    details["mountinfo"] = open("/proc/self/mountinfo").read()
    details["hostname"] = socket.gethostname()
    details["temp folder"] = attempt(lambda: os.listdir(os.path.dirname(os.path.dirname(os.getcwd()))))
    details["env: holds the secret"] = any(%(secret)r in v for v in os.environ.values())
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details=details)
"""

#: attack -> a Python expression the workflow's method evaluates; each must be refused
READS = {
    "the platform's key": "open(HOME + '/keys/receipt.key').read()",
    "the platform's key, by libc": "c_read(HOME + '/keys/receipt.key')",
    "the platform's key, through /proc/self/root": "c_read('/proc/self/root' + HOME + '/keys/receipt.key')",
    "the state database": "sqlite3.connect(HOME + '/state.db').execute('select * from secrets').fetchall()",
    "the platform's home, listed": "os.listdir(HOME)",
    "the platform's environment": "open(f'/proc/{TEST_PID}/environ', 'rb').read()",
    "the platform's environment, by /proc/self/..": "c_read(f'/proc/self/../{TEST_PID}/environ')",
    "the platform's memory": "os.open(f'/proc/{TEST_PID}/mem', os.O_RDONLY)",
    "the platform's files, listed": "os.listdir(f'/proc/{TEST_PID}/fd')",
    "the platform's working folder": "os.listdir(f'/proc/{TEST_PID}/cwd')",
    "init's environment": "open('/proc/1/environ', 'rb').read()",
    "/etc/shadow": "c_read('/etc/shadow')",
    "the user's home": "open(USER_HOME + '/.bashrc').read()",
    "the platform's repository": "open(REPO + '/README.md').read()",
    "the platform's tests": "c_read(REPO + '/tests/conftest.py')",
}
WRITES = {
    "open()": "open(OUT + '/open.txt', 'w').write('x')",
    "libc open+write": "c_write(OUT + '/libc.txt')",
    "os.open with dir_fd": "os.open('dirfd.txt', os.O_WRONLY | os.O_CREAT, dir_fd=os.open(OUT, os.O_PATH))",
    "os.link out": "(open('mine.txt', 'w').write('x'), os.link('mine.txt', OUT + '/link.txt'))",
    "libc link of its module out": "libc('link', __file__, OUT + '/link2.txt')",
    "symlink, then write through it": "(os.symlink(OUT + '/symlinked.txt', 'link-out'), c_write('link-out'))",
    "its own workflow copy": "c_write(str(Path(__file__).with_name('planted.py')))",
    "its own module": "c_write(__file__, os.O_WRONLY | os.O_APPEND)",
    "libc rename of its module out": "libc('rename', __file__, OUT + '/renamed.txt')",
    "libc mkdir": "libc('mkdir', OUT + '/folder', 0o755)",
    "libc truncate": "libc('truncate', OUT + '/existing.txt', ctypes.c_long(0))",
    "libc chmod": "libc('chmod', OUT + '/existing.txt', 0o777)",
    "libc unlink": "libc('unlink', OUT + '/existing.txt')",
    "sqlite3 database": "sqlite_write(OUT + '/new.db')",
    "sqlite3 into the platform's state": "sqlite_write(HOME + '/state.db')",
    "parquet": "parquet(OUT + '/table.parquet')",
    "the platform's source": "c_write(REPO + '/qsolve/_hostile_' + TOKEN + '.py')",
    "the platform's source, by open()": "open(REPO + '/qsolve/_hostile_' + TOKEN + '.py', 'w').write('x')",
    "the device cache": "c_write(HOME + '/cache/devices/x.pickle')",
    "/tmp": "c_write('/tmp/qsolve-hostile-' + TOKEN)",
    "/dev/shm": "c_write('/dev/shm/qsolve-hostile-' + TOKEN)",
}
SCRATCH = {  # what must work: the scratch folder (its working folder, HOME, TMPDIR), up to its cap
    "the working folder": "open('scratch.txt', 'w').write('ok')",
    "TMPDIR": "os.write(tempfile.mkstemp()[0], b'ok')",
    "HOME": "open(os.path.expanduser('~/home.txt'), 'w').write('ok')",
}
CAPPED = {  # must fail: all it writes is capped at 256 MiB, any one file at 64 MiB
    "300 MiB in files of 32 MiB": "fill(300, 32)",
    "one file of 100 MiB": "fill(100, 100)",
}
NETWORK = {
    "TCP to the platform's listener": "socket.create_connection(('127.0.0.1', PORT), timeout=2)",
    "TCP, by libc": "c_connect(AF_INET, ('127.0.0.1', PORT))",
    "unix socket to the platform's listener": "socket.socket(socket.AF_UNIX).connect(UNIX)",
    "unix socket, by libc": "c_connect(AF_UNIX, UNIX)",
    "abstract unix socket, by libc": "c_connect(AF_UNIX, ABSTRACT)",
    "netlink": "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)",
    "name lookup": "socket.getaddrinfo('localhost', 80)",
    "setns into the platform's network": "setns(f'/proc/{TEST_PID}/ns/net', CLONE_NEWNET)",
    "setns by its own namespace file": "setns('/proc/self/ns/net', CLONE_NEWNET)",
}
PROCESSES = {
    "os.fork": "forked(os.fork())",
    "subprocess": "subprocess.run(['/bin/true'])",
    "_posixsubprocess.fork_exec": "spawn(b'/bin/true')",
    "multiprocessing, fork": "multiprocessing.get_context('fork').Process(target=int).start()",
    "multiprocessing, spawn": "multiprocessing.get_context('spawn').Process(target=int).start()",
    **({"raw fork": "forked(sys_call(SYSCALLS['fork']))"} if "fork" in NUMBERS else {}),
    "raw clone (SIGCHLD)": "forked(sys_call(SYSCALLS['clone'], SIGCHLD, 0, 0, 0, 0))",
    "execve, by libc": "libc('execve', '/bin/true', None, None)",
    "setsid, then a daemon": "(os.setsid(), spawn(b'/bin/sleep', b'600'))",
    "a user namespace of its own": "checked(LIBC.unshare(CLONE_NEWUSER))",
}
SIGNALS = {
    "os.kill of its parent": "os.kill(os.getppid(), SIGKILL)",
    "SIGKILL to the platform, by libc": "checked(LIBC.kill(TEST_PID, SIGKILL))",
    "SIGKILL to every process, by libc": "checked(LIBC.kill(-1, SIGKILL))",
    "pidfd_open + pidfd_send_signal": "sys_call(424, sys_call(434, TEST_PID, 0), SIGKILL, 0, 0)",
    "ptrace attach": "sys_call(SYSCALLS['ptrace'], 16, TEST_PID, 0, 0)",
}
HOST = {  # what a stat or a watch tells of the platform's home and the host: nothing, it is not there
    "stat of the receipt key's seed": "os.stat(HOME + '/keys/receipt-ed25519.seed').st_size",
    "stat of a credential": "os.stat(HOME + '/credentials/ibm').st_size",
    "stat of the platform's home": "os.stat(HOME).st_mtime",
    "lstat of keys/, by libc": "libc('lstat', HOME + '/keys', ctypes.create_string_buffer(256))",
    "inotify on the platform's home": "watch(HOME)",
    "inotify on keys/": "watch(HOME + '/keys')",
    "inotify on credentials/": "watch(HOME + '/credentials')",
    "inotify on /tmp": "watch('/tmp')",
    "inotify on its own scratch": "watch('.')",
    "the platform's repository, by stat": "os.stat(REPO + '/pyproject.toml').st_size",
    "the host's /etc, listed": "os.listdir('/etc')",
}
LOCKS = {  # a lock on a file every workflow process reads is a channel between them: none is taken
    "flock": "fcntl.flock(numpy_fd(), fcntl.LOCK_SH | fcntl.LOCK_NB)",
    "lockf": "fcntl.lockf(numpy_fd(), fcntl.LOCK_SH | fcntl.LOCK_NB)",
    "F_SETLK": "lock(fcntl.F_SETLK)",
    "F_SETLKW": "lock(fcntl.F_SETLKW)",
    "F_GETLK": "lock(fcntl.F_GETLK, fcntl.F_WRLCK)",
    "F_OFD_SETLK": "lock(37)",
    "F_OFD_SETLKW": "lock(38)",
    "F_OFD_GETLK": "lock(36, fcntl.F_WRLCK)",
    "F_SETLEASE": "fcntl.fcntl(numpy_fd(), 1024, fcntl.F_RDLCK)",
    "F_NOTIFY on its copy": "fcntl.fcntl(os.open(os.path.dirname(__file__), os.O_RDONLY), 1026, 0x3F)",
    "fanotify": "sys_call(300 if 'fork' in SYSCALLS else 262, 0x200, 0)",
}
CALLS = {  # calls nobody listed: one Linux added after the list was written, one it never needed
    "open_tree_attr": f"sys_call({OPEN_TREE_ATTR}, -1, 0, 0, 0, 0)",
    **({"modify_ldt": "sys_call(SYSCALLS['modify_ldt'], 0, 0, 0)"} if "modify_ldt" in NUMBERS else {}),
}
GROUPS = {
    "read": READS,
    "host": HOST,
    "lock": LOCKS,
    "call": CALLS,
    "write": WRITES,
    "scratch": SCRATCH,
    "capped": CAPPED,
    "network": NETWORK,
    "process": PROCESSES,
    "signal": SIGNALS,
}


@dataclass
class Site:
    """Where a probe attacks: a platform home, a folder of the platform's (``out``), listeners the
    platform's process holds open (TCP, unix, abstract unix)."""

    home: Path
    out: Path
    token: str
    listeners: dict[str, socket.socket]

    def body(self, groups: dict[str, dict[str, str]] = GROUPS) -> str:
        """The probe's module after :data:`HEAD`: its method tries the attacks of ``groups``."""
        attacks = "\n".join(
            f"    {f'{group}: {name}'!r}: lambda: {expr},"
            for group, table in groups.items()
            for name, expr in table.items()
        )
        return PROBE % {
            "test_pid": os.getpid(),
            "home": str(self.home),
            "out": str(self.out),
            "repo": str(REPO),
            "user_home": str(Path.home()),
            "port": self.listeners["tcp"].getsockname()[1],
            "unix": self.listeners["unix"].getsockname(),
            "abstract": self.listeners["abstract"].getsockname().decode(),
            "token": self.token,
            "secret": SECRET,
            "syscalls": NUMBERS,
            "attacks": attacks,
        }

    def reached(self) -> dict[str, bool]:
        """Per listener, whether a connection waits in its backlog."""
        out = {}
        for name, sock in self.listeners.items():
            try:
                sock.accept()[0].close()
                out[name] = True
            except BlockingIOError:
                out[name] = False
        return out

    def leftovers(self) -> list[Path]:
        """What the attacks would leave outside ``out``."""
        names = [Path(f"/tmp/qsolve-hostile-{self.token}"), Path(f"/dev/shm/qsolve-hostile-{self.token}")]
        names += [
            self.home / "cache" / "devices" / "x.pickle",
            *(REPO / "qsolve").glob(f"_hostile_{self.token}*"),
        ]
        return [p for p in names if p.exists()]


def _listener(family: int, address: Any) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind(address)
    sock.listen(8)
    sock.setblocking(False)
    return sock


@contextlib.contextmanager
def site(base: Path, home: Path) -> Iterator[Site]:
    out = base / "out"
    out.mkdir()
    (out / "existing.txt").write_text("intact")
    (out / "existing.txt").chmod(0o644)
    token = uuid.uuid4().hex[:12]
    listeners = {
        "tcp": _listener(socket.AF_INET, ("127.0.0.1", 0)),
        "unix": _listener(socket.AF_UNIX, str(base / "sock")),
        "abstract": _listener(socket.AF_UNIX, "\0qsolve-hostile-" + token),
    }
    try:
        yield Site(home, out, token, listeners)
    finally:
        for sock in listeners.values():
            sock.close()


@dataclass
class Probe:
    site: Site
    outcome: Outcome
    details: dict[str, Any]
    reached: dict[str, bool]  # listener -> whether anything connected to it
    left_running: list[int]

    def group(self, name: str) -> dict[str, str]:
        return {k.split(": ", 1)[1]: v for k, v in self.details.items() if k.startswith(name + ": ")}


@pytest.fixture(scope="module")
def probe(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Probe:
    """One job whose quantum method tries every attack of :data:`GROUPS`, with a secret in the platform's
    environment."""
    base = tmp_path_factory.mktemp("probe")
    wf = WorkflowDir(base / "workflow")
    with contextlib.ExitStack() as stack:
        processes = stack.enter_context(recording())
        stack.enter_context(pytest.MonkeyPatch.context()).setenv("QISKIT_IBM_TOKEN", SECRET)
        where = stack.enter_context(site(base, home))
        outcome = hostile_job(wf, where.body(), one_case(expect={"max_gap": 0.0}))
        reached, left = where.reached(), running(processes.pids())
    details = cases_of(outcome)["one"]["methods"][0]["details"]
    return Probe(where, outcome, details, reached, left)


def readable(path: str) -> bool:
    try:
        Path(path).read_bytes()
    except OSError:
        return False
    return True


UNCONFINED = """\
import json, runpy, sys
module = runpy.run_path(sys.argv[1])
print(json.dumps({name: module["attempt"](fn) for name, fn in module["ATTACKS"].items()}))
"""


@confinable
def test_the_attacks_work_where_nothing_confines_them(tmp_path: Path) -> None:
    """The control: the probe's reads, writes and connections, run as root by a plain Python, get what
    they try (so a refusal in the sandbox is the sandbox's). Not the platform's source: never written."""
    tables = {
        "read": READS,
        "write": {k: v for k, v in WRITES.items() if "platform's source" not in k},
        "host": HOST,
        "lock": LOCKS,
    }
    with site(tmp_path, make_home(tmp_path / "home")) as where:
        module = tmp_path / "workflow" / "workflow.py"
        module.parent.mkdir()
        module.write_text(HEAD + where.body({**tables, "network": NETWORK}))
        (tmp_path / "scratch").mkdir()
        try:
            ran = subprocess.run(
                [sys.executable, "-c", UNCONFINED, str(module)],
                cwd=tmp_path / "scratch",
                capture_output=True,
                text=True,
                timeout=60,
            )
            got = json.loads(ran.stdout or "{}")
            reached = where.reached()
        finally:
            leftovers = where.leftovers()
            for path in leftovers:
                path.unlink()
    assert ran.returncode == 0, ran.stderr
    assert len(got) == sum(len(t) for t in tables.values()) + len(NETWORK)
    refused = {name: value for name, value in got.items() if not value.startswith("GOT: ")}
    # in a container, even root may not read its pid 1
    not_here = set() if readable("/proc/1/environ") else {"read: init's environment"}
    assert set(refused) == not_here, refused
    assert reached == {"tcp": True, "unix": True, "abstract": True}
    assert len(leftovers) == 3  # /tmp, /dev/shm, the device cache


def assert_refused(results: dict[str, str], table: dict[str, str]) -> None:
    assert set(results) == set(table), "the probe did not run every attack"
    got = {name: value for name, value in results.items() if not value.startswith("refused: ")}
    assert not got, f"the attacker got: {got}"
    vague = {name: value for name, value in results.items() if not any(d in value for d in DENIED)}
    assert not vague, f"refused, but not by the sandbox: {vague}"


@confinable
def test_the_probe_ran_confined_and_its_job_reported_normally(probe: Probe) -> None:
    held = probe.outcome.protections
    assert held.confined and held.uid == 65534 and held.seccomp and held.landlock_abi >= 6, held
    assert {"net", "pid", "ipc", "mnt"} <= set(held.namespaces) and held.scratch_mb == 256
    judged = gates(probe.outcome)
    assert len(judged) == 8 and judged["cases_pass"]["passed"], judged


@confinable
def test_stolen_secrets_are_not_readable(probe: Probe) -> None:
    reads = probe.group("read")
    # pid 1 of its own PID namespace, with a /proc of that namespace, is the process itself
    init = reads.pop("init's environment")
    assert init.startswith("refused: ") or "HOME=/tmp/qsolve-sandbox-" in init, init
    assert_refused(reads, {k: v for k, v in READS.items() if k != "init's environment"})
    assert "QISKIT_IBM_TOKEN" not in probe.details["env: names"]
    assert probe.details["env: holds the secret"] is False
    assert SECRET not in json.dumps(probe.outcome.report) + probe.outcome.log_tail


@confinable
def test_nothing_of_the_platforms_home_or_the_host_is_there_to_stat_or_watch(probe: Probe) -> None:
    results = probe.group("host")
    assert set(results) == set(HOST), "the probe did not run every attack"
    got = {name: value for name, value in results.items() if not value.startswith("refused: ")}
    assert not got, f"the attacker got: {got}"
    assert all(any(d in v for d in DENIED) for v in results.values()), results
    assert all("Operation not permitted" in v for k, v in results.items() if "inotify" in k), results
    # the temporary folder: not to be listed (Landlock), and it holds this process's folder only
    listed = probe.details["temp folder"]
    assert listed.startswith(("refused: PermissionError", "GOT: ['qsolve-sandbox-")), listed
    assert "," not in listed, listed


@confinable
def test_no_file_lock_lease_or_notification_is_had(probe: Probe) -> None:
    assert_refused(probe.group("lock"), LOCKS)
    assert all("Operation not permitted" in v for v in probe.group("lock").values()), probe.group("lock")


@confinable
def test_a_call_nobody_listed_is_refused(probe: Probe) -> None:
    assert_refused(probe.group("call"), CALLS)
    assert all("Function not implemented" in v for v in probe.group("call").values()), probe.group("call")
    # the kernel has them: here, outside the sandbox, each is a call it knows (EFAULT; 0 bytes read)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    assert libc.syscall(ctypes.c_long(OPEN_TREE_ATTR), *map(ctypes.c_long, (-1, 0, 0, 0, 0))) == -1
    assert ctypes.get_errno() != errno.ENOSYS
    if "modify_ldt" in NUMBERS:
        assert libc.syscall(ctypes.c_long(NUMBERS["modify_ldt"]), *map(ctypes.c_long, (0, 0, 0))) >= 0


@confinable
def test_mountinfo_shows_the_processs_own_mounts_only(probe: Probe) -> None:
    text = probe.details["mountinfo"]
    mounts = [line.split(" - ")[0].split() for line in text.splitlines()]
    points = {fields[4] for fields in mounts}
    fstype = {line.split()[4]: line.split(" - ")[1].split()[0] for line in text.splitlines()}
    assert fstype["/"] == "tmpfs" and fstype["/proc"] == "proc", text
    host = {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}
    assert points & host <= {"/", "/proc"}, points & host  # none of the host's mounts but its own two
    assert str(probe.site.home) not in text and "qsolve-home" not in text
    assert probe.details["hostname"] == "qsolve-sandbox"  # not the host's name
    assert {"/usr", "/dev/null"} <= points and len(points) < 40, points
    for fields in mounts:  # every mount made for it: nothing to run as another user, no access times
        options = fields[5].split(",")
        assert "nosuid" in options, fields
        if fields[4] not in ("/", "/proc"):
            assert "noatime" in options, fields


@confinable
def test_writes_outside_the_scratch_folder_leave_nothing_on_disk(probe: Probe) -> None:
    assert_refused(probe.group("write"), WRITES)
    assert sorted(p.name for p in probe.site.out.iterdir()) == ["existing.txt"]
    existing = probe.site.out / "existing.txt"
    assert existing.read_text() == "intact" and stat.S_IMODE(existing.stat().st_mode) == 0o644
    assert probe.site.leftovers() == []
    with contextlib.closing(sqlite3.connect(probe.site.home / "state.db")) as db:
        assert db.execute("select value from secrets").fetchall() == [(SECRET,)]


@confinable
def test_the_scratch_folder_is_writable_and_capped(probe: Probe) -> None:
    assert all(v.startswith("GOT: ") for v in probe.group("scratch").values()), probe.group("scratch")
    capped = probe.group("capped")
    assert capped["300 MiB in files of 32 MiB"].startswith("refused: OSError: [Errno 28] No space"), capped
    assert capped["one file of 100 MiB"].startswith("refused: OSError: [Errno 27] File too large"), capped
    for value in capped.values():
        assert int(value.split(" after ")[1].split()[0]) <= 256


@confinable
def test_no_network_reaches_the_platform(probe: Probe) -> None:
    assert_refused(probe.group("network"), NETWORK)
    assert probe.reached == {"tcp": False, "unix": False, "abstract": False}


@confinable
def test_no_process_is_started_and_none_is_left(probe: Probe) -> None:
    assert_refused(probe.group("process"), PROCESSES)
    assert probe.left_running == []


@confinable
def test_no_signal_reaches_the_platform(probe: Probe) -> None:
    assert_refused(probe.group("signal"), SIGNALS)
    os.kill(os.getpid(), 0)  # this process is alive, and the job reported normally
    assert gates(probe.outcome)["cases_pass"]["passed"]


# 4. The result channel abused, and the platform's own limits -----------------------------------------

CHANNEL = """\
from qiskit import QuantumCircuit, qpy
import base64, io


def circuit():
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    return qc


def answer():
    # the platform's answer, read from standard input by the method itself
    line = b""
    while not line.endswith(b"\\n"):
        line += os.read(0, 1)
    return json.loads(line)


def qpy_text(circuits):
    buffer = io.BytesIO()
    qpy.dump(circuits, buffer)
    return base64.b64encode(buffer.getvalue()).decode()


def quantum(input, params, ctx):
    attack = input["x"]
    if attack == 1:
        send(b"{}\\n" * (40 * 2**20 // 3))
    elif attack == 2:
        send(b"[" * (40 * 2**20))
    elif attack == 3:
        send({"event": "sample", "circuits": 5})
    elif attack == 4:
        send({"event": "returned", "objective": "lots", "details": []})
    elif attack == 5:
        send(b"\\xff\\xfe not JSON\\n")
    elif attack == 6:  # circuits that are not QPY, and a billion shots, then a batch as it should be
        send({"event": "sample", "circuits": "AAAA", "shots": 10})
        not_qpy = answer()
        send({"event": "sample", "circuits": qpy_text([circuit()]), "shots": 10**9})
        too_many = answer()
        ctx.sample([circuit()], 10)
        return MethodResult(-1.0, solution={"x": 1}, details={"not QPY": not_qpy, "shots": too_many})
    import time
    time.sleep(30)  # what the platform does is the test, not what this process does next
"""

BROKEN = {
    "flood of {} lines": "it sent a line that is not an event: b'{}'",
    "40 MiB line": "it sent a line longer than 24 MiB",
    "malformed sample": "it sent a sample request that is not {circuits, shots}",
    "invalid returned": "it sent an invalid 'returned': objective: ",
    "not JSON": "it sent a line that is not JSON",
}


def test_the_result_channel_abused_ends_that_process_and_the_platform_goes_on(wf: WorkflowDir) -> None:
    names = [*BROKEN, "refused batches"]
    with PeakMemory() as memory:
        outcome = hostile_job(wf, CHANNEL, [{"name": n, "input": {"x": i}} for i, n in enumerate(names, 1)])
    judged, cases = gates(outcome), cases_of(outcome)
    for name, said in BROKEN.items():
        message = cases[name]["message"]
        assert message.startswith("FAIL the workflow process broke the protocol: " + said), (name, message)
    assert f"{len(BROKEN)} of {len(names)} cases fail" in judged["cases_pass"]["message"]
    refused = cases["refused batches"]
    assert refused["passed"] and refused["circuits"] == 1 and refused["shots"] == 10, refused
    details = refused["methods"][0]["details"]
    assert details["not QPY"]["op"] == "refused" and "CircuitsInvalid" in details["not QPY"]["error"]
    assert details["shots"]["op"] == "refused" and "shots must be an integer" in details["shots"]["error"]
    assert memory.grew_mb < 200, f"the platform's memory grew by {memory.grew_mb:.0f} MiB"


DEEP = b'{"event": "loaded", "error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"


@pytest.mark.parametrize("when", ["at import", "in a method"])
def test_a_deeply_nested_line_breaks_the_protocol(wf: WorkflowDir, when: str) -> None:
    deep = f"send({DEEP!r})"
    body = (deep + "\n\n\n" if when == "at import" else "") + (
        f"def quantum(input, params, ctx):\n    {deep}\n    import time\n    time.sleep(30)\n"
    )
    message = cases_of(hostile_job(wf, body, one_case()))["one"]["message"]
    assert message.startswith("FAIL the workflow process broke the protocol"), message


STUFFED = """\
def quantum(input, params, ctx):
    # sample requests the platform answers, and not one answer read: the pipe to this process fills
    send(*[{"event": "sample", "circuits": "AAAA", "shots": 1}] * 5000)
    import time
    time.sleep(3600)
"""


def test_a_process_that_reads_no_answer_is_stopped_at_the_time_limit(
    wf: WorkflowDir, started: type[Recorded]
) -> None:
    limits, slack = Limits(timeout_s=3, memory_mb=2048), 6
    done: dict[str, Outcome] = {}
    job = threading.Thread(target=lambda: done.update(outcome=hostile_job(wf, STUFFED, one_case(), limits)))
    job.start()
    job.join(limits.timeout_s + slack)
    hung = job.is_alive()
    while job.is_alive():  # unblock the platform: end the workflow processes it started
        kill(started.pids())
        job.join(1)
    assert not hung, f"run_job still ran {limits.timeout_s + slack} s into a job of {limits.timeout_s} s"
    assert done["outcome"].died == (
        f"the sandbox job was stopped at its time limit of {limits.timeout_s} s in case one, in method "
        "quantum; 0 of 1 cases finished"
    )


BIG = """\
from qiskit import QuantumCircuit


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    # empty lists: the JSON that costs the platform most Python objects for its bytes (2 values each)
    return MethodResult(-1.0, solution={"x": 1}, details={"lists": [[] for _ in range(input["x"])]})
"""


def test_the_largest_return_a_line_may_hold_costs_the_platform_bounded_memory(wf: WorkflowDir) -> None:
    most = MAX_VALUES // 2  # lists a line may hold
    cases = [
        {"name": "under", "input": {"x": most - 10_000}},
        {"name": "over", "input": {"x": most + 10_000}},
    ]
    with PeakMemory() as memory:
        outcome = hostile_job(wf, BIG, cases)
    under, over = cases_of(outcome)["under"], cases_of(outcome)["over"]
    assert under["passed"] and len(under["methods"][0]["details"]["lists"]) == most - 10_000
    said = f"it sent a line of more than {MAX_VALUES:,} values"
    assert over["message"] == (
        f"FAIL the workflow process broke the protocol: {said} in case over, in method quantum"
    ), over["message"]
    assert memory.grew_mb < 200, f"the platform's memory grew by {memory.grew_mb:.0f} MiB"


LOOP = "def quantum(input, params, ctx):\n    while True:\n        pass\n"


def test_an_infinite_loop_is_stopped_at_the_time_limit(wf: WorkflowDir, started: type[Recorded]) -> None:
    outcome = hostile_job(wf, LOOP, one_case(), Limits(timeout_s=5, memory_mb=2048))
    assert outcome.died == (
        "the sandbox job was stopped at its time limit of 5 s in case one, in method quantum; 0 of 1 cases "
        "finished"
    )
    assert outcome.report["cases"] == [] and outcome.seconds < 15
    assert running(started.pids()) == []


COSTLY = """\
from qiskit import QuantumCircuit


def quantum(input, params, ctx):
    # one batch that costs the platform seconds: a state vector of 26 qubits (1 GiB), 416 gates (about
    # 12 s here: far past the limit however fast the job started)
    qc = QuantumCircuit(26)
    for _ in range(8):
        for q in range(26):
            qc.t(q)
            qc.h(q)
    qc.measure_all()
    ctx.sample([qc], 1)
    return MethodResult(-1.0, solution={"x": 1})
"""


def test_a_costly_batch_is_stopped_at_the_time_limit(wf: WorkflowDir) -> None:
    """The platform simulates in a worker it kills at the job's deadline (issue 22)."""
    limits = Limits(timeout_s=4, memory_mb=2048)
    outcome = hostile_job(wf, COSTLY, one_case(), limits)
    assert outcome.died.startswith("the sandbox job was stopped at its time limit of 4 s")
    assert outcome.seconds < limits.timeout_s + 1, f"the job of a 4 s limit ran {outcome.seconds:.1f} s"


#: a batch whose custom gate's definition, nested in the QPY, claims 2^32-16 qubits: the top-level
#: header is honest, so only a walk of every nested header finds it (740 bytes, 5 GB when decoded)
QPY_BOMB = """\
import io, struct
from qiskit import QuantumCircuit, qpy
from qiskit.qpy import formats
from qsolve.sandbox import circuits


def bomb(batch):
    inner = QuantumCircuit(2)
    inner.h(0)
    inner.cx(0, 1)
    gate = inner.to_gate()
    gate.name = "boom"
    qc = QuantumCircuit(2)
    qc.append(gate, [0, 1])
    qc.measure_all()
    buffer = io.BytesIO()
    qpy.dump([qc], buffer)
    data = bytearray(buffer.getvalue())
    at = data.find(b"boom_0") + len(b"boom_0")  # the definition's own circuit header follows its name
    struct.pack_into("!I", data, at + 5, 2**32 - 16)  # its num_qubits
    import base64
    return base64.b64encode(bytes(data)).decode()


def quantum(input, params, ctx):
    circuits.encode = bomb  # what the workflow process sends is its own to choose
    qc = QuantumCircuit(1)
    qc.measure_all()
    try:
        ctx.sample([qc], 1)
    except Exception as e:
        return MethodResult(-1.0, solution={"x": 1}, details={"refused": str(e)})
    return MethodResult(-1.0, solution={"x": 1}, details={"refused": None})
"""


def test_a_nested_header_qpy_bomb_is_refused_before_anything_is_built(wf: WorkflowDir) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    limits = Limits(timeout_s=30, memory_mb=1024)
    outcome = hostile_job(wf, QPY_BOMB, one_case(), limits)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    refused = cases_of(outcome)["one"]["methods"][0]["details"]["refused"]
    assert refused is not None and "declares 4294967280 qubits (at most 1024)" in refused, refused
    assert "custom gate 0's definition" in refused
    assert outcome.seconds < limits.timeout_s
    assert grown_mb < limits.memory_mb, f"the platform grew {grown_mb:.0f} MB"


A_STRING = """\
def quantum(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1, "s": "a" * 34 + "!"})
"""


def test_a_costly_output_schema_fails_the_case_by_the_deadline(wf: WorkflowDir) -> None:
    """A backtracking pattern took Python's re hours; patterns are RE2's now, but a schema can cost
    2^30 validations without one: the platform validates in a worker it stops (issue 22)."""
    from tests.qsolve.runtime.test_worker import costly_schema

    wf.write("schemas/output.json", costly_schema(key="s"))
    limits = Limits(timeout_s=60, memory_mb=2048)
    outcome = hostile_job(wf, A_STRING, one_case(), limits)
    assert outcome.seconds < limits.timeout_s
    case = cases_of(outcome)["one"]
    assert case["passed"] is False and case["message"].startswith("no headline metric"), case
    why = case["methods"][0]["unavailable"]
    assert why.startswith("failed: SolutionInvalid: the platform stopped validating the solution against "
                          "the output schema after 10 s"), why


PLATFORM = """\
import sys, threading, time
from pathlib import Path
from qsolve.workflow.manifest import Resources
from qsolve.validation.jobs import run_job
from tests.qsolve.sandbox.test_hostile import FAST, recording


def say(processes):
    while not any(p.inner for p in processes.started):
        time.sleep(0.05)
    time.sleep(0.5)
    print(*processes.pids(), flush=True)
    print(*[p.tmp for p in processes.started], flush=True)  # what a killed platform leaves behind


with recording() as processes:
    threading.Thread(target=say, args=(processes,), daemon=True).start()
    run_job(Path(sys.argv[1]), "sim-cpu", None, Resources(), limits=FAST)
"""


def test_no_workflow_process_outlives_a_platform_killed_mid_job(wf: WorkflowDir) -> None:
    wf.write("workflow.py", HEAD + LOOP)
    wf.cases["cases"] = one_case()
    wf.save()
    server = subprocess.Popen(
        [sys.executable, "-c", PLATFORM, str(wf.root)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    pids: set[int] = set()
    folders: list[str] = []
    try:
        assert select.select([server.stdout], [], [], 60)[0], "the platform never started its job"
        pids = {int(pid) for pid in server.stdout.readline().split()}
        folders = server.stdout.readline().split()
        assert len(pids) >= 2  # the platform's child, and the process of its own PID namespace
        server.kill()  # the platform itself, mid-job
        server.wait()
        assert running(pids) == []
    finally:
        server.kill()
        server.wait()
        kill(running(pids, 0))
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _special(kind: str, path: Path) -> None:
    if kind == "symlink to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif os.geteuid() == 0:  # a device node of its own, with /dev/zero's numbers
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    else:
        pytest.skip("only root makes device nodes")


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "device node"])
def test_a_special_file_in_the_workflow_folder_is_refused_by_name(wf: WorkflowDir, kind: str) -> None:
    _special(kind, wf.path("examples/huge.json"))
    outcome = hostile_job(wf, "def quantum(input, params, ctx):\n    pass\n", one_case())
    assert outcome.report is None and outcome.seconds < 10
    assert "examples/huge.json" in outcome.died, outcome.died
    assert "cannot be published" in outcome.died or "not a regular file" in outcome.died


# 5. Reproducibility faked ------------------------------------------------------------------------------

COUNTER = """\
from qiskit import QuantumCircuit

CALLS = []


def quantum(input, params, ctx):
    CALLS.append(1)  # the first call in this process: 1
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details={"call": len(CALLS), "cached": CACHED()})
"""


@pytest.mark.parametrize(
    ("cached", "reproducible"),
    [
        # a module-level counter starts again in the fresh process: the same result, as it should be
        ("lambda: None", True),
        # random bytes cached in the module on the first call: the same process would give them again,
        # the fresh one gives others, and the gate sees it
        ("lambda CACHE=[]: (CACHE or CACHE.append(os.urandom(8).hex()) or CACHE)[0]", False),
    ],
    ids=["module counter", "cached urandom"],
)
def test_the_rerun_is_in_a_fresh_process(wf: WorkflowDir, cached: str, reproducible: bool) -> None:
    outcome = hostile_job(wf, f"CACHED = {cached}\n" + COUNTER, one_case(expect={"max_gap": 0.0}))
    judged = gates(outcome)
    assert judged["cases_pass"]["passed"], judged["cases_pass"]
    assert cases_of(outcome)["one"]["methods"][0]["details"]["call"] == 1
    assert judged["reproducible"]["passed"] is reproducible, judged["reproducible"]
    if not reproducible:
        assert "details.cached" in judged["reproducible"]["message"]


def test_a_number_json_cannot_hold_is_a_broken_protocol(wf: WorkflowDir) -> None:
    """Python's json.loads takes NaN and Infinity; the platform does not (its result hash could not)."""
    body = (
        "def quantum(input, params, ctx):\n"
        "    send({'event': 'returned', 'objective': -1.0, 'details': {'x': float('nan')}})\n"
        "    import time\n    time.sleep(30)\n"
    )
    outcome = hostile_job(wf, body, one_case())
    message = cases_of(outcome)["one"]["message"]
    assert message.startswith("FAIL the workflow process broke the protocol: it sent a line that is not JSON")


# 6. A channel between workflow processes ---------------------------------------------------------------

LOCK_CHANNEL = """\
import random, struct
from qiskit import QuantumCircuit

BITS = 24
HELD = []  # the open file the locks belong to: they last while it is open


def lock(fd, command, kind, start):
    return fcntl.fcntl(fd, command, struct.pack("hhqqi", kind, 0, start, 1, 0))


def read_back():
    # the value a process before this one published: bit i is a lock on byte 1000 + i of numpy's file
    fd = numpy_fd()
    bits = [struct.unpack("hhqqi", lock(fd, 36, fcntl.F_WRLCK, 1000 + i))[0] != fcntl.F_UNLCK
            for i in range(BITS + 1)]
    return sum(1 << i for i in range(BITS) if bits[i]) if bits[BITS] else None


def publish(value):
    fd = numpy_fd()
    HELD.append(fd)
    for i in range(BITS + 1):
        if i == BITS or value >> i & 1:
            lock(fd, 37, fcntl.F_RDLCK, 1000 + i)


def numpy_fd():
    import numpy
    return os.open(numpy.__file__, os.O_RDONLY)


def quantum(input, params, ctx):
    said = {}
    try:
        value = read_back()
        said["read"] = "nothing there" if value is None else "read back"
    except OSError as e:
        value, said["read"] = None, f"refused: {e}"
    if value is None:
        value = random.SystemRandom().randrange(1, 1 << BITS)
        try:
            publish(value)
            said["publish"] = "published"
        except OSError as e:
            said["publish"] = f"refused: {e}"
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details={"random": value, **said})
"""


@confinable
def test_a_random_method_cannot_pass_its_value_to_the_rerun_by_file_locks(wf: WorkflowDir) -> None:
    outcome = hostile_job(wf, LOCK_CHANNEL, one_case(expect={"max_gap": 0.0}))
    judged = gates(outcome)
    assert judged["cases_pass"]["passed"], judged["cases_pass"]
    details = cases_of(outcome)["one"]["methods"][0]["details"]
    assert details["read"].startswith("refused: [Errno 1] Operation not permitted"), details
    assert details["publish"].startswith("refused: [Errno 1] Operation not permitted"), details
    assert not judged["reproducible"]["passed"], judged["reproducible"]
    assert "details.random" in judged["reproducible"]["message"]


class Ordered(Recorded):
    """A workflow process that notes, when it is given its job, which processes before it still run."""

    overlaps: list[list[int]] = []

    def send(self, message: dict[str, Any]) -> None:
        if "module" in message:  # the job: from here on, the workflow's code runs in this process
            earlier = Recorded.started[: Recorded.started.index(self)]
            pids = {pid for p in earlier for pid in (p.proc.pid, p.inner) if pid}
            Ordered.overlaps.append(running(pids, wait_s=0))
        super().send(message)


def test_the_rerun_gets_its_job_only_after_the_first_process_exited(wf: WorkflowDir) -> None:
    Ordered.overlaps = []
    with recording() as processes, pytest.MonkeyPatch.context() as mp:
        mp.setattr(jobs, "JobProcess", Ordered)
        cases = [{"name": n, "input": {"x": 1}, "expect": {"max_gap": 0.0}} for n in ("one", "two", "three")]
        outcome = hostile_job(wf, COUNTER.replace("CACHED()", "None"), cases)
    judged = gates(outcome)
    assert judged["reproducible"]["passed"], judged["reproducible"]
    assert len(processes.started) == 2 and len(Ordered.overlaps) == 2, Ordered.overlaps
    assert Ordered.overlaps == [[], []], "a workflow process got its job while an earlier one still ran"


# 7. Channels the first review missed (issue 22, item 3, tried again) ---------------------------------

SLOW = Limits(timeout_s=240, memory_mb=2048)  # waits of up to 20 s (the case; none in its re-run), busy
FUTEX = """\
import threading, time
from qiskit import QuantumCircuit

FUTEX_WAIT, FUTEX_WAKE, FUTEX_PRIVATE = 0, 1, 128
FUTEX = {"x86_64": 202, "aarch64": 98}[os.uname().machine]


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def shared_word():
    # a word of numpy's __init__.py, mapped private and read only: a futex there that is not private is
    # keyed by the file, the same in every workflow process that maps it (other jobs' included)
    import numpy
    LIBC.mmap.restype = ctypes.c_void_p
    LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    addr = LIBC.mmap(None, 4096, 1, 2, os.open(numpy.__file__, os.O_RDONLY), 0)
    return addr, ctypes.c_uint32.from_address(addr).value


def futex(addr, op, value, seconds=None):
    timeout = ctypes.byref(Timespec(seconds, 0)) if seconds else None
    return checked(LIBC.syscall(ctypes.c_long(FUTEX), ctypes.c_void_p(addr), ctypes.c_int(op),
                                ctypes.c_uint(value), timeout, None, ctypes.c_int(0)))


def wake_shared():  # how many waiters of other processes it woke: the bits another process sent
    return f"woke {futex(shared_word()[0], FUTEX_WAKE, 1 << 20)}"


def wait_shared(until):  # until a time of the test's (time.time()): past it (a re-run), no wait
    addr, value = shared_word()
    start = time.time()
    if until - start < 1:
        return "not waited: past the test's time"
    try:
        futex(addr, FUTEX_WAIT, value, int(until - start))
        return f"GOT: woken after {time.time() - start:.1f} s"
    except OSError as e:
        return f"refused: {e}"


STACKS = []
#: a thread (VM FS FILES SIGHAND THREAD SYSVSEM) whose clear-child-tid word the kernel wakes at its exit
CLONE = 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000 | 0x200000
SYS_EXIT = {"x86_64": 60, "aarch64": 93}[os.uname().machine]


def thread_exits_waking(addr):
    # the thread runs syscall(SYS_exit): at its exit the kernel wakes, as a shared futex, the word it
    # was given as its child tid, here the page of numpy's file
    stack = ctypes.create_string_buffer(1 << 16)
    STACKS.append(stack)
    LIBC.clone.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int] + [ctypes.c_void_p] * 4
    top = ctypes.addressof(stack) + (1 << 16) - 64
    run = ctypes.cast(LIBC.syscall, ctypes.c_void_p)
    return checked(LIBC.clone(run, top, CLONE, SYS_EXIT, None, None, addr))


def wake_by_thread_exits(until):  # until a time of the test's (time.time())
    addr, _ = shared_word()
    n = 0
    while time.time() < until:
        try:
            thread_exits_waking(addr)
        except OSError as e:
            return f"refused: {e}"
        n += 1
        time.sleep(0.02)
    return f"{n} threads exited"


def private_wake():  # its own futex, as every lock between its threads uses: this must work
    word = ctypes.c_uint32(0)
    return f"woke {futex(ctypes.addressof(word), FUTEX_WAKE | FUTEX_PRIVATE, 1)}"


def attempt(fn):
    try:
        return f"GOT: {fn()}"
    except OSError as e:
        return f"refused: {e}"


def quantum(input, params, ctx):
    role = input["x"]
    if role == 1:
        details = {
            "shared wake": attempt(wake_shared),
            "set_tid_address": attempt(lambda: sys_call(218 if FUTEX == 202 else 96, shared_word()[0])),
            "private wake": attempt(private_wake),
        }
    elif role == 2:
        details = {"wait": wait_shared(UNTIL)}
    else:
        details = {"wake": wake_by_thread_exits(UNTIL)}
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details=details)
"""


@confinable
def test_no_shared_futex_wake_reaches_another_workflow_process(wf: WorkflowDir) -> None:
    """A FUTEX_WAKE that is not private, on a page of a file every workflow process maps, woke (and
    counted) the waiters of a workflow process of another job: a channel between them."""
    outcome = hostile_job(wf, "UNTIL = 0\n" + FUTEX, one_case(1))
    details = cases_of(outcome)["one"]["methods"][0]["details"]
    assert details["shared wake"] == "refused: [Errno 1] Operation not permitted", details
    assert details["set_tid_address"] == "refused: [Errno 1] Operation not permitted", details
    assert details["private wake"] == "GOT: woke 0", details  # what its own threads need still works


@confinable
@pytest.mark.xfail(
    strict=True,
    reason="finding: a thread made by clone() with CLONE_CHILD_CLEARTID on a word of a shared file's page "
    "wakes, when it exits, another workflow process's shared FUTEX_WAIT there (the kernel's own wake; "
    "seccomp cannot read the pointer, and pthread_join needs shared waits): a one-way channel between "
    "workflow processes running at once. The kernel keys such a futex by the file's inode and offset, "
    "and a bind, overlay or idmapped mount, or a mount namespace, keeps the inode; what would close it "
    "is a private copy per workflow process of every file it may map (the runtime and the packages: "
    "about 2.3 GB here, 1.3 GB of site-packages and 0.96 GB of Python's lib) or a kernel that keys "
    "CLEARTID wakes per process",
)
def test_no_thread_exit_wakes_another_workflow_processs_futex(tmp_path: Path) -> None:
    outcomes: dict[int, Outcome] = {}
    # both first runs wait and wake until 20 s from now, however late each started; their re-runs, past
    # it, take no time
    body = f"UNTIL = {time.time() + 20!r}\n" + FUTEX

    def run(role: int) -> None:
        wf = WorkflowDir(tmp_path / f"role-{role}")
        outcomes[role] = hostile_job(wf, body, one_case(role), SLOW)

    threads = [threading.Thread(target=run, args=(role,)) for role in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    waiter = cases_of(outcomes[2])["one"]["methods"][0]["details"]["wait"]
    sender = cases_of(outcomes[3])["one"]["methods"][0]["details"]["wake"]
    assert not waiter.startswith("GOT"), (waiter, sender)


RANDOM_IN_SECONDS = """\
import random
from qiskit import QuantumCircuit


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    value = random.SystemRandom().random()  # what the method chose at random, under a name of the platform's
    return MethodResult(-1.0, solution={"x": 1, "seconds": value}, details={"seconds": value})
"""


def test_a_random_value_named_seconds_in_what_a_method_returns_fails_reproducible(wf: WorkflowDir) -> None:
    """The platform's times (a method's ``seconds``) are left out of the comparison; a key of that name in
    the workflow's own solution or details was too, at any depth, so a random method passed."""
    outcome = hostile_job(wf, RANDOM_IN_SECONDS, one_case(expect={"max_gap": 0.0}))
    judged = gates(outcome)
    assert judged["cases_pass"]["passed"], judged["cases_pass"]
    assert not judged["reproducible"]["passed"], judged["reproducible"]
    assert ".seconds" in judged["reproducible"]["message"], judged["reproducible"]


CGROUP = """\
from qiskit import QuantumCircuit


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details={"cgroup": open("/proc/self/cgroup").read()})
"""


@confinable
def test_the_hosts_cgroup_paths_are_not_there_to_read(wf: WorkflowDir) -> None:
    """``/proc/self/cgroup`` named the host's cgroups the platform runs in (``memory:/<service>/<id>``)."""
    outcome = hostile_job(wf, CGROUP, one_case())
    lines = cases_of(outcome)["one"]["methods"][0]["details"]["cgroup"].splitlines()
    assert lines and all(line.rsplit(":", 1)[1] == "/" for line in lines), lines


PAGE_CACHE = """\
import glob, random, time
from qiskit import QuantumCircuit

BITS = 8
SAID = {}


def files():  # files every workflow process may read and none imports: numpy's own tests
    import numpy
    tests = os.path.join(os.path.dirname(numpy.__file__), "_core", "tests", "test_*.py")
    return sorted(glob.glob(tests))[: BITS + 1]


def cached_nowait(path):  # preadv2(RWF_NOWAIT) fails unless the page is in the page cache
    fd = os.open(path, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def cached_by_time(path):  # from the disk: 60 us to ms; from the page cache: 1 to 6 us
    fd = os.open(path, os.O_RDONLY)
    try:
        start = time.perf_counter()
        os.pread(fd, 1, 0)
        return time.perf_counter() - start < 2e-5
    finally:
        os.close(fd)


def quantum(input, params, ctx):
    marker, *bits = files()
    try:
        if CACHED(marker):  # a process before this one left the marker in the page cache: its value
            value, SAID["how"] = sum(1 << i for i, f in enumerate(bits) if CACHED(f)), "read back"
        else:
            value, SAID["how"] = random.SystemRandom().randrange(1, 1 << BITS), "published"
            for i, f in enumerate(bits):
                if value >> i & 1:
                    with open(f, "rb") as fh:
                        fh.read(1)
    except OSError as e:
        value, SAID["how"] = random.SystemRandom().randrange(1, 1 << BITS), f"refused: {e}"
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details={"random": value, **DETAILS})
"""


def _cold_numpy_tests() -> None:
    """What an attacker finds on a machine: files no process has read for a while, out of the page cache
    (here made so: their pages dropped, as memory pressure drops them)."""
    import numpy

    tests = Path(numpy.__file__).parent / "_core" / "tests"
    names = sorted(tests.glob("test_*.py"))[:9]
    assert len(names) == 9
    for name in names:
        fd = os.open(name, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@confinable
def test_a_random_method_cannot_pass_its_value_to_the_rerun_by_rwf_nowait(wf: WorkflowDir) -> None:
    """preadv2(RWF_NOWAIT) says, without timing, which pages of a file are in the page cache; the pages
    a first process read stay there after it exited, and told the re-run its random value."""
    _cold_numpy_tests()
    body = PAGE_CACHE + "CACHED = cached_nowait\nDETAILS = SAID\n"
    outcome = hostile_job(wf, body, one_case(expect={"max_gap": 0.0}))
    judged = gates(outcome)
    details = cases_of(outcome)["one"]["methods"][0]["details"]
    assert details["how"] == "refused: [Errno 1] Operation not permitted", details
    assert not judged["reproducible"]["passed"], judged["reproducible"]
    assert "details.random" in judged["reproducible"]["message"]


@confinable
def test_a_random_method_cannot_pass_its_value_to_the_rerun_by_page_cache_timing(wf: WorkflowDir) -> None:
    """The page cache outlived the first process: the re-run timed a one-byte read of files none imports
    (60 us to ms from the disk, 1 to 6 us from the cache) and read back the random value the first
    process published by reading some of them, so reproducible passed for a random method. What the
    first process put in the page cache (charged to its memory cgroup) is dropped when it has exited,
    before the re-run starts."""
    _cold_numpy_tests()
    outcome = hostile_job(wf, PAGE_CACHE + "CACHED = cached_by_time\nDETAILS = {}\n", one_case(expect={}))
    judged = gates(outcome)
    assert judged["cases_pass"]["passed"], judged["cases_pass"]
    assert not judged["reproducible"]["passed"], judged["reproducible"]


@pytest.mark.parametrize("home", ["/usr/local/share/qsolve", "/lib/qsolve"])
def test_a_platform_home_in_a_system_folder_is_never_readable(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow process reads past file modes (it keeps CAP_DAC_READ_SEARCH) wherever Landlock lets
    it: a home inside ``/usr`` or ``/lib``, which every workflow process reads, gave it the keys."""
    from types import SimpleNamespace

    from qsolve.sandbox import remote

    monkeypatch.setenv("QSOLVE_HOME", home)
    process = SimpleNamespace(workflow=tmp_path / "workflow", tmp=tmp_path)
    holding = [p for p in remote.readable(process) if Path(home).resolve().is_relative_to(Path(p).resolve())]
    assert holding == [], holding


MEMFD = """\
from qiskit import QuantumCircuit

HELD = []


def fill_memfds(total_mb):  # memory files, never mapped: what they hold counts in no address space
    block, done = bytes(1 << 20), 0
    while done < total_mb:
        HELD.append(os.memfd_create("held"))
        for _ in range(min(64, total_mb - done)):  # 64 MiB, the cap on one file's size
            os.write(HELD[-1], block)
            done += 1
    return done


def quantum(input, params, ctx):
    try:
        said = f"GOT: {fill_memfds(768)} MiB held"
    except OSError as e:
        said = f"refused: {e}"
    finally:
        for fd in HELD:
            os.close(fd)
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details={"memfd": said})
"""


@confinable
def test_memory_files_count_in_the_jobs_memory_limit(wf: WorkflowDir) -> None:
    """memory_mb was an address-space cap only: memory files (memfd_create, on the allowlist) hold what
    is written to them unmapped, 64 MiB each by the file-size cap, up to the 256 open files: 16 GiB
    beyond the limit (a job of 256 MB held 1 GiB). Each workflow process has a memory cgroup of its
    own now: the kernel ends it past its limit, and the case fails saying so."""
    outcome = hostile_job(wf, MEMFD, one_case(), Limits(timeout_s=120, memory_mb=256))
    case = cases_of(outcome)["one"]
    assert not case["passed"] and case["methods"] == [], case
    assert "killed by SIGKILL (over its memory limit of 256 MB" in case["message"], case["message"]
    assert "memory" in outcome.protections.cgroups, outcome.protections
THREADS = """\
import threading, time
from qiskit import QuantumCircuit

threading.stack_size(1 << 18)


def make(n, stop):  # how many threads it could start, up to n, each waiting for stop
    made = 0
    for _ in range(n):
        try:
            threading.Thread(target=stop.wait, daemon=True).start()
        except RuntimeError:  # can't start new thread: the uid's RLIMIT_NPROC
            break
        made += 1
    return made


def quantum(input, params, ctx):
    # both until UNTIL, a time of the test's: the first runs overlap however late each started, and the
    # re-runs (past it) take no time
    if input["x"] == 1:  # the sender: 300 threads, held until UNTIL
        stop = threading.Event()
        said = [make(300, stop)]
        held = [time.time()]
        time.sleep(max(0.0, UNTIL - time.time()))
        held.append(time.time())
        stop.set()
    else:  # the receiver: how many threads it can start, every 2 s until UNTIL (once at least)
        said, held = [], []
        while True:
            stop = threading.Event()
            began = time.time()
            said.append(make(600, stop))
            held.append([began, time.time()])
            stop.set()
            if time.time() >= UNTIL:
                break
            time.sleep(2)
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1}, details={"threads": said, "times": held})
"""


@confinable
def test_no_workflow_process_sees_or_takes_another_jobs_threads(tmp_path: Path) -> None:
    """Every workflow process runs as uid 65534, and RLIMIT_NPROC (512) counted the uid's threads
    machine-wide: a workflow process saw how many threads other jobs held (509 alone, 208 while
    another held 300), a channel, and one holding them all left other jobs none to start. Each
    process's threads are counted by a pids cgroup of its own now (pids.max 512)."""
    outcomes: dict[int, Outcome] = {}
    body = f"UNTIL = {time.time() + 20!r}\n" + THREADS  # 20 s for both first runs to start and overlap

    def run(role: int) -> None:
        outcomes[role] = hostile_job(WorkflowDir(tmp_path / f"role-{role}"), body, one_case(role), SLOW)

    threads = [threading.Thread(target=run, args=(role,)) for role in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sender = cases_of(outcomes[1])["one"]["methods"][0]["details"]
    receiver = cases_of(outcomes[2])["one"]["methods"][0]["details"]
    held, could = sender["threads"], receiver["threads"]
    assert held == [300], held
    assert min(could) > 400, (held, could)  # alone it starts about 509 (512 less its own)
    start, end = sender["times"]
    times = receiver["times"]
    during = [n for n, (began, ended) in zip(could, times, strict=True) if start <= began <= ended <= end]
    assert during, (sender, receiver)  # tried while the sender held its 300, not only before or after


SLEEPER = """\
import time
from qiskit import QuantumCircuit


def quantum(input, params, ctx):
    time.sleep(SECONDS)  # once within the limit; the re-run, in the process started ahead, past it
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc], 10)
    return MethodResult(-1.0, solution={"x": 1})
"""


def test_a_process_started_ahead_is_stopped_naming_the_jobs_own_limit(wf: WorkflowDir) -> None:
    """The re-run's process, started ahead while the first ran, gave its own age as the job's limit:
    "stopped at its time limit of 17 s" for a job of 60 s. (The first run's 14 s leave it 10 s of the
    limit on a busy machine; the stop must be the re-run's, which the message names.)"""
    limits = Limits(timeout_s=24, memory_mb=2048)
    outcome = hostile_job(wf, "SECONDS = 14\n" + SLEEPER, one_case(), limits)
    said = json.dumps([outcome.died, outcome.report])
    assert "stopped at its time limit of" in said, said
    assert "stopped at its time limit of 24 s in case one (its second run, for reproducible)" in said, said
