"""qsolve's pipeline imports under its own name (issue 36, item 3): in a process whose ``sys.path`` starts
with a folder holding a ``storage.py``, ``tasks.py``, ``flows.py`` and ``deployments.py`` of someone
else's (as Prefect's ``prefect/runner/`` holds its own ``storage.py`` when a process worker runs a flow's
hooks, or a user's folder holds invoke's ``tasks.py``), the command line, every module of the pipeline and
the evaluation flow's cancellation hook load qsolve's modules, and none of those."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from qsolve.evaluation.runs import RunRequest, request_run
from qsolve_pipeline.storage.calibration import open_store
from tests.conftest import REPO
from tests.qsolve.calibration.calibration_runs import made

BARE = ("storage", "tasks", "flows", "deployments")

#: someone else's module of that name: says it was imported (to a log), then fails as a foreign module would
HOSTILE = """
import os
with open(os.environ["HOSTILE_LOG"], "a") as log:
    log.write(__name__ + "\\n")
raise ImportError("someone else's " + __name__ + ".py was imported")
"""

#: run as a script in the hostile folder, so that it is first on sys.path, as Prefect's hook script is
SCRIPT = """
import importlib, importlib.util, json, os, sys, uuid
from pathlib import Path

here = str(Path(__file__).resolve().parent)
out = {"first": sys.path[0], "shadowed": {}}
for name in ("storage", "tasks", "flows", "deployments"):
    spec = importlib.util.find_spec(name)
    out["shadowed"][name] = spec.origin if spec else None

from qsolve.cli import main
out["list"] = main(["evaluations", "list"])  # the command line, over the calibration store

repo = Path(os.environ["REPO"])
for package in ("flows", "tasks", "storage", "deployments"):
    for path in sorted((repo / package).glob("*.py")):
        if path.stem not in ("__init__", "__main__"):
            importlib.import_module(f"qsolve_pipeline.{package}.{path.stem}")

from prefect.client.schemas.objects import FlowRun
from prefect.states import Cancelling
from qsolve_pipeline.flows.evaluation import _cancel, evaluation_flow

run = FlowRun(id=uuid.uuid4(), flow_id=uuid.uuid4(), name="x", parameters={"run_id": sys.argv[1]})
_cancel(evaluation_flow, run, Cancelling())

bare = ("storage", "tasks", "flows", "deployments")
out["bare"] = sorted(m for m in sys.modules if m.split(".")[0] in bare)
out["files"] = {m: getattr(sys.modules[m], "__file__", None) for m in list(sys.modules)
                if m.startswith(("qsolve_pipeline.", "qsolve."))}
print(json.dumps(out))
"""


def test_the_pipeline_loads_its_own_modules_beside_someone_elses(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_store(home) as store:
        store.record_all([made("Q00")])
        run = request_run(store.db, store, RunRequest(task="CheckT1", chip="fake:fez"))
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    for name in BARE:
        (hostile / f"{name}.py").write_text(HOSTILE)
    (hostile / "run.py").write_text(SCRIPT)
    log = tmp_path / "hostile.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QSOLVE_", "PREFECT_API"))}
    env |= {
        "QSOLVE_HOME": str(home),
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
        "PYTHONPATH": str(REPO),
        "HOSTILE_LOG": str(log),
        "REPO": str(REPO),
    }
    done = subprocess.run(
        [sys.executable, str(hostile / "run.py"), run.id],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # the folder is first, and each bare name there is someone else's: this process would find them
    assert out["first"] == str(hostile)
    assert out["shadowed"] == {name: str(hostile / f"{name}.py") for name in BARE}
    # none of them was imported, and every module of qsolve's loaded is a file of this repository
    assert not log.exists(), log.read_text()
    assert out["bare"] == []
    assert out["list"] == 0
    files = {m: Path(f).resolve() for m, f in out["files"].items() if f}
    for package in BARE:
        modules = {m for m in files if m.startswith(f"qsolve_pipeline.{package}.")}
        assert {f"qsolve_pipeline.{package}.{p.stem}" for p in (REPO / package).glob("*.py")} - {
            f"qsolve_pipeline.{package}.__init__",
            f"qsolve_pipeline.{package}.__main__",
        } <= modules
        assert all(files[m].is_relative_to(REPO / package) for m in modules), package
    assert files["qsolve.cli"] == REPO / "qsolve" / "cli" / "__init__.py"
    # the hook ran: the evaluation run its flow run named is cancelled
    with open_store(home) as store:
        assert store.db.get_evaluation_run(run.id).status == "cancelled"
