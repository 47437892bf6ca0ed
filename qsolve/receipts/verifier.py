"""The verifier (quantum-provider-protocol §8.4, with §8.2, §8.6 and §8.8).

It reads the job strictly and reports every reason that applies, as a set: none for a valid receipt.
In order:

1. ``too_large`` (alone): longer than the surface reads, in bytes or values; nothing of it is judged.
2. ``unreadable`` (alone): the text breaks a rule of reading.
3. ``not_a_job`` (alone): not an object whose ``request`` and ``result`` are objects.
4. ``no_receipt`` (alone): the result has no ``receipt``.
5. The receipt's reasons (``receipt.py``) and ``inexact_number`` over what it seals.
6. A job: the provider rules (``provider_rules.py``) and §8.7's for a job with no contract; a set: its
   items, each checked as a job, and its tree (``sets.py``).
7. Held to a trust list or a time: §8.8's reasons (``trust.py``), for a receipt of its form.

Rules whose documents this verifier does not have are named in ``unchecked`` (``unchecked.py``); a job
that needs them is not called valid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from qsolve.receipts.execution import KINDS_WITH_ROWS, OPEN_KINDS
from qsolve.receipts.provider_rules import (
    class_by_provenance,
    is_provider_result,
    is_stated,
    provider_reasons,
)
from qsolve.receipts.receipt import check_receipt, has_inexact_number, time_statement
from qsolve.receipts.seal import Form, head_of, is_set, sealed_part
from qsolve.receipts.sets import set_key_member, set_reasons
from qsolve.receipts.strict_json import Document, Unreadable, read
from qsolve.receipts.trust import HeldTo, held_reasons
from qsolve.receipts.unchecked import Unchecked, no_contract_reasons, unchecked_rules
from qsolve.receipts.values import member, obj
from qsolve.receipts.verdict import ProviderStated, ReadAtMost, UncheckedRules, Verdict

VERIFY_LIMITS = ReadAtMost(bytes=384 * 2**20, values=2**22)
"""What ``verify`` reads on every host: 384 MiB and 2^22 values (§8.4 ``too_large``)."""
SERVICE_LIMITS = ReadAtMost(bytes=4 * 2**20, values=2**19)
"""What the job service's ``POST /v1/verify`` and ``/mcp`` read: 4 MiB and 2^19 values."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_COUNTED = b",:[{"


def count_values(data: bytes, limit: int | None = None) -> int:
    """A job's values: one, and one more for each ``,``, ``:``, ``[`` and ``{`` outside its strings.

    With ``limit``, a count at most ``limit`` may be answered from a bound that counts those inside
    strings too, without reading the strings out.
    """
    bound = 1 + len(data) - len(data.translate(None, _COUNTED))
    if limit is not None and bound <= limit:
        return bound
    outside = _STRING.sub(b"", data)
    return 1 + len(outside) - len(outside.translate(None, _COUNTED))


@dataclass
class _Found:
    """What the checks of one job (or one set item) found."""

    reasons: list[str] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)
    form: Form | None = None
    time: dict[str, int] | None = None


def _check_job(doc: Document | None, request: dict[str, Any], result: dict[str, Any]) -> _Found:
    """Steps 4 to 6 for one job, a set's items included."""
    if "receipt" not in result:
        return _Found(["no_receipt"])
    receipt = result["receipt"]
    found = _Found()
    set_result = is_set(result)
    sealed = head_of(result) if set_result else sealed_part(result)
    checked = check_receipt(receipt, request, sealed, doc)
    found.reasons.extend(checked.reasons)
    found.form, found.time = checked.form, checked.time
    if has_inexact_number(doc, (request, sealed), checked.form):
        found.reasons.append("inexact_number")
    found.unchecked.extend(unchecked_rules(request, result))
    found.reasons.extend(no_contract_reasons(request, result))
    if set_result:
        return found
    found.reasons.extend(provider_reasons(request, result))
    return found


