"""A provider's own price for a run's jobs: asked of its ``estimate`` when a quote is made, shown beside
the platform's credits, authorised by the quote's confirmation, and held to before each job of the run
is sent (quantum-provider-protocol §1.2, §5.2, §7; issue 21, items 1-2).

A workflow's circuits are made while it runs, so the jobs a hardware case sends cannot all be known when
it is quoted. What is known is its ``estimate()``: how many circuits (one provider job each) and how many
shots in all. The quote asks the provider's ``estimate`` for the largest job those counts allow (§6's
probe, compiled to the device as every program is, at every shot but one for each other job) and takes
each job to cost at most that: the total is the jobs times it, and the confirmation is a cap
(:class:`Authority`):

- a job whose own estimate, asked just before its ``submit``, is higher than the quote's price of a job,
  in another currency, or of a form the quote did not show (an unknown cost where a price was shown, an
  ``at_least`` amount where an exact one was), is not sent;
- nor is a job that would take the run's provider total past the authorised total.

A free estimate needs no confirmation. An unknown cost (no estimate, the unpriced form, an estimate of no
form, or a workflow that gives no ``estimate()``) is shown as unknown and confirmed only by a person shown
that it is unknown; its jobs may then be of unknown cost, and a job priced after all is held to no figure
the person saw, so it is not sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import MAX_PREC, Decimal, localcontext
from typing import Any

from qsolve.providers.jobs import CostRefused

#: the most qubits the pricing probe measures: its compile check at 20 took 6.5 s on a 24-qubit line here,
#: at 12 0.17 s, and a quote compiles one per case
PROBE_QUBITS = 12


def _amount(text: str) -> Decimal:
    return Decimal(text)


def _exact(value: Decimal) -> str:
    """An amount as a decimal string (§5.2: digits, optionally a point and digits), never an exponent."""
    return format(value, "f")


def quote_cost(client, description: Mapping[str, Any], *, circuits: int | None, shots: int | None) -> dict:
    """What a quote shows of a provider's own price for a case of ``circuits`` jobs and ``shots`` shots in
    all: ``{"cost": "free" | "priced" | "unknown", "jobs", "shots_each", "each", "total", "assumes",
    "note"}``, ``each`` being the provider's estimate as shown and sealed (§8.1 ``cost.estimate``)."""
    from qsolve.providers.compiler import CompileError, compile_circuit, probe
    from qsolve.providers.errors import ProviderError
    from qsolve.providers.messages import Description

    if circuits is None or shots is None or circuits < 1:
        return {
            "cost": "unknown",
            "jobs": None,
            "note": "the workflow gives no estimate() of its jobs: the provider's cost of the run is unknown",
        }
    each_shots = max(1, shots - (circuits - 1))
    try:
        described = Description.model_validate(dict(description))
        if described.max_shots is not None:  # no job of the run can be larger than the device takes
            each_shots = min(each_shots, described.max_shots)
        device = described.device()
        width = min(len(device.computational_qubits), PROBE_QUBITS)
        program = compile_circuit(probe(width), device).program.model_dump(mode="json", exclude_none=True)
    except (CompileError, ValueError) as e:
        return {"cost": "unknown", "jobs": circuits, "note": f"no job could be priced: {e}"}
    assumes = (
        f"{circuits} jobs (the workflow's estimate()), each at most the provider's estimate for the largest "
        f"job its {shots} shots allow ({each_shots} shots; §6's probe on {width} qubits): a cap, since the "
        "circuits are made as the workflow runs; each job's own estimate is asked again before it is sent, "
        "and one past this is not sent"
    )
    try:
        estimate = client.estimate(program, each_shots)
    except ProviderError as e:
        if e.code != "unsupported":
            return {"cost": "unknown", "jobs": circuits, "note": f"estimate failed: {e}"}
        from qsolve.providers.messages import read_billing

        billing = read_billing(description.get("billing"))
        if billing.kind == "free":
            return {
                "cost": "free",
                "jobs": circuits,
                "shots_each": each_shots,
                "assumes": assumes,
                "each": {"free": True, "note": "no estimate: the device's billing says it is free"},
            }
        return {
            "cost": "unknown",
            "jobs": circuits,
            "shots_each": each_shots,
            "assumes": assumes,
            "note": billing.without_estimate(),
        }
    shown = estimate.shown()
    out: dict[str, Any] = {"jobs": circuits, "shots_each": each_shots, "each": shown, "assumes": assumes}
    if estimate.kind == "free":
        return out | {"cost": "free"}
    if estimate.kind != "priced":
        return out | {"cost": "unknown", "note": shown.get("unknown", "no price is set")}
    with localcontext(prec=MAX_PREC):  # exact: a huge amount is neither rounded nor written as 5.3E+41
        total = _amount(estimate.amount) * circuits
    out["total"] = {"amount": _exact(total), "currency": estimate.currency, "jobs": circuits}
    out["cost"] = "priced"
    if estimate.at_least:
        out |= {"cost": "unknown", "note": f"the provider says each job costs at least {estimate.amount}"}
    return out


