"""The tables, in SQLAlchemy Core. The migrations in ``migrations/versions/`` build the same schema.

Credits are integers of micro-credits. The ledger is double-entry: a transfer is one movement and owns
exactly two entries, ``-amount`` and ``+amount``; a balance is the sum of an account's entries and is
stored nowhere else. A run has at most one transfer of each kind (hold, charge, release): that unique
constraint is what makes settling twice take nothing twice, across processes and machines.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect

from qsolve_pipeline.storage.roles import ROLES
from qsolve_pipeline.storage.state._models import (
    EvaluationStatus,
    FailureReason,
    ProviderJobStatus,
    QuoteStatus,
    RunStatus,
    Source,
)


class UTCDateTime(sa.TypeDecorator):
    """An aware UTC datetime on every backend (SQLite keeps naive text, so the zone is put back)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass an aware one")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class JSONDocument(sa.TypeDecorator):
    """A JSON document (JSONB on PostgreSQL), read back exactly as it was written on both backends.

    JSONB holds no U+0000 and no lone surrogate (a model's answer may hold either), and a JSON text's
    ``\\ud83d\\ude00`` reads back as one character where two were written; so a document holding U+0000
    or any surrogate is stored as ``{ESCAPED: its JSON text, UTF-8 with surrogates passed, in base64}``
    and unwrapped on read, and so is an object that has that key itself, so that no stored document is
    taken for another. Every other document is stored as it is (SQL reads into it)."""

    impl = sa.JSON
    cache_ok = True
    should_evaluate_none = True  # None is JSON null, as sa.JSON keeps it

    #: the one key of a document stored escaped
    ESCAPED = "qsolve:json-utf8-base64"
    #: what is not kept as written, in the text json.dumps writes (a NUL is written as its escape)
    UNSTORABLE = re.compile(r"\\u0000|[\ud800-\udfff]")

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine:
        return dialect.type_descriptor(postgresql.JSONB() if dialect.name == "postgresql" else sa.JSON())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return value
        text = json.dumps(value, ensure_ascii=False)
        if not self.UNSTORABLE.search(text) and not (isinstance(value, dict) and self.ESCAPED in value):
            return value
        return {self.ESCAPED: base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")}

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(self.ESCAPED), str):
            return json.loads(base64.b64decode(value[self.ESCAPED]).decode("utf-8", "surrogatepass"))
        return value


JSONDoc = JSONDocument()


