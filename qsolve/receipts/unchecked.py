"""Rules this verifier does not run, and how a job shows that it needs them.

Contracts (quantum-provider-protocol §8.7), verified answers (§8.9), grades (§8.10), wasmQ results
(quantum-wasmq §6.5) and energy-landscape results (quantum-landscape §5.4) are held to rules whose
documents this verifier does not have. A job that carries their members gets a verdict naming the
rules left unchecked, and is never called valid on rules that did not run.

Of §8.7, what a job with no contract is held to needs no other document, and is checked here: it
carries no ``planner`` (``planner_form``, then reported alone of §8.7), no ``shadow`` (``shadow``) and
no ``stopped``, since no contract of it gives ``max_joules`` (``stopped``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qsolve.receipts.values import MISSING


@dataclass(frozen=True)
class Unchecked:
    """Rules not run on this job: the section, the reasons they could give, and why they did not run."""

    rules: str
    reasons: tuple[str, ...]
    why: str

    def as_json(self) -> dict[str, Any]:
        return {"rules": self.rules, "reasons": list(self.reasons), "why": self.why}


CONTRACT_REASONS = (
    "contract_form",
    "contract_provider",
    "planner_form",
    "planner_route",
    "planner_choice",
    "planner_stable",
    "planner_kept",
    "contract_class",
    "shadow",
    "stopped",
)
WASMQ_FORMATS = frozenset({"wai.quantum.wasmq.result/1", "wai.quantum.wasmq.result/2"})
LANDSCAPE_PROTOCOLS = frozenset({"wai.quantum.landscape/1", "wai.quantum.landscape/2"})
SIGNOFF_FORMAT = "wai.quantum.signoff/1"
GRADE_FORMAT = "wai.quantum.grade/1"


def is_contract_job(request: dict[str, Any]) -> bool:
    """A contract job's request holds a ``contract`` other than ``null`` (§8.7)."""
    return request.get("contract") is not None


def _contract(request: dict[str, Any], result: dict[str, Any]) -> Unchecked | None:
    if not is_contract_job(request):
        return None
    return Unchecked(
        "§8.7",
        CONTRACT_REASONS,
        "a job under a contract: its contract, planner, shadow and kept are not checked here",
    )


def _verified_answer(request: dict[str, Any], result: dict[str, Any]) -> Unchecked | None:
    if (
        "verdict" not in result
        and request.get("intent") is None
        and "signoff" not in request
        and result.get("format") != SIGNOFF_FORMAT
    ):
        return None
    return Unchecked("§8.9", (), "a verified answer or a sign-off: its verdict is not worked out again here")


def _grade(request: dict[str, Any], result: dict[str, Any]) -> Unchecked | None:
    if "grade" not in request and result.get("format") != GRADE_FORMAT:
        return None
    return Unchecked("§8.10", (), "a grade: its cases and verdict are not worked out again here")


def _wasmq(request: dict[str, Any], result: dict[str, Any]) -> Unchecked | None:
    if result.get("format") not in WASMQ_FORMATS:
        return None
    return Unchecked(
        "quantum-wasmq §6.5", ("wasmq_form",), "a wasmQ job: its profile's rules are not run here"
    )


def _landscape(request: dict[str, Any], result: dict[str, Any]) -> Unchecked | None:
    if result.get("protocol") not in LANDSCAPE_PROTOCOLS and result.get("schema") not in LANDSCAPE_PROTOCOLS:
        return None
    return Unchecked(
        "quantum-landscape §5.4",
        ("landscape_form",),
        "an energy-landscape job: its answer's rules are not run here",
    )


FAMILIES: tuple[Callable[[dict[str, Any], dict[str, Any]], Unchecked | None], ...] = (
    _contract,
    _verified_answer,
    _grade,
    _wasmq,
    _landscape,
)


def unchecked_rules(request: dict[str, Any], result: dict[str, Any]) -> list[Unchecked]:
    """Every family of rules this job needs and this verifier does not run."""
    found = []
    for family in FAMILIES:
        u = family(request, result)
        if u is not None:
            found.append(u)
    return found


def no_contract_reasons(request: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """§8.7's reasons for a job with no contract: a ``planner``, a ``shadow`` or a ``stopped`` it carries."""
    if is_contract_job(request):
        return []
    if result.get("planner", MISSING) is not MISSING:
        return ["planner_form"]
    return [code for code in ("shadow", "stopped") if code in result]
