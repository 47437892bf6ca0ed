"""The price table and the limits: defaults, families of targets; the state database's values over them, read
by every connection alike; a credits.toml or a QSOLVE_CREDITS_* variable refused with what to run."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from qsolve_pipeline.storage.state import (
    DEFAULT_PRICES,
    CreditSettings,
    CreditsMoved,
    Price,
    RunLimits,
    Source,
    UnpricedTarget,
    connect,
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("PER_RUN_LIMIT", "HISTORY_RUN_LIMIT", "HISTORY_RUN_SECONDS", "PRICES"):
        monkeypatch.delenv(f"QSOLVE_CREDITS_{name}", raising=False)
    monkeypatch.delenv("QSOLVE_CREDITS_FILE", raising=False)
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))


def test_defaults_are_the_seed_limits() -> None:
    settings = CreditSettings()
    assert settings.limits(Source.HARDWARE) == RunLimits(credits=Decimal(50), seconds=None)
    assert settings.limits("history") == RunLimits(credits=Decimal(20), seconds=900)


def test_simulators_are_cheap_and_devices_dear() -> None:
    settings = CreditSettings()
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
        CreditSettings().estimate_price("quantinuum:h2", 1, 100)
    assert caught.value.target == "quantinuum:h2"


def test_the_database_holds_them_for_every_connection(database_url: str, tmp_path: Path) -> None:
    with connect(database_url, home=tmp_path / "a") as a, connect(database_url, home=tmp_path / "b") as b:
        assert a.settings == CreditSettings()  # nothing set: the defaults
        a.set_limits(per_run_limit=Decimal(40), history_run_seconds=600)
        a.set_price("sim-cpu", Price(per_shot=Decimal("0.5")))
        a.set_price("ibm:", Price(per_circuit=Decimal(1)))
        settings = b.settings  # another home on the same database: read now, alike
        assert settings.limits("hardware").credits == 40
        assert settings.limits("history") == RunLimits(credits=Decimal(20), seconds=600)
        assert settings.estimate_price("sim-cpu", 1, 4) == 2
        assert settings.estimate_price("ibm:ibm_fez", 5, 1000) == 5
        assert settings.price("fake:fez") == DEFAULT_PRICES["fake:"]
        b.set_price("sim-cpu", Price(per_shot=Decimal("0.25")))  # set again: one row, the later value
        assert a.settings.estimate_price("sim-cpu", 0, 4) == 1
        assert a.remove_price("sim-cpu") and not a.remove_price("sim-cpu")
        assert b.settings.price("sim-cpu") == DEFAULT_PRICES["sim-cpu"]
        with pytest.raises(ValueError):
            a.set_limits(per_run_limit=Decimal(-1))
        with pytest.raises(ValueError, match="no credit limit named per_run"):
            a.set_limits(per_run=Decimal(1))
        assert b.settings.per_run_limit == 40


def test_two_machines_importing_different_files_at_once_one_is_taken_whole(
    database_url: str, tmp_path: Path
) -> None:
    """Two machines' credits.toml imported at the same moment, each setting values the database holds none
    of: one import sets its whole file, the other finds those values held otherwise and sets nothing (the
    database's insert decides, not the reads), never a mix of the two files."""
    import threading

    from qsolve_pipeline.storage.state import SettingsDiffer

    files = [
        CreditSettings(per_run_limit=Decimal(40), prices={"ibm:": Price(per_shot=Decimal("0.001"))}),
        CreditSettings(per_run_limit=Decimal(70), prices={"ibm:": Price(per_shot=Decimal("0.009"))}),
    ]
    homes = [connect(database_url, home=tmp_path / name) for name in "ab"]
    ready = threading.Barrier(2)
    outcome: list[object] = [None, None]

    def import_(i: int) -> None:
        ready.wait()
        try:
            outcome[i] = homes[i].import_credits(files[i]).set
        except SettingsDiffer as e:
            outcome[i] = e

    threads = [threading.Thread(target=import_, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    taken = [i for i in range(2) if isinstance(outcome[i], list)]
    assert len(taken) == 1, outcome
    (winner,) = taken
    assert outcome[winner] == ["per_run_limit", "ibm: price"]
    refused = outcome[1 - winner]
    assert isinstance(refused, SettingsDiffer) and [d[0] for d in refused.differ] == [
        "per_run_limit",
        "ibm: price",
    ]
    settings = homes[0].credit_settings()
    assert settings.per_run_limit == files[winner].per_run_limit
    assert settings.price("ibm:") == files[winner].prices["ibm:"]
    assert homes[1 - winner].import_credits(files[winner]).held == ["per_run_limit", "ibm: price"]
    for db in homes:
        db.close()


def test_a_credits_file_or_variable_is_refused_saying_what_to_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "credits.toml").write_text('per_run_limit = "30"\n')
    with pytest.raises(
        CreditsMoved, match=r"credits.toml: .* run `qsolve credits import .*credits.toml` once"
    ):
        connect(home=home)
    (home / "credits.toml").unlink()
    monkeypatch.setenv("QSOLVE_CREDITS_PER_RUN_LIMIT", "40")
    with pytest.raises(CreditsMoved, match="QSOLVE_CREDITS_PER_RUN_LIMIT is set: .* `qsolve credits limit`"):
        connect(home=home)
    monkeypatch.delenv("QSOLVE_CREDITS_PER_RUN_LIMIT")
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text('per_run_limit = "7"\n')
    monkeypatch.setenv("QSOLVE_CREDITS_FILE", str(elsewhere))
    with pytest.raises(CreditsMoved, match="elsewhere.toml"):
        connect(home=home)
    with connect(home=home, refuse_credits_file=False) as db:  # what the import opens
        assert db.settings.per_run_limit == 50  # the file is not read


def test_nonsense_is_refused() -> None:
    with pytest.raises(ValueError):
        CreditSettings(per_run_limit=-1)
    with pytest.raises(ValueError):
        CreditSettings(prices={"sim-cpu": {"per_shot": "-1"}})
    with pytest.raises(ValueError):
        CreditSettings(prices={"sim-cpu": {"per_shots": "1"}})
