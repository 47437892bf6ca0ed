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
_leases     leases: a process's token keeps its runs alive; lapsed runs ended, holds released
_stages     history stages: one per version and round, claimed in the database
_provider_jobs  provider jobs recorded before they are sent, followed from any process
_quotes     hardware quote batches: one open per workflow, each quote confirmed on its own
_calibration    calibration task results (issue 14), figures as blobs
_evaluations    evaluation runs, their records, reviewers' verdicts, figure assets
_accounts   people of the web pages: logins, roles (developer, editor, reviewer), sessions; a
            workflow name's developers (who may publish it)
_credit_table   the credit prices and limits every machine reads (qsolve credits price|limit|import)
_host_keys  every host's receipt public key, a trust list; retired and revoked keys
_holders    which host's workers hold which provider (a Prefect work queue each)
_provider_owners  which account holds each provider, and whom it allows (accounts, workflows' quotes)
_binding    the storage the database was first used with; claims (one machine at a time)
_trackrecord_files  the track record's data files by name and content: what a pass trusts
_blob_sizes every blob's size by its digest: what a read of it stops at
_trackrecord_log  the track record's signed append-only log and its live set: what readers read (its
            entries' form: qsolve.receipts.trackrecord_log)
_errors     the error tree
"""

from qsolve_pipeline.storage.state._accounts import AccountExists, LoginAccount, OpenedSession
from qsolve_pipeline.storage.state._config import DEFAULT_PRICES, CreditSettings, Price, qsolve_home
from qsolve_pipeline.storage.state._db import StateDB, connect
from qsolve_pipeline.storage.state._errors import (
    CaseTaken,
    CreditError,
    CreditsMoved,
    InsufficientCredits,
    NameOwned,
    NoHold,
    NotFound,
    PlatformAccount,
    RunStateError,
    SettingsDiffer,
    StageLost,
    StateError,
    StorageMismatch,
    UnpricedTarget,
    VersionConflict,
    VersionOrder,
)
from qsolve_pipeline.storage.state._holders import STALE_AFTER as HOLDER_STALE_AFTER
from qsolve_pipeline.storage.state._host_keys import HostKeyRecord
from qsolve_pipeline.storage.state._leases import Lease, lease_seconds
from qsolve_pipeline.storage.state._ledger import PLATFORM_ACCOUNTS, SYSTEM_ACCOUNT
from qsolve_pipeline.storage.state._models import (
    PLATFORM_REASONS,
    WORKFLOW_REASONS,
    Claim,
    ClaimStatus,
    EvaluationStatus,
    FailureReason,
    Hold,
    ProviderJob,
    ProviderJobStatus,
    QuoteStatus,
    Run,
    RunLimits,
    RunStatus,
    Settlement,
    Source,
    Stage,
    Transfer,
    Version,
)
from qsolve_pipeline.storage.state._provider_owners import ProviderHeld, ProviderHolding, ProviderNotAllowed
from qsolve_pipeline.storage.state._quotes import BatchInProgress, Quote, QuoteBatch, QuoteRefused

__all__ = [
    "DEFAULT_PRICES",
    "HOLDER_STALE_AFTER",
    "PLATFORM_ACCOUNTS",
    "PLATFORM_REASONS",
    "SYSTEM_ACCOUNT",
    "WORKFLOW_REASONS",
    "AccountExists",
    "BatchInProgress",
    "CaseTaken",
    "Claim",
    "ClaimStatus",
    "CreditError",
    "CreditSettings",
    "CreditsMoved",
    "EvaluationStatus",
    "FailureReason",
    "Hold",
    "HostKeyRecord",
    "InsufficientCredits",
    "Lease",
    "LoginAccount",
    "NameOwned",
    "NoHold",
    "NotFound",
    "OpenedSession",
    "PlatformAccount",
    "Price",
    "ProviderHeld",
    "ProviderHolding",
    "ProviderJob",
    "ProviderJobStatus",
    "ProviderNotAllowed",
    "Quote",
    "QuoteBatch",
    "QuoteRefused",
    "QuoteStatus",
    "Run",
    "RunLimits",
    "RunStateError",
    "RunStatus",
    "SettingsDiffer",
    "Settlement",
    "Source",
    "Stage",
    "StageLost",
    "StateDB",
    "StateError",
    "StorageMismatch",
    "Transfer",
    "UnpricedTarget",
    "Version",
    "VersionConflict",
    "VersionOrder",
    "connect",
    "lease_seconds",
    "qsolve_home",
]
