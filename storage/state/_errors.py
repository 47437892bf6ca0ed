"""The state database's errors, grouped by what callers catch.

    StateError                  (a QsolveError)
    ├── NotFound                no such workflow version, run or account
    ├── VersionConflict         other content under a version number already published
    │   └── VersionOrder        a version not above the name's highest, or not a semantic version
    ├── NameOwned               a name published for an account that is not one of its developers
    ├── PlatformAccount         the ledger's own accounts: no login, no role, no publication
    ├── RunStateError           a run asked to move in a way its status forbids
    │   └── CaseTaken           a history case that already has a live or recordable run in its round
    ├── StageLost               a history stage whose lease its owner lost (it lapsed; another took it)
    ├── StorageMismatch         a home whose storage is not the one the database was first used with
    └── CreditError
        ├── InsufficientCredits the account cannot cover the hold; the run failed `insufficient_credits`
        ├── NoHold              settlement of a run that holds nothing
        ├── UnpricedTarget      no price for the target in the price table
        ├── CreditsMoved        a credits.toml or QSOLVE_CREDITS_* variable: the settings are in the database
        └── SettingsDiffer      an import that would undo settings the database holds (each named)

Each error carries its subject, and survives pickling (Prefect moves errors between processes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from decimal import Decimal

from qsolve.errors import QsolveError, RecordNotFound, RecordStateError
from qsolve_pipeline.storage.state._models import FailureReason


def _rebuild(cls: type, values: dict) -> StateError:
    return cls(**values)


@dataclass
class StateError(QsolveError):
    """Base of every error the state database raises on purpose."""

    def __reduce__(self):
        return _rebuild, (type(self), {f.name: getattr(self, f.name) for f in fields(self)})


@dataclass
class NotFound(StateError, RecordNotFound):
    kind: str = ""
    key: str = ""


@dataclass
class VersionConflict(StateError):
    workflow: str = ""
    version: str = ""
    published_digest: str = ""
    digest: str = ""


@dataclass
class VersionOrder(VersionConflict):
    """A new version not above the name's highest published one (semver precedence), or not a semantic
    version at all: versions only go up (issue 33, item 1)."""

    highest: str = ""


@dataclass
class NameOwned(StateError):
    """A version published for an account that is neither a developer of the name nor an admin."""

    workflow: str = ""
    account: str = ""
    developers: list[str] = field(default_factory=list)


@dataclass
class PlatformAccount(StateError):
    """The ledger's own accounts (``system``, ``ledger:*``) act for nobody: no login, no role, no name."""

    account: str = ""


@dataclass
class RunStateError(StateError, RecordStateError):
    run_id: str = ""
    status: str = ""


@dataclass
class CaseTaken(RunStateError):
    stage_id: int = 0
    case_index: int = 0


@dataclass
class StageLost(StateError):
    stage_id: int = 0
    owner: str = ""


@dataclass
class StorageMismatch(StateError):
    recorded: str = ""
    storage: str = ""


@dataclass
class CreditError(StateError):
    """A credit operation that cannot be carried out."""


@dataclass
class InsufficientCredits(CreditError):
    account: str = ""
    run_id: str = ""
    needed: Decimal = Decimal(0)
    available: Decimal = Decimal(0)
    reason: FailureReason = FailureReason.INSUFFICIENT_CREDITS


@dataclass
class NoHold(CreditError):
    run_id: str = ""


@dataclass
class UnpricedTarget(CreditError):
    target: str = ""


@dataclass
class CreditsMoved(CreditError):
    """Credit settings found where they once were (a ``credits.toml``, a ``QSOLVE_CREDITS_*`` variable):
    refused, the message saying what to run. The command line prints it as one line (exit 2)."""

    source: str = ""
    usage = True  # qsolve.cli prints such an error as one line, exit 2


@dataclass
class SettingsDiffer(CreditError):
    """An import whose file sets values other than those the state database holds (set since, on some
    machine): ``differ`` names each, with the database's value and the file's."""

    differ: list[tuple[str, str, str]] = field(default_factory=list)
