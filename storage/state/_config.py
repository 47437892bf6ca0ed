"""Where the state lives, and the credit settings: the price table and the per-run limits.

The settings are kept in the state database (issue 26: every machine prices alike), set by the operator
(``qsolve credits price``, ``qsolve credits limit``), the defaults below where it holds none; a price
table that is set is laid over the default one, target by target. Where they used to come from, a
``credits.toml`` in the home (or ``QSOLVE_CREDITS_FILE``) and ``QSOLVE_CREDITS_*`` variables, is refused
with a line saying what to run (:func:`legacy_credit_sources`): ``qsolve credits import`` takes a file
in once.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from qsolve.home import qsolve_home
from qsolve_pipeline.storage.state._errors import UnpricedTarget
from qsolve_pipeline.storage.state._models import MICRO, RunLimits, Source, from_micro, to_micro

DATABASE_URL_VARIABLE = "QSOLVE_DATABASE_URL"
CREDITS_FILE_VARIABLE = "QSOLVE_CREDITS_FILE"
CREDITS_VARIABLES = "QSOLVE_CREDITS_"  # the prefix of the variables that once set them


class Price(BaseModel):
    """Credits per circuit sent and per shot taken on one target (or family of targets)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    per_circuit: Decimal = Field(default=Decimal(0), ge=0)
    per_shot: Decimal = Field(default=Decimal(0), ge=0)

    def estimate(self, circuits: int, shots: int) -> Decimal:
        """``shots`` counts every shot of every circuit; the price is rounded up to a micro-credit."""
        if circuits < 0 or shots < 0:
            raise ValueError(f"circuits and shots must not be negative: {circuits}, {shots}")
        return from_micro(to_micro(self.per_circuit * circuits + self.per_shot * shots))


DEFAULT_PRICES: dict[str, Price] = {
    "sim-cpu": Price(per_circuit=Decimal("0.001"), per_shot=Decimal("0.00001")),
    "fake:": Price(per_circuit=Decimal("0.002"), per_shot=Decimal("0.00002")),
    "provider:": Price(per_circuit=Decimal("0.05"), per_shot=Decimal("0.0005")),
    "ibm:": Price(per_circuit=Decimal("0.5"), per_shot=Decimal("0.002")),
}


class CreditSettings(BaseModel):
    """The price table and the limits (benchmarks-and-gates.md, "How they run" 4 and "How results enter"),
    as the state database holds them (``StateDB.settings``; ``qsolve credits price|limit``), the defaults
    where it holds none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    per_run_limit: Decimal = Field(default=Decimal(50), ge=0)
    history_run_limit: Decimal = Field(default=Decimal(20), ge=0)
    history_run_seconds: int = Field(default=900, gt=0)
    prices: dict[str, Price] = Field(default_factory=dict)  # laid over DEFAULT_PRICES, target by target

    @property
    def price_table(self) -> dict[str, Price]:
        return {**DEFAULT_PRICES, **self.prices}

    def price(self, target: str) -> Price:
        """The target's own price, else that of its family (``ibm:`` for ``ibm:ibm_fez``)."""
        table = self.price_table
        if target in table:
            return table[target]
        family = target.split(":", 1)[0] + ":" if ":" in target else None
        if family in table:
            return table[family]
        raise UnpricedTarget(f"no price for target {target!r} in the price table", target=target)

    def estimate_price(self, target: str, circuits: int, shots: int) -> Decimal:
        return self.price(target).estimate(circuits, shots)

    def limits(self, source: Source | str) -> RunLimits:
        """History runs: 20 credits and 900 seconds a case; others: the per-run limit, their own time."""
        if Source(source) is Source.HISTORY:
            return RunLimits(credits=self.history_run_limit, seconds=self.history_run_seconds)
        return RunLimits(credits=self.per_run_limit, seconds=None)

    def limit_micro(self, source: Source | str) -> int:
        return int(self.limits(source).credits * MICRO)


def legacy_credit_sources(home: Path | None = None) -> list[str]:
    """What would once have set the credit settings on this machine alone, each as a line saying what to
    run instead: a ``credits.toml`` (or ``QSOLVE_CREDITS_FILE``), a ``QSOLVE_CREDITS_*`` variable."""
    path = credits_file(home)
    found = []
    if path.is_file():
        found.append(
            f"{path}: credit prices and limits are kept in the state database now, alike for every machine: "
            f"run `qsolve credits import {path}` once (it takes the file in and sets it aside)"
        )
    for name in sorted(
        n for n in os.environ if n.startswith(CREDITS_VARIABLES) and n != CREDITS_FILE_VARIABLE
    ):
        found.append(
            f"{name} is set: credit prices and limits are kept in the state database now, alike for every "
            "machine: set them with `qsolve credits limit` or `qsolve credits price`, and unset it"
        )
    return found


def credits_file(home: Path | None = None) -> Path:
    return Path(os.environ.get(CREDITS_FILE_VARIABLE) or (home or qsolve_home()) / "credits.toml")
