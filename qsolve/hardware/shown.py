"""What a person is shown of a quote (issue 13): its line, the device's cost, what confirming it
authorises, and a price above the per-run limit; the command line, the flow's confirmation form and the
web pages say the same."""

from __future__ import annotations

from typing import Any


def over_limit(quote, limit) -> str:
    """What a person must be told of a quote priced above the per-run limit, else ''."""
    if quote.price <= limit:
        return ""
    import math

    enough = math.ceil(quote.price)
    raise_it = f"qsolve credits limit {enough} (every machine)"
    return (
        f"its price {quote.price} is above the per-run limit of {limit} credits: confirmed, the run stops "
        f"(run_too_large, not recorded) before the job that would pass {limit}; to raise the limit before "
        f"confirming: {raise_it}"
    )


def provider_cost_of(quote) -> Any:
    """``qsolve quote --json``'s ``provider_cost``: ``None`` when the device's jobs are free, ``"unknown"``,
    or ``{"amount", "currency", "jobs", "each"}``, the provider's total in its own currency."""
    if "provider" in quote.estimate:
        from qsolve.providers.cost import provider_cost

        return provider_cost(quote.estimate["provider"])
    return "unknown" if quote.unknown_cost else None


def authorises(quote, limit) -> str:
    """What confirming ``quote`` authorises, said before it is given: credits and the provider's money."""
    said = f"at most {min(quote.price, limit)} credits"
    if "provider" in quote.estimate:
        from qsolve.providers.cost import authorised_text

        said += f" and {authorised_text(quote.estimate['provider'])}"
    elif quote.unknown_cost:
        said += f" and a cost on {quote.target} that is unknown: it can spend your money there"
    return said


def device_cost(quote) -> str:
    """What the device says of its cost: free, its rate, or that it is unknown (and why); on a provider,
    its own estimate of the run's jobs, per job and in total."""
    if "provider" in quote.estimate:
        from qsolve.providers.cost import cost_text

        return cost_text(quote.estimate["provider"])
    device = quote.estimate.get("device", {})
    return {
        "free": "the device is free",
        "priced": f"the device bills {device.get('rate')}",
        "unknown": "the cost is unknown" + (f" ({device['note']})" if device.get("note") else ""),
    }.get(device.get("cost"), "")


def describe(quote) -> str:
    """What a person is shown of a quote before confirming it, the version it runs named (issue 33)."""
    e = quote.estimate
    said = (
        f"{e['circuits']} circuits, {e['shots']} shots"
        if e.get("circuits") is not None
        else e.get("note", "")
    )
    cost = device_cost(quote)
    valid = f", valid until {quote.valid_until:%Y-%m-%d %H:%M:%S} UTC" if quote.valid_until else ""
    if getattr(quote, "holder", None) and (awaiting := quote.awaiting):
        valid += f", awaiting the confirmation of {awaiting}"
    return f"{heading(quote)}: {said}; {quote.price} credits; {cost} [{quote.status.value}{valid}]"


def heading(quote) -> str:
    """The quote, the workflow version it runs, its case and target: what every quote line starts with."""
    return f"{quote.id}  {quote.workflow} {quote.version}: {quote.case_name} on {quote.target}"


def holder_line(quote) -> str:
    """What a quote on another account's provider says of its holder's confirmation, else ''."""
    if not getattr(quote, "holder", None):
        return ""
    return (
        f"the provider's money is {quote.holder}'s: its run starts only once {quote.holder} confirms it too "
        f"(qsolve confirm {quote.id} --account {quote.holder}, or on the web pages as {quote.holder})"
    )
