"""prefect.yaml's deployments run from the installed package (issue 26, item 5): each entrypoint a module
path that imports, in a process started in a folder that is not the repository, as a Prefect flow; no
pull step, no path of this machine; qsolve's settings come from the work pool (deployments/pool.py),
merged with each deployment's own ``env``, not replaced by it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import yaml
from prefect.workers.process import ProcessJobConfiguration

from qsolve_pipeline.deployments.pool import SETTINGS, job_template, settings_from
from tests.conftest import REPO

DEFINITIONS = yaml.safe_load((REPO / "prefect.yaml").read_text())

IMPORT = """
import json, sys
from prefect import Flow
from prefect.utilities.importtools import import_object
names = {}
for entrypoint in json.loads(sys.argv[1]):
    flow = import_object(entrypoint)
    assert isinstance(flow, Flow), entrypoint
    names[entrypoint] = flow.name
print(json.dumps(names))
"""


def test_no_pull_step_and_no_path_of_this_machine() -> None:
    text = (REPO / "prefect.yaml").read_text()
    assert DEFINITIONS["pull"] == []  # nothing fetched, nothing changed into
    assert str(REPO) not in text and "QSOLVE_REPO" not in text and "set_working_directory" not in text
    for d in DEFINITIONS["deployments"]:
        entrypoint = d["entrypoint"]
        assert ".py" not in entrypoint and "/" not in entrypoint, entrypoint
        assert d["work_pool"]["name"] == "qsolve"
        env = d["work_pool"]["job_variables"]["env"]
        assert not set(env) & set(SETTINGS), d["name"]  # the pool's, for every deployment alike
        assert not any(str(v).startswith("/") for v in json.dumps(d.get("parameters", {})).split('"')), d[
            "name"
        ]


def test_each_entrypoint_imports_from_the_installed_package_elsewhere(tmp_path) -> None:
    entrypoints = [d["entrypoint"] for d in DEFINITIONS["deployments"]]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path / "prefect")}
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, json.dumps(entrypoints)],
        cwd=tmp_path,  # not the repository: sys.path holds no checkout, only the installed package
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = json.loads(done.stdout)
    by_deployment = {d["name"]: names[d["entrypoint"]] for d in DEFINITIONS["deployments"]}
    assert by_deployment == {
        "submission": "submission",
        "history": "history",
        "quote": "quote",
        "hardware": "hardware",
        "evaluation": "evaluation",
        "calibration": "calibration",
        "maintenance": "maintenance",
    }
    assert list(by_deployment) == [d["name"] for d in DEFINITIONS["deployments"]]


def test_the_pool_carries_the_settings_and_a_deployment_env_is_laid_over_them(monkeypatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QSOLVE_STORAGE_URL", "s3://bucket/qsolve")
    settings = settings_from({"QSOLVE_HOME": "/srv/qsolve", "QSOLVE_DATABASE_URL": None})
    assert settings == {"QSOLVE_HOME": "/srv/qsolve", "QSOLVE_STORAGE_URL": "s3://bucket/qsolve"}
    template = job_template(settings)
    assert template["variables"]["properties"]["env"]["default"] == settings
    (hardware,) = [d for d in DEFINITIONS["deployments"] if d["name"] == "hardware"]
    own = hardware["work_pool"]["job_variables"]["env"]
    # a flow run's environment as a process worker builds it (no block or variable to resolve: no client)
    job = asyncio.run(
        ProcessJobConfiguration.from_template_and_values(template, {"env": own}, client=object())
    )
    assert job.env == settings | own
