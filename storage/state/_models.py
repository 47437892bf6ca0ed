"""What the state database hands out: plain, frozen values, and the run's vocabulary.

The failure reasons are the seed's (benchmarks-and-gates.md, "How they run", step 5): six say nothing
about the workflow and are never recorded; ``crash`` and ``timeout`` are the workflow's own and are
recorded as failed runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_CEILING, Decimal
from enum import StrEnum
from typing import Any

MICRO = 1_000_000  # the ledger counts micro-credits, as integers, on every backend

Credits = Decimal | int | float | str  # what the API takes as an amount of credits


class Source(StrEnum):
    """Why a run exists: the history stage after publication, or a confirmed hardware quote."""

    HISTORY = "history"
    HARDWARE = "hardware"


class RunStatus(StrEnum):
    CREATED = "created"  # priced and held, or waiting for its hold; not started
    RUNNING = "running"
    FINISHED = "finished"  # ran to a result (which may pass or fail its case)
    FAILED = "failed"  # stopped, with a FailureReason


class FailureReason(StrEnum):
    PLATFORM_ERROR = "platform_error"
    BACKEND_UNAVAILABLE = "backend_unavailable"
    RUN_TOO_LARGE = "run_too_large"
    INSUFFICIENT_CREDITS = "insufficient_credits"
    UNSUPPORTED_TARGET = "unsupported_target"
    CANCELLED = "cancelled"
    CRASH = "crash"
    TIMEOUT = "timeout"


WORKFLOW_REASONS = frozenset({FailureReason.CRASH, FailureReason.TIMEOUT})
PLATFORM_REASONS = frozenset(FailureReason) - WORKFLOW_REASONS


class ProviderJobStatus(StrEnum):
    """A provider job's life (quantum-provider-protocol §5.7): recorded before it is submitted, its id as
    soon as it is known. ``submitting`` that never became ``submitted`` is a submit that did not
    complete: the provider may have taken it, so it is never sent again without the person's word."""

    RECORDED = "recorded"  # compiled, checked, priced and confirmed; not sent yet
    SUBMITTING = "submitting"  # the submit was sent; no answer read yet
    SUBMITTED = "submitted"  # the provider gave its id
    DONE = "done"  # its counts read, checked and sealed
    FAILED = "failed"  # the provider said it failed, or its answer was refused (nothing sealed)
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class ProviderJob:
    id: str
    provider: str
    run_id: str | None
    status: ProviderJobStatus
    job: str | None
    shots: int
    seed: int | None
    program: dict[str, Any]
    description: dict[str, Any]
    context: dict[str, Any]
    answer: dict[str, Any] | None
    receipt: str | None
    error: str | None
    polls: int
    created_at: datetime
    submitted_at: datetime | None
    finished_at: datetime | None


class EvaluationStatus(StrEnum):
    """An evaluation run's, and each of its records': pending, running, then one of the four ends."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # its owner's heartbeat went stale: it stopped without saying so
    CANCELLED = "cancelled"


class QuoteStatus(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    REFUSED = "refused"
    EXPIRED = "expired"


def to_micro(credits: Credits) -> int:
    """Credits as whole micro-credits, rounded up (a price is never rounded in the payer's favour)."""
    value = Decimal(str(credits)) if isinstance(credits, float) else Decimal(credits)
    if not value.is_finite():
        raise ValueError(f"credits must be a finite number, not {credits!r}")
    return int((value * MICRO).to_integral_value(rounding=ROUND_CEILING))


def from_micro(micro: int) -> Decimal:
    """Micro-credits as credits, without trailing zeros (``Decimal('2.5')``, ``Decimal('50')``)."""
    credits = Decimal(micro) / MICRO
    return credits.quantize(Decimal(1)) if credits == credits.to_integral_value() else credits.normalize()


@dataclass(frozen=True)
class Version:
    """A published version of a workflow; its hardware cases are fixed, inputs written inline."""

    id: int
    workflow: str
    version: str
    digest: str
    published_at: datetime
    hardware_cases: list[dict[str, Any]]
    account: str | None = None  # who published it; None before names had owners (issue 33)


@dataclass(frozen=True)
class Run:
    """One platform run of one case on one target."""

    id: str
    version_id: int
    workflow: str
    version: str
    case_name: str
    target: str
    source: Source
    status: RunStatus
    reason: FailureReason | None
    detail: str | None
    result: dict[str, Any] | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    estimated_credits: Decimal | None
    actual_credits: Decimal | None
    filed_at: datetime | None
    stage_id: int | None = None  # the history stage (and round) it runs in
    case_index: int | None = None  # the case's position in its section of cases.yaml
    owner: str | None = None  # the process keeping it alive (a Lease's token)
    lease_expires_at: datetime | None = None  # lapsed: its owner stopped; ended platform_error
    deadline_at: datetime | None = None  # past it the run is ended, whatever its lease says

    @property
    def done(self) -> bool:
        return self.status in (RunStatus.FINISHED, RunStatus.FAILED)

    @property
    def recordable(self) -> bool:
        """Finished, or failed through the workflow's own fault: the track record keeps it."""
        return self.status is RunStatus.FINISHED or self.reason in WORKFLOW_REASONS


@dataclass(frozen=True)
class Stage:
    """A history stage of a version: round 1, then one more for each run ``again``; held by one owner
    at a time, whose lease keeps it; ``finished_at`` once every case it could run has run."""

    id: int
    version_id: int
    round: int
    owner: str
    lease_expires_at: datetime
    started_at: datetime
    finished_at: datetime | None


class ClaimStatus(StrEnum):
    CLAIMED = "claimed"  # a new round: every case to run
    RESUMED = "resumed"  # the round's earlier owner stopped, or some cases have no recordable run
    IN_PROGRESS = "in progress"  # another owner holds the round and is alive
    RECORDED = "already recorded"  # every case of the round has a recordable run


@dataclass(frozen=True)
class Claim:
    """What claiming a version's history stage gave: the stage (``None`` when in progress by another
    owner), and the positions of the cases this owner is to run."""

    status: ClaimStatus
    stage: Stage | None
    todo: tuple[int, ...] = ()
    ended: tuple[str, ...] = ()  # runs of the version ended platform_error, their lease lapsed

    @property
    def held(self) -> bool:
        return self.status in (ClaimStatus.CLAIMED, ClaimStatus.RESUMED)


@dataclass(frozen=True)
class RunLimits:
    """What one run may take: credits, and seconds (``None``: the workflow's own time limit)."""

    credits: Decimal
    seconds: int | None


@dataclass(frozen=True)
class Hold:
    """Credits set aside for a run before it starts; ``closed`` once settled or released."""

    run_id: str
    account: str
    amount: Decimal
    created_at: datetime
    closed: bool


@dataclass(frozen=True)
class Settlement:
    """How a hold ended: ``charged`` went to the platform, ``released`` back to the account."""

    run_id: str
    account: str
    held: Decimal
    charged: Decimal
    released: Decimal


@dataclass(frozen=True)
class Transfer:
    """One movement of credits: two ledger entries, ``-amount`` from one account, ``+amount`` to another."""

    id: int
    kind: str
    run_id: str | None
    source: str
    destination: str
    amount: Decimal
    created_at: datetime
