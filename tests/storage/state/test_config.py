"""The price table and the limits: defaults, families of targets, the environment and a file over them."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from storage.state import DEFAULT_PRICES, CreditSettings, Price, RunLimits, Source, UnpricedTarget


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("PER_RUN_LIMIT", "HISTORY_RUN_LIMIT", "HISTORY_RUN_SECONDS", "PRICES"):
        monkeypatch.delenv(f"QSOLVE_CREDITS_{name}", raising=False)
    monkeypatch.delenv("QSOLVE_CREDITS_FILE", raising=False)
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))


def test_defaults_are_the_seed_limits() -> None:
    settings = CreditSettings.load()
    assert settings.limits(Source.HARDWARE) == RunLimits(credits=Decimal(50), seconds=None)
    assert settings.limits("history") == RunLimits(credits=Decimal(20), seconds=900)


def test_simulators_are_cheap_and_devices_dear() -> None:
    settings = CreditSettings.load()
    sim = settings.estimate_price("sim-cpu", circuits=10, shots=40_000)
    fake = settings.estimate_price("fake:fez@1.6", circuits=10, shots=40_000)
    ibm = settings.estimate_price("ibm:ibm_fez", circuits=10, shots=40_000)
    assert sim < fake < ibm
    assert sim == Decimal("0.41")  # 10 * 0.001 + 40000 * 0.00001
    assert ibm > settings.per_run_limit  # such a run is held at the limit


def test_a_price_is_rounded_up_to_a_micro_credit() -> None:
    price = Price(per_circuit=Decimal(0), per_shot=Decimal("0.0000001"))
    assert price.estimate(circuits=1, shots=1) == Decimal("0.000001")
    assert price.estimate(circuits=0, shots=0) == 0
    with pytest.raises(ValueError, match="negative"):
        price.estimate(circuits=-1, shots=0)


def test_a_target_of_its_own_beats_its_family() -> None:
    settings = CreditSettings(prices={"ibm:ibm_fez": {"per_circuit": "2", "per_shot": "0"}})
    assert settings.estimate_price("ibm:ibm_fez", 3, 1000) == Decimal(6)
    assert settings.price("ibm:ibm_torino") == DEFAULT_PRICES["ibm:"]
    assert settings.price("sim-cpu") == DEFAULT_PRICES["sim-cpu"]


def test_a_target_without_a_price_is_refused() -> None:
    with pytest.raises(UnpricedTarget, match="no price for target 'quantinuum:h2'") as caught:
        CreditSettings.load().estimate_price("quantinuum:h2", 1, 100)
    assert caught.value.target == "quantinuum:h2"


def test_the_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QSOLVE_CREDITS_PER_RUN_LIMIT", "40")
    monkeypatch.setenv("QSOLVE_CREDITS_HISTORY_RUN_SECONDS", "600")
    monkeypatch.setenv("QSOLVE_CREDITS_PRICES", '{"sim-cpu": {"per_circuit": "0", "per_shot": "0.5"}}')
    settings = CreditSettings.load()
    assert settings.limits("hardware").credits == 40
    assert settings.limits("history") == RunLimits(credits=Decimal(20), seconds=600)
    assert settings.estimate_price("sim-cpu", 1, 4) == 2
    assert settings.price("fake:fez") == DEFAULT_PRICES["fake:"]


def test_a_file_in_qsolve_home_overrides_and_the_environment_beats_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "credits.toml").write_text(
        'per_run_limit = "30"\nhistory_run_limit = "10"\n\n'
        '[prices."ibm:"]\nper_circuit = "1"\nper_shot = "0"\n'
        '[prices."sim-cpu"]\nper_circuit = "0"\nper_shot = "1"\n'
    )
    monkeypatch.setenv("QSOLVE_CREDITS_HISTORY_RUN_LIMIT", "12")
    monkeypatch.setenv("QSOLVE_CREDITS_PRICES", '{"sim-cpu": {"per_circuit": "0", "per_shot": "2"}}')
    settings = CreditSettings.load(home)
    assert settings.per_run_limit == 30
    assert settings.history_run_limit == 12
    assert settings.estimate_price("ibm:ibm_fez", 5, 1000) == 5  # the file's, kept beside the env's
    assert settings.estimate_price("sim-cpu", 0, 3) == 6  # the environment's
    assert settings.price("fake:fez") == DEFAULT_PRICES["fake:"]


def test_qsolve_credits_file_names_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.toml"
    path.write_text('per_run_limit = "7"\n')
    monkeypatch.setenv("QSOLVE_CREDITS_FILE", str(path))
    assert CreditSettings.load().per_run_limit == 7


def test_nonsense_is_refused() -> None:
    with pytest.raises(ValueError):
        CreditSettings(per_run_limit=-1)
    with pytest.raises(ValueError):
        CreditSettings(prices={"sim-cpu": {"per_shot": "-1"}})
    with pytest.raises(ValueError):
        CreditSettings(prices={"sim-cpu": {"per_shots": "1"}})
