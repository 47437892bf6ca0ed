"""max-cut with its six cases at cheaper QAOA params, for the flows tests whose subject is the platform
(races, shared storage), not QAOA: every case still passes its own expectations, at about a third of the
sandbox's time."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import REPO

CASES = 6  # max-cut's cases

#: max-cut's QAOA at a coarser grid, no optimiser steps and fewer shots: every case still passes its own
#: expectations (a gap of 0, or 0.05; the noise-model case's fidelity and two-qubit gates), at about a
#: third of the sandbox's time, which each submission's gates and each history stage pay (CI's 20 minutes).
#: A case that sets its own params (single-edge) keeps them.
CHEAP = {"grid": 4, "maxiter": 0, "shots": 2000, "opt_shots": 256}


#: four of the cases, for the races, whose subject is the platform's guarantees, not a case's size: still
#: more than a history stage's three case threads, so one waits for a thread, and the noise-model case
#: the gates require (fidelity_checked); the 8-node and the isolated-node cases left out
FEW = ("ring-6-with-chord", "complete-5", "single-edge", "noise-model-ring-6")


def copy_cheap_max_cut(folder: Path, only: tuple[str, ...] | None = None) -> Path:
    """A copy of max-cut at ``folder``, its six cases (or those named in ``only``) at the ``CHEAP``
    params."""
    shutil.copytree(REPO / "workflows" / "max-cut", folder)
    cases_file = folder / "benchmarks" / "cases.yaml"
    cases = yaml.safe_load(cases_file.read_text())
    assert len(cases["cases"]) == CASES
    if only is not None:
        cases["cases"] = [case for case in cases["cases"] if case["name"] in only]
        assert [case["name"] for case in cases["cases"]] == list(only)
    for case in cases["cases"]:
        case.setdefault("params", CHEAP)
    cases_file.write_text(yaml.safe_dump(cases, sort_keys=False))
    return folder
