"""The provider rules of quantum-provider-protocol §8.4, one function a reason, in the table's order.

A provider's result is one whose ``method`` is ``provider``. It is *stated* when it carries a member
``counts_source`` or ``execution`` (whatever their values), and of the *earlier form* when it carries
neither; the earlier form is held to ``provider_class``, ``request_provider``, ``request_shots`` and
``counts`` only. Each rule reads the request and the result as values (``values.py``) and says whether
its reason applies.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from blake3 import blake3

from qsolve.receipts.execution import counts_source_reason, execution_reason
from qsolve.receipts.seal import ENGINE_NAME
from qsolve.receipts.signature import is_lower_hex
from qsolve.receipts.values import MAX_WHOLE, MISSING, member, obj, same, whole, whole_at_least

Rule = Callable[[dict[str, Any], dict[str, Any]], bool]

DEFAULT_SHOTS = 1024
LISTED_OUTCOMES = 65_536
"""At most this many outcomes are listed; a result that omits some lists exactly this many (§8.1)."""
BASES = frozenset({"rzsxxcz", "prxcz", "gpizz", "prxrzxx"})
SIGNOFF_FORMAT = "wai.quantum.signoff/1"
RESULT_SCHEMA = "wai.quantum.job-result/1"
QUBIT_NAMES_REQUIRED = frozenset({"cloud-tasks", "prx-circuits"})
_DOLLAR_INDEX = re.compile(r"\$([0-9]+)")


def is_provider_result(result: dict[str, Any]) -> bool:
    return result.get("method") == "provider"


def is_stated(result: dict[str, Any]) -> bool:
    return "counts_source" in result or "execution" in result


def class_by_provenance(provenance: Any) -> str | None:
    """``measured`` for ``silicon``; ``simulated`` for ``simulator`` or ``emulator``, alone or followed by
    ``:`` and a sentence; none for anything else (§8.1)."""
    if type(provenance) is not str:
        return None
    if provenance == "silicon":
        return "measured"
    if provenance.split(":", 1)[0] in ("simulator", "emulator"):
        return "simulated"
    return None


def _nonempty_str(v: Any) -> bool:
    return type(v) is str and v != ""


# --- the rules -------------------------------------------------------------------------------------


def provider_class(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """``accuracy.class`` is not the one its form gives; or ``approximate`` is present and not ``true``,
    or ``true`` in the earlier form or on a class other than ``simulated``."""
    accuracy = result.get("accuracy", MISSING)
    cls = member(accuracy, "class")
    stated = is_stated(result)
    wanted = class_by_provenance(member(result.get("provider"), "provenance")) if stated else "measured"
    if wanted is None or type(cls) is not str or cls != wanted:
        return True
    approximate = member(accuracy, "approximate")
    if approximate is MISSING:
        return False
    return approximate is not True or not stated or cls != "simulated"


def other_method_class(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """A result of another method whose class is ``measured`` or ``simulated``, other than a sign-off's."""
    if result.get("format") == SIGNOFF_FORMAT:
        return False
    return member(result.get("accuracy"), "class") in ("measured", "simulated")


def expected_provider(request: dict[str, Any], result: dict[str, Any]) -> Any:
    """The name a provider's result must give: the request's ``provider``; or, when it gives none and its
    contract allows providers, what follows ``provider:`` in ``planner.choice`` (§8.7)."""
    named = request.get("provider")
    if named is not None:
        return named
    if member(request.get("contract"), "providers") == "allowed":
        choice = member(result.get("planner"), "choice")
        if type(choice) is str and choice.startswith("provider:"):
            return choice[len("provider:") :]
    return MISSING


