"""The state database (DESIGN.md §6): workflows, versions, runs, credit accounts and ledger, quotes.

SQLite at ``QSOLVE_HOME/state.db`` by default, PostgreSQL through ``QSOLVE_DATABASE_URL``; migrated on
connect. See docs/storage.md, "State database and credits".

_config     where the state lives; the price table and the per-run limits (CreditSettings)
_engine     engines: SQLite for several processes at once, PostgreSQL through psycopg 3
_migrate    alembic migrations (``migrations/``), applied on connect
_tables     the tables, in SQLAlchemy Core
_models     runs' vocabulary (sources, statuses, failure reasons) and the values handed out
_db         connect(), StateDB: versions and runs
_ledger     credits: grants, holds, settlement, stale holds
_errors     the error tree
"""

from storage.state._config import DEFAULT_PRICES, CreditSettings, Price, qsolve_home
from storage.state._db import StateDB, connect
from storage.state._errors import (
    CreditError,
    InsufficientCredits,
    NoHold,
    NotFound,
    RunStateError,
    StateError,
    UnpricedTarget,
    VersionConflict,
)
from storage.state._ledger import SYSTEM_ACCOUNT
from storage.state._models import (
    PLATFORM_REASONS,
    WORKFLOW_REASONS,
    FailureReason,
    Hold,
    QuoteStatus,
    Run,
    RunLimits,
    RunStatus,
    Settlement,
    Source,
    Transfer,
    Version,
)

__all__ = [
    "DEFAULT_PRICES",
    "PLATFORM_REASONS",
    "SYSTEM_ACCOUNT",
    "WORKFLOW_REASONS",
    "CreditError",
    "CreditSettings",
    "FailureReason",
    "Hold",
    "InsufficientCredits",
    "NoHold",
    "NotFound",
    "Price",
    "QuoteStatus",
    "Run",
    "RunLimits",
    "RunStateError",
    "RunStatus",
    "Settlement",
    "Source",
    "StateDB",
    "StateError",
    "Transfer",
    "UnpricedTarget",
    "Version",
    "VersionConflict",
    "connect",
    "qsolve_home",
]
