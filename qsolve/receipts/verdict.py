"""What a verifier answers (quantum-provider-protocol §8.4, §8.8): its reasons as a set, and what it found.

A job is valid exactly when there is no reason and every rule it needs was run: a job carrying members
whose rules are not run here (``unchecked``) is never called valid. Beside the reasons a verdict states
the receipt's form and key, its time (``{"sealed": true, "issued_ms", "not_after_ms"}`` or
``{"sealed": false}``), what it was held to (``trust``: ``{"held": false}`` with no list, else the entry
or ``{"listed": false}``; ``checked_at_ms`` and ``skew_ms`` with a time), and for a provider's result its
class as its provenance reads it, its counts' source and its ``execution``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ReadAtMost(BaseModel):
    """How much a surface reads of a job (``too_large``, §8.4)."""

    model_config = ConfigDict(frozen=True)

    bytes: int
    values: int


class UncheckedRules(BaseModel):
    """Rules this job needs that were not run, and why."""

    rules: str
    reasons: list[str] = Field(default_factory=list)
    why: str


class ProviderStated(BaseModel):
    """What a verifier states of a provider's result (§8.4, §8.5)."""

    model_config = ConfigDict(populate_by_name=True)

    form: Literal["stated", "earlier"]
    class_: str | None = Field(alias="class")
    """Its class as its provenance reads it: ``measured``, ``simulated`` or none."""
    counts_source: Any = None
    execution: Any = None
    counts_word: Literal["host", "provider"] | None = None
    """Whose word the counts' source and ``accepted_shots`` are: a built-in kind's client (the host's) or
    the provider's (``http``, ``process``), read from ``provider.kind`` (§8.3)."""
    notes: list[str] = Field(default_factory=list)


class Verdict(BaseModel):
    """A verifier's answer on one job."""

    model_config = ConfigDict(populate_by_name=True)

    valid: bool
    reasons: list[str]
    why: str | None = None
    """Why a job reported alone (``unreadable``, ``too_large``, ...) was refused."""
    unchecked: list[UncheckedRules] = Field(default_factory=list)
    form: Literal["first", "canonical"] | None = None
    key: str | None = None
    time: dict[str, Any] | None = None
    trust: dict[str, Any] = Field(default_factory=lambda: {"held": False})
    checked_at_ms: int | None = None
    skew_ms: int | None = None
    provider: ProviderStated | None = None
    set_: dict[str, Any] | None = Field(default=None, alias="set")
    read_at_most: ReadAtMost

    def as_json(self) -> dict[str, Any]:
        """The verdict as one JSON object; members with nothing to state are left out, except ``time``
        and ``trust``, which are always stated."""
        out = self.model_dump(mode="json", by_alias=True)
        for name in ("why", "form", "key", "checked_at_ms", "skew_ms", "provider", "set"):
            if out[name] is None:
                del out[name]
        if not out["unchecked"]:
            del out["unchecked"]
        return out