def request_provider(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """``provider.name`` is not a string equal to the provider the request gives."""
    name = member(result.get("provider"), "name")
    expected = expected_provider(request, result)
    return type(name) is not str or type(expected) is not str or name != expected


def request_shots(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """``shots`` is not the request's (1024 when it gives none, or ``null``), by value."""
    asked = request.get("shots")
    if asked is None:
        asked = DEFAULT_SHOTS
    return not same(result.get("shots", MISSING), asked)


def counts(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """The counts, ``shots``, ``omitted_shots``, ``distinct_outcomes`` and ``accepted_shots`` are not of
    their forms, or do not add up (§8.4 ``counts``). Sums are exact."""
    table = result.get("counts", MISSING)
    if type(table) is not dict:
        return True
    length = None
    total = 0
    for outcome, count in table.items():
        if length is None:
            length = len(outcome)
        if len(outcome) != length or outcome.strip("01"):
            return True
        n = count if type(count) is int and 1 <= count <= MAX_WHOLE else whole(count)
        if n is None or not 1 <= n <= MAX_WHOLE:
            return True
        total += n
    shots = whole(result.get("shots", MISSING))
    omitted = whole(result.get("omitted_shots", MISSING))
    distinct = whole(result.get("distinct_outcomes", MISSING))
    if shots is None or shots < 1 or omitted is None or omitted < 0 or distinct is None or distinct < 0:
        return True
    if "accepted_shots" in result:
        accepted = whole(result["accepted_shots"])
        if accepted is None or accepted < 1:
            return True
        of = accepted
    else:
        of = shots
    if total + omitted != of:
        return True
    listed = len(table)
    if omitted == 0:
        return distinct != listed
    return listed != LISTED_OUTCOMES or distinct <= listed


def _qubit_names_wrong(result: dict[str, Any], compiled: Any) -> bool:
    provider = result.get("provider")
    required = member(provider, "kind") in QUBIT_NAMES_REQUIRED and (
        member(result.get("execution"), "stated_by") == "client"
    )
    names = member(compiled, "qubit_names")
    if names is MISSING:
        return required
    if type(names) is not dict:
        return True
    for key, value in names.items():
        if (
            not key.isdigit()
            or not key.isascii()
            or (key[0] == "0" and key != "0")
            or not _nonempty_str(value)
        ):
            return True
    for name in ("layout", "final_layout"):
        entries = member(compiled, name)
        if type(entries) is list:
            for entry in entries:
                n = whole(entry)
                if n is not None and str(n) not in names:
                    return True
    qasm3 = member(compiled, "qasm3")
    if type(qasm3) is str:
        for digits in _DOLLAR_INDEX.findall(qasm3):
            if str(int(digits)) not in names:
                return True
    return False


def _whole_list(v: Any) -> bool:
    return type(v) is list and all((type(x) is int and x >= 0) or whole_at_least(x, 0) for x in v)


def provider_members(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """A member §8.4 names is missing or of a wrong type (``provider``, ``calibration``, ``compiled``,
    ``job``, ``ideal``, ``cost``, ``energy``, ``schema``, ``engine``), or ``compiled.qubit_names`` is
    wrong."""
    provider = result.get("provider", MISSING)
    compiled = result.get("compiled", MISSING)
    if type(provider) is not dict or type(compiled) is not dict:
        return True
    for name in ("name", "kind", "protocol", "device"):
        value = provider.get(name)
        if type(value) is not str or not value:
            return True
    if class_by_provenance(provider.get("provenance")) is None:
        return True
    if not is_lower_hex(provider.get("describe"), 64) or not whole_at_least(
        provider.get("qubits", MISSING), 1
    ):
        return True
    basis = compiled.get("basis", MISSING)
    if type(basis) is not str or basis not in BASES or provider.get("basis", MISSING) != basis:
        return True
    calibration = result.get("calibration", MISSING)
    if calibration is not None and type(calibration) is not str:
        return True
    if not is_lower_hex(compiled.get("program"), 64) or type(compiled.get("qasm3")) is not str:
        return True
    for name in ("native_gates", "two_qubit_gates", "swaps"):
        if not whole_at_least(compiled.get(name), 0):
            return True
    if not (_whole_list(compiled.get("layout")) and _whole_list(compiled.get("final_layout"))):
        return True
    if type(compiled.get("checked")) is not str or _qubit_names_wrong(result, compiled):
        return True
    job = obj(result.get("job"))
    if not _nonempty_str(job.get("id")) or not whole_at_least(job.get("polls"), 0):
        return True
    if type(obj(result.get("ideal")).get("computed")) is not bool:
        return True
    cost = obj(result.get("cost"))
    if type(cost.get("free")) is not bool or type(cost.get("confirmed")) is not bool:
        return True
    if type(cost.get("estimate")) is not dict:
        return True
    charged = cost.get("charged", MISSING)
    if charged is not None and not (
        type(charged) is dict and type(charged.get("amount")) is str and type(charged.get("currency")) is str
    ):
        return True
    energy = obj(result.get("energy"))
    if type(energy.get("unmetered")) is not str:
        return True
    if "service_kwh" in energy and type(energy.get("service_kwh_is")) is not str:
        return True
    if result.get("schema", MISSING) != RESULT_SCHEMA:
        return True
    engine = obj(result.get("engine"))
    return engine.get("name") != ENGINE_NAME or type(engine.get("version")) is not str


def counts_source(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """``counts_source`` is not one of §8.3's values, or not one its kind's rows give for its provenance."""
    provider = obj(result.get("provider"))
    return counts_source_reason(
        provider.get("kind", MISSING),
        provider.get("provenance", MISSING),
        result.get("counts_source", MISSING),
    )


def execution(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """``execution`` breaks a rule of §8.3, or is not its kind's row (nor stated by ``nobody``), or, on
    ``http`` and ``process``, is not stated by ``provider`` or ``nobody``."""
    provider = obj(result.get("provider"))
    return execution_reason(
        provider.get("kind", MISSING), provider.get("provenance", MISSING), result.get("execution")
    )


def compiled_program(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """``compiled.program`` is not the BLAKE3 of ``compiled.qasm3``'s UTF-8 bytes (when both are of form)."""
    compiled = result.get("compiled")
    qasm3, program = member(compiled, "qasm3"), member(compiled, "program")
    if type(qasm3) is not str or not is_lower_hex(program, 64):
        return False
    return blake3(qasm3.encode("utf-8")).hexdigest() != program


def cost_confirmation(request: dict[str, Any], result: dict[str, Any]) -> bool:
    """``confirmed`` is ``true`` on a free run or ``false`` on one that is not free; or ``confirmed_by`` is
    present and not ``submit``, or ``submit`` beside a ``confirmed`` that is not ``true`` (§7, §8.1)."""
    cost = result.get("cost")
    free, confirmed = member(cost, "free"), member(cost, "confirmed")
    if type(free) is bool and type(confirmed) is bool and free is confirmed:
        return True
    by = member(cost, "confirmed_by")
    if by is MISSING:
        return False
    return by != "submit" or confirmed is not True


EARLIER_RULES: tuple[tuple[str, Rule], ...] = (
    ("provider_class", provider_class),
    ("request_provider", request_provider),
    ("request_shots", request_shots),
    ("counts", counts),
)
"""The rules a provider's result of the earlier form is held to."""

STATED_RULES: tuple[tuple[str, Rule], ...] = (
    *EARLIER_RULES,
    ("provider_members", provider_members),
    ("counts_source", counts_source),
    ("execution", execution),
    ("compiled_program", compiled_program),
    ("cost_confirmation", cost_confirmation),
)
"""The rules a stated provider's result is held to, in §8.4's order."""


def provider_reasons(request: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """Every provider rule's reason that applies to this job's result (none for another method's but
    ``provider_class``, for a class only a provider's result has)."""
    if not is_provider_result(result):
        return ["provider_class"] if other_method_class(request, result) else []
    rules = STATED_RULES if is_stated(result) else EARLIER_RULES
    return [code for code, rule in rules if rule(request, result)]