def _billed(each: Mapping[str, Any]) -> str:
    """The billing unit the provider's estimate says its cost counts (§5.2 ``unit``), as said after it."""
    return f", billed by the {each['unit']}" if each.get("unit") else ""


def provider_cost(provider: Mapping[str, Any] | None) -> Any:
    """``qsolve quote --json``'s ``provider_cost``: ``None`` when free, ``"unknown"``, or
    ``{"amount", "currency", "jobs", "each"}`` for the total, with ``unit``, the billing unit the
    provider's estimate counts, when it states one."""
    if not provider or provider.get("cost") == "free":
        return None
    total = provider.get("total")
    if provider.get("cost") != "priced" or not total:
        return "unknown"
    each = provider["each"]
    return dict(total) | {"each": each["amount"]} | ({"unit": each["unit"]} if each.get("unit") else {})


def cost_text(provider: Mapping[str, Any]) -> str:
    """The provider's price as a person is shown it."""
    cost = provider.get("cost")
    if cost == "free":
        return "the device is free (the provider's estimate says so)"
    each, total = provider.get("each") or {}, provider.get("total")
    if total:
        least = "at least " if each.get("at_least") else ""
        shown = (
            f"the provider's price: {least}{each['amount']} {each['currency']} a job, "
            f"{least}{total['amount']} {total['currency']} for {total['jobs']} jobs{_billed(each)}"
        )
        return shown + (" (so the cost is unknown)" if cost == "unknown" else "")
    return "the provider's cost is unknown" + (f" ({provider['note']})" if provider.get("note") else "")


def authorised_text(provider: Mapping[str, Any] | None) -> str:
    """What a confirmation authorises of the provider's money, as said before it is given."""
    if not provider or provider.get("cost") == "free":
        return "no provider money (its estimates say free; a job priced at the run is not sent)"
    total = provider.get("total")
    if provider.get("cost") == "priced" and total:
        each = provider["each"]
        return (
            f"at most {total['amount']} {total['currency']} of the provider's money ({each['amount']} "
            f"{each['currency']} a job, {total['jobs']} jobs{_billed(each)})"
        )
    return "a cost that is unknown: the provider may bill the person's account any amount"


@dataclass
class Authority:
    """What a quote's confirmation authorised of a provider's money, held to before each job is sent."""

    quote: str
    provider: Mapping[str, Any]  # the quote's provider cost, as shown
    spent: Decimal = Decimal(0)
    sent: int = 0
    allowed: list[str] = field(default_factory=list)

    @property
    def confirmed_by(self) -> str:
        return f"quote {self.quote}"

    def admit(self, name: str, estimate: Mapping[str, Any], free: bool) -> str | None:
        """Allow one more job of this estimate, or raise CostRefused; how its cost was confirmed (None
        for a free job, which needs no confirmation)."""
        if free:
            self.sent += 1
            return None
        job = self.sent + 1
        cost = self.provider.get("cost")
        each, total = self.provider.get("each") or {}, self.provider.get("total")
        if "amount" not in estimate:  # a cost unknown
            if cost == "unknown" and not total:
                self.sent += 1
                return self.confirmed_by
            self._refuse(name, job, f"its cost is unknown ({estimate.get('unknown')})")
        amount, currency = _amount(estimate["amount"]), estimate["currency"]
        said = f"{'at least ' if estimate.get('at_least') else ''}{estimate['amount']} {currency}"
        if not total:
            self._refuse(name, job, f"it costs {said}, and no provider price was shown in the quote")
        if currency != each.get("currency"):
            self._refuse(
                name, job, f"it costs {said}, in another currency than the quote's {each['currency']}"
            )
        if estimate.get("at_least") and not each.get("at_least"):
            self._refuse(name, job, f"it costs {said}: only the least it can come to")
        if amount > _amount(each["amount"]):
            self._refuse(
                name, job, f"it costs {said}, more than the {each['amount']} {currency} quoted a job"
            )
        with localcontext(prec=MAX_PREC):  # exact, however many digits the provider's amounts have
            after = self.spent + amount
        if after > _amount(total["amount"]):
            self._refuse(
                name, job, f"it costs {said}, which would take the run's provider total to {_exact(after)}"
            )
        self.spent = after
        self.sent += 1
        return self.confirmed_by

    def _refuse(self, name: str, job: int, why: str) -> None:
        raise CostRefused(
            f"provider {name}: estimate: job {job} of the run was not sent: {why}; quote {self.quote} "
            f"authorised {authorised_text(self.provider)}, and the run stopped"
        )
