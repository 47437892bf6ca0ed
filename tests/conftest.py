"""Shared fixtures: a small valid workflow folder, built fresh in a temporary directory per test."""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from qiskit import QuantumCircuit

#: any Prefect temporary server a test starts (a command in a process of its own, a flow outside the
#: harness) is given as long as a busy machine needs, not Prefect's 20 s (issue 23)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "600")
#: the temporary servers' kept database (flows/server.py's Template) in a folder of the session's, not in
#: the person's cache
if "QSOLVE_CACHE" not in os.environ:
    os.environ["QSOLVE_CACHE"] = tempfile.mkdtemp(prefix="qsolve-test-cache-")
    atexit.register(shutil.rmtree, os.environ["QSOLVE_CACHE"], ignore_errors=True)


#: the claims of jobs' memory (qsolve/runtime/admission.py) are the user's on the host, whatever its
#: QSOLVE_HOME: each test process (the controller, every xdist worker) has a folder of its own, so that no
#: test waits for the claims of a job another worker (or the person's own platform) runs, nor counts them;
#: each test a folder of its own in it (_own_claims); a process a test starts inherits the test's
_CLAIMS = tempfile.mkdtemp(prefix="qsolve-test-claims-")
atexit.register(shutil.rmtree, _CLAIMS, ignore_errors=True)
os.environ["QSOLVE_JOBS_MEMORY_DIR"] = os.path.join(_CLAIMS, "process")
_TESTS = itertools.count()


