"""Reading what a person gives ``qsolve verify`` (or the web page's verify form) besides the job, and
the verdict as that person reads it (quantum-provider-protocol §8.4, §8.8).

    InputRefused   an input that does not read (a time, an allowance, a file): nothing is judged
    milliseconds   a time or an allowance: a whole number of milliseconds from 0 to 2^53 - 1
    held_time      the time to hold a receipt to (a number or ``now``) and its allowance, read together
    plain          the verdict in words: valid or not, each reason with what it means, what was found

The command names its inputs by their options (``--at``, ``--skew-ms``), the page by its fields ("the
time", "the allowance"); both read them by these rules, so a time one refuses the other refuses too.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qsolve.receipts.verdict import Verdict


class InputRefused(Exception):
    """An input to verify that does not read, or was refused whole: nothing was judged."""


def milliseconds(text: str, what: str) -> int:
    """``text`` as a whole number of milliseconds from 0 to 2^53 - 1 (strict JSON, so ``1.0`` reads
    and ``1.5`` does not); raises :class:`InputRefused` naming ``what`` and the text otherwise."""
    from qsolve.receipts.strict_json import Unreadable, read_value
    from qsolve.receipts.values import MAX_WHOLE, whole

    try:
        n = whole(read_value(text))
    except Unreadable:
        n = None
    if n is None or not 0 <= n <= MAX_WHOLE:
        raise InputRefused(f"{what} {text}: not a whole number of milliseconds from 0 to 2^53 - 1")
    return n


def held_time(
    at: str | None, skew: str | None, *, at_name: str = "--at", skew_name: str = "--skew-ms"
) -> tuple[int | None, int]:
    """(the time in milliseconds, or None; the allowance, 0 unless given) from ``at`` (a number of
    milliseconds since 1970, or ``now``) and ``skew``, each None when not given. An allowance needs a
    time; each input is named in a refusal by its name (the command's option or the page's field)."""
    at_ms = None
    if at is not None:
        at_ms = time.time_ns() // 1_000_000 if at == "now" else milliseconds(at, at_name)
    skew_ms = 0
    if skew is not None:
        if at_ms is None:
            raise InputRefused(f"{skew_name} is the allowance of {at_name}: give a time with it")
        skew_ms = milliseconds(skew, skew_name)
    return at_ms, skew_ms


def plain(name: str, verdict: Verdict) -> str:
    """The verdict for a person: valid or not, each reason with what it means, and what was found."""
    from qsolve.receipts.reasons import BY_CODE

    if verdict.valid:
        lines = [f"{name}: valid"]
    elif verdict.reasons:
        lines = [f"{name}: not valid: {', '.join(verdict.reasons)}"]
    else:
        lines = [f"{name}: not called valid: it needs rules not checked here"]
    for code in verdict.reasons:
        reason = BY_CODE.get(code)
        lines.append(f"  {code}: {verdict.why or (reason.when if reason else '')}")
    for u in verdict.unchecked:
        lines.append(f"  not checked ({u.rules}): {u.why}")
    if verdict.form:
        lines.append(f"  receipt: {verdict.form} form, key {verdict.key}")
    t = verdict.time
    if t is not None:
        if t["sealed"]:
            end = t["not_after_ms"]
            lines.append(f"  time: issued {t['issued_ms']} ms" + (f", offered until {end} ms" if end else ""))
        else:
            lines.append("  time: none sealed (it can be placed in no window that ends)")
    trust = verdict.trust
    if trust.get("held") is False:
        lines.append("  trust: held to no list")
    elif trust.get("listed"):
        lines.append("  trust: listed")
    elif trust.get("listed") is False:
        lines.append("  trust: not listed")
    if verdict.checked_at_ms is not None:
        lines.append(f"  checked at {verdict.checked_at_ms} ms, allowance {verdict.skew_ms} ms")
    p = verdict.provider
    if p is not None:
        said = f"  provider's result: {p.form} form, class by provenance {p.class_ or 'none'}"
        if p.form == "stated":
            stated_by = p.execution.get("stated_by") if isinstance(p.execution, dict) else None
            said += f", counts from {p.counts_source}, execution stated by {stated_by}"
        lines.append(said)
        lines.extend(f"  {note}" for note in p.notes)
    return "\n".join(lines)
