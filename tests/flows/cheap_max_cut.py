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


def copy_cheap_max_cut(folder: Path) -> Path:
    """A copy of max-cut at ``folder``, its six cases at the ``CHEAP`` params."""
    shutil.copytree(REPO / "workflows" / "max-cut", folder)
    cases_file = folder / "benchmarks" / "cases.yaml"
    cases = yaml.safe_load(cases_file.read_text())
    for case in cases["cases"]:
        case.setdefault("params", CHEAP)
    assert len(cases["cases"]) == CASES
    cases_file.write_text(yaml.safe_dump(cases, sort_keys=False))
    return folder
