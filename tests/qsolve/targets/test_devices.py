"""Fake devices kept in the cache: read back without qiskit-ibm-runtime, transpiling the same circuits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from qiskit.circuit.library import efficient_su2
from qiskit.transpiler import generate_preset_pass_manager

from qsolve.targets import UnknownTarget, devices
from tests.conftest import ghz

LOAD = """
import json, sys
from pathlib import Path
from qsolve.targets import devices
devices.use_cache(Path(sys.argv[1]))
d = devices.device("fez")
print(json.dumps({"runtime": "qiskit_ibm_runtime" in sys.modules, "name": d.name,
                  "qubits": d.target.num_qubits, "readout": d.readout[:3]}))
"""


def _load(folder: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", LOAD, str(folder)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_a_device_is_built_once_then_read_from_the_cache(tmp_path: Path) -> None:
    first = _load(tmp_path)
    files = list(tmp_path.iterdir())
    assert first["runtime"] and len(files) == 1 and files[0].name.startswith("fez-py3.")
    again = _load(tmp_path)
    assert not again["runtime"]  # read back without importing qiskit-ibm-runtime
    assert again == {**first, "runtime": False}
    assert first["name"] == "fake_fez" and first["qubits"] == 156


def test_a_cache_file_that_does_not_read_is_built_again(tmp_path: Path) -> None:
    _load(tmp_path)
    (path,) = tmp_path.iterdir()
    path.write_bytes(b"not a pickle")
    assert _load(tmp_path)["runtime"]
    assert path.read_bytes() != b"not a pickle"


def test_the_cached_target_transpiles_as_the_backend_does() -> None:
    from qiskit_ibm_runtime.fake_provider import FakeFez

    backend = FakeFez()
    cached = devices.device("fez").target
    circuits = [ghz(5)]
    for n in (3, 6):
        c = efficient_su2(n, reps=2)
        c = c.assign_parameters(np.linspace(0, 1, c.num_parameters))
        c.measure_all()
        circuits.append(c)
    for seed in (1, 99):
        by_backend = generate_preset_pass_manager(1, backend=backend, seed_transpiler=seed).run(circuits)
        by_cache = generate_preset_pass_manager(1, target=cached, seed_transpiler=seed).run(circuits)
        assert by_backend == by_cache


def test_readout_errors_are_the_devices_asymmetric_ones() -> None:
    from qiskit_ibm_runtime.fake_provider import FakeFez

    props = FakeFez().properties()
    q0 = {p.name: p.value for p in props.qubits[0]}
    assert devices.device("ibm_fez").readout[0] == (q0["prob_meas1_prep0"], q0["prob_meas0_prep1"])


@pytest.mark.parametrize("name", ["nosuchdevice", "../fez"])
def test_unknown_devices_are_refused(name: str) -> None:
    with pytest.raises(UnknownTarget, match="no such fake device"):
        devices.device(name)