class Message(sa.TypeDecorator):
    """A message for a person (an error), kept on both backends whatever it quotes: neither PostgreSQL's
    text nor UTF-8 holds U+0000 or a lone surrogate (an endpoint's error body may hold either), so each
    is written as its escape (``\\x00``, ``\\ud800``). The answers themselves are JSON documents, kept
    exactly (:class:`JSONDocument`)."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return value.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite autoincrements INTEGER keys only


def _one_of(column: str, values) -> str:
    return f"{column} IN ({', '.join(repr(str(v)) for v in values)})"


#: a run that holds its case's place in a history stage: live, or ended in a result the track record keeps
SLOT_TAKEN = "stage_id IS NOT NULL AND (status <> 'failed' OR reason IN ('crash', 'timeout'))"

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

workflows = sa.Table(
    "workflows",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

versions = sa.Table(
    "versions",
    metadata,
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("workflow", sa.String(200), sa.ForeignKey("workflows.name"), nullable=False),
    sa.Column("version", sa.String(100), nullable=False),
    sa.Column("digest", sa.String(128), nullable=False),
    sa.Column("published_at", UTCDateTime, nullable=False),
    sa.Column("hardware_cases", JSONDoc, nullable=False),
    # who published it (issue 33, item 1; migration 0012): null for a version published before
    sa.Column("account", sa.String(200), sa.ForeignKey("accounts.name"), nullable=True),
    sa.UniqueConstraint("workflow", "version"),
)

history_stages = sa.Table(
    "history_stages",
    metadata,
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("version_id", Id, sa.ForeignKey("versions.id"), nullable=False),
    sa.Column("round", sa.Integer, nullable=False),  # 1, then one more for each `again`
    sa.Column("owner", sa.String(100), nullable=False),  # the process that holds it (a Lease's token)
    sa.Column("lease_expires_at", UTCDateTime, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.UniqueConstraint("version_id", "round"),
    sa.CheckConstraint("round >= 1", name="round"),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("version_id", Id, sa.ForeignKey("versions.id"), nullable=False),
    sa.Column("case_name", sa.String(200), nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("source", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.String(32), nullable=True),
    sa.Column("detail", sa.Text, nullable=True),
    sa.Column("result", JSONDoc, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=True),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.Column("estimated_microcredits", sa.BigInteger, nullable=True),
    sa.Column("actual_microcredits", sa.BigInteger, nullable=True),
    sa.Column("filed_at", UTCDateTime, nullable=True),
    sa.Column("stage_id", Id, sa.ForeignKey("history_stages.id"), nullable=True),
    sa.Column("case_index", sa.Integer, nullable=True),  # the case's position in its section
    sa.Column("owner", sa.String(100), nullable=True),
    sa.Column("lease_expires_at", UTCDateTime, nullable=True),
    sa.Column("deadline_at", UTCDateTime, nullable=True),  # ended past this, whatever its lease says
    sa.CheckConstraint(_one_of("source", Source), name="source"),
    sa.CheckConstraint(_one_of("status", RunStatus), name="status"),
    sa.CheckConstraint(f"reason IS NULL OR {_one_of('reason', FailureReason)}", name="reason"),
    sa.CheckConstraint("(status = 'failed') = (reason IS NOT NULL)", name="reason_iff_failed"),
    sa.Index(None, "version_id"),
    sa.Index(None, "filed_at", "finished_at"),
    sa.Index(None, "status", "lease_expires_at"),
    # One live or recordable run per case of a history stage's round: a second is refused by the database
    sa.Index(
        "uq_runs_stage_case",
        "stage_id",
        "case_index",
        unique=True,
        sqlite_where=sa.text(SLOT_TAKEN),
        postgresql_where=sa.text(SLOT_TAKEN),
    ),
)

accounts = sa.Table(
    "accounts",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.CheckConstraint("kind IN ('user', 'system', 'ledger')", name="kind"),
)

transfers = sa.Table(
    "transfers",
    metadata,
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id"), nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("memo", sa.Text, nullable=True),
    sa.CheckConstraint("kind IN ('grant', 'hold', 'charge', 'release')", name="kind"),
    sa.CheckConstraint("(kind = 'grant') = (run_id IS NULL)", name="run_iff_not_grant"),
    sa.UniqueConstraint("run_id", "kind"),
    sa.Index(None, "kind", "created_at"),
)

entries = sa.Table(
    "entries",
    metadata,
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("transfer_id", Id, sa.ForeignKey("transfers.id"), nullable=False),
    sa.Column("account", sa.String(200), sa.ForeignKey("accounts.name"), nullable=False),
    sa.Column("microcredits", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("transfer_id", "account"),
    sa.Index(None, "account"),
)

#: a batch still being priced or run: at most one of these per workflow (uq_quote_batches_open)
BATCH_OPEN = "status IN ('pricing', 'open')"

quote_batches = sa.Table(
    "quote_batches",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("workflow", sa.String(200), sa.ForeignKey("workflows.name"), nullable=False),
    sa.Column("version_id", Id, sa.ForeignKey("versions.id"), nullable=False),
    sa.Column("account", sa.String(200), sa.ForeignKey("accounts.name"), nullable=False),
    sa.Column("target", sa.String(200), nullable=True),  # --target, when the cases run on another device
    sa.Column("status", sa.String(16), nullable=False),  # pricing, open (priced), ended
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("ended_at", UTCDateTime, nullable=True),
    sa.CheckConstraint("status IN ('pricing', 'open', 'ended')", name="status"),
    # A request while an earlier batch of the workflow is still being priced or run is refused here
    sa.Index(
        "uq_quote_batches_open",
        "workflow",
        unique=True,
        sqlite_where=sa.text(BATCH_OPEN),
        postgresql_where=sa.text(BATCH_OPEN),
    ),
)

quotes = sa.Table(
    "quotes",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("batch_id", sa.String(32), nullable=False),
    sa.Column("version_id", Id, sa.ForeignKey("versions.id"), nullable=False),
    sa.Column("case_name", sa.String(200), nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("account", sa.String(200), sa.ForeignKey("accounts.name"), nullable=False),
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id"), nullable=True),
    sa.Column("price_microcredits", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("confirmed_at", UTCDateTime, nullable=True),
    sa.Column("case_index", sa.Integer, nullable=True),  # the case's position in hardware_cases
    sa.Column("valid_until", UTCDateTime, nullable=True),  # not confirmed by then: expired
    sa.Column("estimate", JSONDoc, nullable=True),  # {circuits, shots, provider: {...}} as shown
    sa.Column("unknown_cost", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("authorised_microcredits", sa.BigInteger, nullable=True),  # set when confirmed
    # whose confirmation authorised it (issue 33, item 3; migration 0013): the payer's, and on a provider
    # shared with the payer, for a job that is not free, its holder's too (``holder``, set at pricing)
    sa.Column("confirmed_by", sa.String(200), nullable=True),
    sa.Column("holder", sa.String(200), nullable=True),  # whose confirmation it needs besides the payer's
    sa.Column("holder_confirmed_by", sa.String(200), nullable=True),
    sa.Column("holder_confirmed_at", UTCDateTime, nullable=True),
    sa.CheckConstraint(_one_of("status", QuoteStatus), name="status"),
    sa.Index(None, "batch_id"),
    sa.Index(None, "version_id"),
    sa.Index(None, "run_id", unique=True),
)

provider_jobs = sa.Table(
    "provider_jobs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("provider", sa.String(63), nullable=False),
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id"), nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("job", sa.String(200), nullable=True),  # the provider's id, as soon as it is known
    sa.Column("shots", sa.Integer, nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=True),
    sa.Column("program", JSONDoc, nullable=False),  # the program as sent
    sa.Column("description", JSONDoc, nullable=False),  # the describe answer it was compiled against
    sa.Column("context", JSONDoc, nullable=False),  # what sealing needs: request, compiled, cost
    sa.Column("answer", JSONDoc, nullable=True),  # the provider's result answer, as read
    sa.Column("receipt", sa.String(64), nullable=True),  # the sealed job's blob digest
    sa.Column("error", Message, nullable=True),
    sa.Column("polls", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("submitted_at", UTCDateTime, nullable=True),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.CheckConstraint(_one_of("status", ProviderJobStatus), name="status"),
    sa.Index(None, "provider", "job"),
)

calibration_results = sa.Table(
    "calibration_results",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("task", sa.String(100), nullable=False),  # CheckT1
    sa.Column("chip", sa.String(100), nullable=False),  # fake:fez@1.6
    sa.Column("qid", sa.String(32), nullable=False),  # Q03, or Q03-Q04 for a coupling
    sa.Column("day", sa.String(10), nullable=False),  # ISO date
    sa.Column("status", sa.String(16), nullable=False),  # the task run's own status
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("figures", JSONDoc, nullable=False),  # [{name, sha256, media_type, blob}]
    sa.Column("figure_count", sa.Integer, nullable=False),  # so "evaluable" is a query
    sa.Column("sweep", JSONDoc, nullable=True),  # {parameter, unit, start, stop, points, step}
    sa.Column("settings", JSONDoc, nullable=False),  # {shots, interval: {value, unit}}
    sa.Column("outputs", JSONDoc, nullable=False),  # {name: {value, unit, error}}
    sa.Column("fit", JSONDoc, nullable=True),  # {model, r2, reduced_chi2, dof}
    sa.Column("true_status", sa.String(64), nullable=True),  # the known answer, when there is one
    sa.Column("fault", sa.String(100), nullable=True),  # the injected fault
    sa.Column("seed", sa.BigInteger, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.CheckConstraint("status IN ('completed', 'failed')", name="status"),
    sa.Index(None, "chip", "task", "qid", "created_at"),
    sa.Index(None, "day"),
)

evaluation_runs = sa.Table(
    "evaluation_runs",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("trigger", sa.String(16), nullable=False),  # bulk or single
    sa.Column("selection", JSONDoc, nullable=False),  # {task, chip} | {day} | {task_ids}, as requested
    sa.Column("model", sa.String(200), nullable=False),  # the requested (declared) model
    sa.Column("settings", JSONDoc, nullable=False),  # with_examples, knowledge draft, question, ...
    sa.Column("skipped", JSONDoc, nullable=False),  # entities without an evaluable result, and why
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(100), nullable=True),  # the process executing it
    sa.Column("heartbeat_at", UTCDateTime, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=True),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.CheckConstraint(_one_of("status", EvaluationStatus), name="status"),
    sa.CheckConstraint("trigger IN ('bulk', 'single')", name="trigger"),
)

evaluation_records = sa.Table(
    "evaluation_records",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("run_id", sa.String(32), sa.ForeignKey("evaluation_runs.id"), nullable=False),
    sa.Column("task_result_id", sa.String(32), sa.ForeignKey("calibration_results.id"), nullable=False),
    sa.Column("task", sa.String(100), nullable=False),
    sa.Column("chip", sa.String(100), nullable=False),
    sa.Column("qid", sa.String(32), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("input", JSONDoc, nullable=True),  # what the model was given
    sa.Column("output", JSONDoc, nullable=True),  # what it answered, parsed beside it
    sa.Column("evaluator", JSONDoc, nullable=True),  # the code that judged: package, version, hash
    sa.Column("error", Message, nullable=True),
    sa.Column("model_seconds", sa.Float, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=True),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.CheckConstraint(_one_of("status", EvaluationStatus), name="status"),
    sa.UniqueConstraint("run_id", "task_result_id"),  # one record per task result of a run
    sa.Index(None, "run_id", "status"),
)

evaluation_verdicts = sa.Table(
    "evaluation_verdicts",
    metadata,
    sa.Column("id", Id, primary_key=True, autoincrement=True),
    sa.Column("record_id", sa.String(32), sa.ForeignKey("evaluation_records.id"), nullable=False),
    sa.Column("reviewer", sa.String(200), nullable=False),
    sa.Column("verdict", sa.String(16), nullable=False),  # agree, disagree, unsure
    sa.Column("area", sa.String(32), nullable=True),  # what a disagreement is about
    sa.Column("comment", sa.Text, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.CheckConstraint("verdict IN ('agree', 'disagree', 'unsure')", name="verdict"),
    sa.Index(None, "record_id"),
)

evaluation_assets = sa.Table(
    "evaluation_assets",
    metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),  # the figure's bytes, stored once
    sa.Column("blob", sa.String(64), nullable=False),  # their blob digest (storage.blobs)
    sa.Column("bytes", sa.Integer, nullable=False),
    sa.Column("media_type", sa.String(32), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

# issue 34, item 4: every blob's size with its digest, so that a read stops at it (migration 0016)

blob_sizes = sa.Table(
    "blob_sizes",
    metadata,
    sa.Column("digest", sa.String(64), primary_key=True),  # the blob's name: BLAKE3 of its bytes
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("recorded_at", UTCDateTime, nullable=False),
)

# People of the web pages (issue 16): a login on a user's credit account, its roles, its sessions. Tokens
# and session ids are kept only as their SHA-256; the form token is the one a session's pages carry.
account_roles = sa.Table(
    "account_roles",
    metadata,
    sa.Column("account", sa.String(200), sa.ForeignKey("accounts.name"), primary_key=True),
    sa.Column("role", sa.String(16), primary_key=True),
    sa.Column("workflow", sa.String(200), primary_key=True),  # a developer's workflow; '' for the others
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.CheckConstraint(_one_of("role", ROLES), name="role"),
)

account_logins = sa.Table(
    "account_logins",
    metadata,
    sa.Column("account", sa.String(200), sa.ForeignKey("accounts.name"), primary_key=True),
    sa.Column("token_sha256", sa.String(64), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.UniqueConstraint("token_sha256"),
)

account_sessions = sa.Table(
    "account_sessions",
    metadata,
    sa.Column("id_sha256", sa.String(64), primary_key=True),
    sa.Column("account", sa.String(200), sa.ForeignKey("accounts.name"), nullable=False),
    sa.Column("form_token", sa.String(64), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
    sa.Index(None, "account"),
    sa.Index(None, "expires_at"),
)

# what every machine shares (issue 26, item 3; migration 0009)

host_keys = sa.Table(  # each host's receipt public key, registered by the host that holds its private half
    "host_keys",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),  # 64 lower-case hex digits
    sa.Column("host", sa.String(200), nullable=False),
    sa.Column("first_seen_at", UTCDateTime, nullable=False),
    sa.Column("retired_at", UTCDateTime, nullable=True),  # its holder signs no more with it
    sa.Column("revoked_from_ms", sa.BigInteger, nullable=True),  # no longer vouched for from then (§8.8)
    sa.Column("note", sa.String(500), nullable=True),
    # issue 33, item 4 (migration 0014): the host's proof of possession, signed by the key, and the root's
    # endorsement of the key (retired or revoked in it), each {"statement", "signature"} as text
    sa.Column("possession", sa.Text, nullable=True),
    sa.Column("endorsement", sa.Text, nullable=True),
    sa.Index(None, "host"),
)

credit_limits = sa.Table(  # per_run_limit, history_run_limit, history_run_seconds: as decimal text
    "credit_limits",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(64), nullable=False),
    sa.Column("set_at", UTCDateTime, nullable=False),
)

credit_prices = sa.Table(  # a target's (or family's, "ibm:") price, decimal text laid over the defaults
    "credit_prices",
    metadata,
    sa.Column("target", sa.String(200), primary_key=True),
    sa.Column("per_circuit", sa.String(64), nullable=False),
    sa.Column("per_shot", sa.String(64), nullable=False),
    sa.Column("set_at", UTCDateTime, nullable=False),
)

provider_holders = sa.Table(  # which host's workers hold which provider (a Prefect work queue each)
    "provider_holders",
    metadata,
    sa.Column("host", sa.String(200), primary_key=True),
    sa.Column("queue", sa.String(200), primary_key=True),  # provider-NAME, ibm
    sa.Column("seen_at", UTCDateTime, nullable=False),
)

# issue 26: the storage this database was first used with (one row), and work one machine does at a time
storage_binding = sa.Table(
    "storage_binding",
    metadata,
    sa.Column("name", sa.String(32), primary_key=True),  # 'storage'
    sa.Column("url", sa.String(2000), nullable=False),  # file:///real/path or s3://bucket/prefix
    sa.Column("bound_at", UTCDateTime, nullable=False),
    sa.Column("token", sa.String(64), nullable=True),  # the store's marker object holds it (migration 0010)
)

claims = sa.Table(
    "claims",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),  # 'trackrecord-compaction'
    sa.Column("owner", sa.String(200), nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
)

# the track record's files, by name and content (issue 24, item 3; migration 0011)

trackrecord_files = sa.Table(
    "trackrecord_files",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),  # b-, h- or o-<digest of its run ids>.parquet
    sa.Column("digest", sa.String(64), primary_key=True),  # BLAKE3 of the file's bytes, 64 hex digits
    sa.Column("recorded_at", UTCDateTime, nullable=False),
)

# the track record's signed append-only log and its fold, the files readers read (issue 34; migration 0015)

trackrecord_log = sa.Table(
    "trackrecord_log",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),  # 1, 2, ...: one chain
    sa.Column("prev", sa.String(64), nullable=False, unique=True),  # the previous entry's hash
    sa.Column("hash", sa.String(64), nullable=False, unique=True),  # BLAKE3 of this entry's document
    sa.Column("document", sa.Text, nullable=False),  # the signed entry (storage.trackrecord.log)
    sa.Column("recorded_at", UTCDateTime, nullable=False),
)

trackrecord_live = sa.Table(
    "trackrecord_live",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("rows", sa.BigInteger, nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),  # the entry that added it
    sa.Column("seen", sa.String(200), nullable=True),  # what identified its bytes when they last matched
)

# issue 33, item 3: a provider has a holder, and only those it allows spend on it (migration 0013)

provider_owners = sa.Table(  # the account that holds each provider name: the first to add it, on any machine
    "provider_owners",
    metadata,
    sa.Column("provider", sa.String(63), primary_key=True),  # providers.yaml's NAME, provider:NAME
    sa.Column("holder", sa.String(200), sa.ForeignKey("accounts.name"), nullable=False),
    sa.Column("held_since", UTCDateTime, nullable=False),
)

provider_allowances = sa.Table(  # whom a provider's holder allows: an account, or a workflow's quotes
    "provider_allowances",
    metadata,
    sa.Column("provider", sa.String(63), sa.ForeignKey("provider_owners.provider"), primary_key=True),
    sa.Column("kind", sa.String(16), primary_key=True),  # account, workflow
    sa.Column("grantee", sa.String(200), primary_key=True),  # the account's or the workflow's name
    sa.Column("allowed_by", sa.String(200), nullable=False),  # the holder, or an admin
    sa.Column("allowed_at", UTCDateTime, nullable=False),
    sa.CheckConstraint("kind IN ('account', 'workflow')", name="kind"),
)
