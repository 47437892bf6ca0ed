"""``qsolve worker``: the command it runs, and a renewal period that does not read refused in one line
before anything is registered (the renewal itself, against a real Prefect worker, is in
tests/flows/test_routing.py)."""

from __future__ import annotations

import pytest

from qsolve.cli import main


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.delenv("QSOLVE_STORAGE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("QSOLVE_HOST_NAME", "host-w")
    return tmp_path / "home"


def test_print_names_the_pool_and_queues_and_registers_the_host(home, capsys, monkeypatch):
    monkeypatch.delenv("QISKIT_IBM_TOKEN", raising=False)
    assert main(["worker", "--pool", "p1", "--print"]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == "host-w holds no provider: registered in the state database"
    assert captured.out.strip().endswith("-m prefect worker start --pool p1 --work-queue default")


@pytest.mark.parametrize("value", ["soon", "0", "1e9", "nan"])
def test_a_renewal_period_that_does_not_read_is_one_line_and_registers_nothing(
    home, capsys, monkeypatch, value
):
    monkeypatch.setenv("QSOLVE_WORKER_RENEW_S", value)
    assert main(["worker", "--print"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"qsolve worker: QSOLVE_WORKER_RENEW_S={value!r}: a number of seconds from 0.5 to 300"
    assert not (home / "state.db").exists()  # refused before the database was opened