def _provider_stated(result: dict[str, Any]) -> ProviderStated | None:
    if not is_provider_result(result):
        return None
    provider = obj(result.get("provider"))
    cls = class_by_provenance(provider.get("provenance"))
    if not is_stated(result):
        return ProviderStated(
            form="earlier",
            class_=cls,
            notes=["the earlier form: it states neither where its counts come from nor its execution"],
        )
    kind = provider.get("kind")
    word = "host" if kind in KINDS_WITH_ROWS else "provider" if kind in OPEN_KINDS else None
    source = result.get("counts_source")
    execution = result.get("execution")
    notes = []
    if obj(execution).get("stated_by") == "nobody":
        notes.append("nobody stated its execution: it says nothing of what was sent")
    return ProviderStated(
        form="stated", class_=cls, counts_source=source, execution=execution, counts_word=word, notes=notes
    )


def _unchecked_models(unchecked: list[Unchecked]) -> list[UncheckedRules]:
    seen: dict[str, Unchecked] = {}
    for u in unchecked:
        seen.setdefault(u.rules, u)
    return [UncheckedRules(rules=u.rules, reasons=list(u.reasons), why=u.why) for u in seen.values()]


_NOT_HELD = HeldTo()


def verify(text: bytes | str, *, limits: ReadAtMost = VERIFY_LIMITS, held: HeldTo | None = None) -> Verdict:
    """Verify a job given as its text. ``held`` gives a trust list and a time to hold it to (§8.8)."""
    held = held or _NOT_HELD
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    common: dict[str, Any] = {"read_at_most": limits}
    if held.at_ms is not None:
        common.update(checked_at_ms=held.at_ms, skew_ms=held.skew_ms)
    if held.trust is not None:
        common["trust"] = {"listed": None}

    def alone(code: str, why: str, **more: Any) -> Verdict:
        return Verdict(valid=False, reasons=[code], why=why, **common, **more)

    if len(data) > limits.bytes:
        return alone("too_large", f"the job is {len(data)} bytes, and this surface reads {limits.bytes}")
    # a text has at most one value more than it has bytes: a shorter one needs no counting
    values = count_values(data, limits.values) if len(data) >= limits.values else 0
    if values > limits.values:
        return alone("too_large", f"the job has {values} values, and this surface reads {limits.values}")
    try:
        doc = read(data)
    except Unreadable as e:
        return alone("unreadable", str(e))
    job = doc.value
    request, result = member(job, "request"), member(job, "result")
    if type(request) is not dict or type(result) is not dict:
        return alone("not_a_job", "the value is not an object whose request and result are both objects")
    provider = _provider_stated(result)
    if "receipt" not in result:
        return alone("no_receipt", "the result has no receipt", provider=provider)

    found = _check_job(doc, request, result)
    receipt = result["receipt"]
    set_statement = None
    if is_set(result):
        found_set = set_reasons(
            request,
            result,
            set_key_member(result),
            lambda req, res: _item(doc, req, res),
            lambda value: has_inexact_number(doc, (value,), Form.CANONICAL),
            doc,
        )
        found.reasons.extend(found_set.reasons)
        found.unchecked.extend(found_set.unchecked)
        set_statement = {"items": [item.as_json() for item in found_set.items]}
        provider = None

    stated: dict[str, Any] = {"time": time_statement(receipt)}
    if found.form is not None:
        stated["form"] = "first" if found.form is Form.FIRST else "canonical"
        stated["key"] = receipt["key"]
        more, trust = held_reasons(receipt["key"], found.time, held)
        found.reasons.extend(more)
        if trust is not None:
            stated["trust"] = trust

    reasons = sorted(set(found.reasons))
    unchecked = _unchecked_models(found.unchecked)
    return Verdict(
        valid=not reasons and not unchecked,
        reasons=reasons,
        unchecked=unchecked,
        provider=provider,
        set_=set_statement,
        **{**common, **stated},
    )


def _item(
    doc: Document, request: dict[str, Any], result: dict[str, Any]
) -> tuple[list[str], list[Unchecked], Any]:
    found = _check_job(doc, request, result)
    return sorted(set(found.reasons)), found.unchecked, member(result.get("receipt"), "key")