@pytest.fixture(autouse=True)
def _own_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's own folder of jobs' memory claims: what it claims, and what a small
    ``QSOLVE_JOBS_MEMORY_MB`` of its admits, is its own (and its processes') alone."""
    monkeypatch.setenv("QSOLVE_JOBS_MEMORY_DIR", os.path.join(_CLAIMS, f"test-{next(_TESTS)}"))


def _prefect_logging_on_the_sessions_stream() -> None:
    """Prefect builds its console log handler once a process, on ``ext://sys.stderr`` as it is at that
    moment, when it is first imported. In a worker whose first import of Prefect is inside a test using
    ``capsys`` or ``capfd`` (a ``qsolve confirm`` importing the flows), the handler kept that test's stream,
    closed once the test ended: every later flow test of the worker logged to a closed stream. Which
    worker that happened in followed how tests were shared out. Configured here, while this conftest
    loads, the handler holds pytest's session-long capture stream (Prefect's later setups only adjust it)."""
    from prefect.logging.configuration import ensure_logging_setup

    ensure_logging_setup()


_prefect_logging_on_the_sessions_stream()

#: Prefect counts only its own sleeps against this: on a loaded 2-core machine the harness's start took
#: 15 s idle and over 120 s at load 30 (issue 23)
HARNESS_STARTUP_S = int(os.environ.get("QSOLVE_TEST_HARNESS_STARTUP_S", "900"))

REPO = Path(__file__).resolve().parents[1]
VECTORS = Path(__file__).resolve().parent / "vectors"  # public test vectors, sources in its README


def pytest_configure(config: pytest.Config) -> None:
    """The project's modules compiled once, before any test starts a process: where the environment
    sets ``PYTHONDONTWRITEBYTECODE`` (as these machines do), every ``qsolve`` process a test starts
    compiled the modules it imports again, about 0.2 s of CPU a process over the suite's hundreds of
    processes. Python still reads bytecode it finds; the controller compiles, the xdist workers don't."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    for package in ("qsolve", "storage", "flows", "tasks", "deployments"):
        compileall.compile_dir(REPO / package, quiet=1, workers=1)


def pytest_unconfigure(config: pytest.Config) -> None:
    """A temporary Prefect server a test left (a flow run outside the harness) is stopped while pytest's
    capture is still open: at the interpreter's exit Prefect's log of its stop met a closed stream, a
    ``--- Logging error ---`` after pytest's summary (issue 23)."""
    from qsolve_pipeline.flows.server import stop_temporary_servers

    stop_temporary_servers()


MODULE = """\
from qsolve import MethodResult


def evaluate(input, solution):
    return -float(solution["x"])


def quantum(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1})


def reference(input, params, ctx):
    return MethodResult(-1.0, solution={"x": 1})
"""


SAMPLING_MODULE = """\
from qiskit import QuantumCircuit
from qsolve import MethodResult

CALLS = []


def evaluate(input, solution):
    return -float(solution["x"])


def reference(input, params, ctx):
    return MethodResult(-float(input["x"]), solution={"x": input["x"]})


def quantum(input, params, ctx):
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.measure_all()
    ctx.sample([qc, qc], params["shots"])
    return MethodResult(-float(input["x"]), solution={"x": input["x"]})
"""


def ghz(n: int) -> QuantumCircuit:
    """An n-qubit GHZ circuit, every qubit measured."""
    qc = QuantumCircuit(n)
    qc.h(0)
    for i in range(n - 1):
        qc.cx(i, i + 1)
    qc.measure_all()
    return qc


def base_manifest() -> dict[str, Any]:
    return {
        "name": "tiny",
        "version": "1.0.0",
        "title": "A tiny workflow",
        "input_schema": "schemas/input.json",
        "output_schema": "schemas/output.json",
        "params": {
            "type": "object",
            "properties": {"shots": {"type": "integer", "minimum": 1, "default": 100}},
            "additionalProperties": False,
        },
        "methods": [{"name": "quantum", "kind": "quantum"}, {"name": "reference", "kind": "classical"}],
        "metric": {"kind": "relative_gap", "tolerance": 0.0},
        "targets": {"qpu": ["ibm"]},
        "resources": {"timeout_s": 300, "memory_mb": 1024},
    }


def base_cases() -> dict[str, Any]:
    return {
        "cases": [
            {"name": "one", "input": {"x": 1}, "seed": 1, "expect": {"max_gap": 0.0}},
            {"name": "two", "input_file": "examples/a.json"},
        ],
        "hardware_cases": [
            {"name": "hw", "input_file": "examples/a.json", "target": "ibm:ibm_fez", "expect": {}},
        ],
    }


class WorkflowDir:
    """A workflow folder under construction; ``write`` takes text, or a dict/list written as YAML/JSON."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest = base_manifest()
        self.cases = base_cases()
        self.write(
            "schemas/input.json",
            {
                "type": "object",
                "properties": {"x": {"type": "integer", "minimum": 0}},
                "required": ["x"],
                "additionalProperties": False,
            },
        )
        self.write("schemas/output.json", {"type": "object", "properties": {"x": {"type": "integer"}}})
        self.write("workflow.py", MODULE)
        self.write("examples/a.json", {"x": 2})
        self.save()

    def path(self, rel: str) -> Path:
        return self.root / rel

    def write(self, rel: str, content: Any) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content)
        elif rel.endswith(".json"):
            path.write_text(json.dumps(content))
        else:
            path.write_text(yaml.safe_dump(content, sort_keys=False))
        return path

    def save(self) -> WorkflowDir:
        self.write("manifest.yaml", self.manifest)
        self.write("benchmarks/cases.yaml", self.cases)
        return self


@pytest.fixture
def wf(tmp_path: Path) -> WorkflowDir:
    return WorkflowDir(tmp_path / "tiny")


@pytest.fixture(scope="session")
def qsolve_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("qsolve-home")
    previous = os.environ.get("QSOLVE_HOME")
    os.environ["QSOLVE_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("QSOLVE_HOME", None)
    else:
        os.environ["QSOLVE_HOME"] = previous


@pytest.fixture(scope="session")
def prefect(qsolve_home: Path):
    """The harness's server, given as long to start as a busy machine needs; stopped at the end even when
    its start failed (Prefect's harness leaves a server that timed out running, and registered as the
    process's temporary server, for Prefect's atexit to stop after pytest's summary). Here, not in a folder's
    conftest: a module that imported it from there had a fixture of its own, so a second server in the same
    pytest worker."""
    import qiskit_aer  # noqa: F401 - first import in the main thread (FACTS.md)
    from prefect.testing.utilities import prefect_test_harness

    from qsolve_pipeline.flows.server import stop_temporary_servers

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    try:
        with prefect_test_harness(server_startup_timeout=HARNESS_STARTUP_S):
            yield
    finally:  # a harness whose start failed leaves its server registered as the process's temporary one
        stop_temporary_servers()


@pytest.fixture(scope="session")
def shared_worker(prefect, tmp_path_factory: pytest.TempPathFactory):
    """One pool and one ``qsolve worker`` on the session's server, for every test of the process-worker
    group whose flow runs need only a pool and a worker (its start costs 10 to 60 s on a busy machine):
    each such test deploys on it with a home of its own (``Platform.guest``, tests/flows/
    test_operator_worker.py)."""
    from tests.flows.test_operator_worker import shared_platform

    with shared_platform(tmp_path_factory.mktemp("shared")) as made:
        yield made


@pytest.fixture
def guest(shared_worker, tmp_path: Path):
    """A platform of the test's own (home, deployments) on the session's shared pool and worker; its
    deployments removed afterwards."""
    made_here = shared_worker[0].guest(tmp_path, "host-g")
    try:
        yield made_here
    finally:
        made_here.remove()
