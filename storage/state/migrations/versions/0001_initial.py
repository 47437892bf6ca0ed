"""The first schema: workflows, versions, runs, accounts, the double-entry ledger, quotes.

Also opens the ledger's own accounts and the platform's system account, granted a generous balance
(history runs are paid from it).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SYSTEM_GRANT_MICROCREDITS = 1_000_000 * 1_000_000  # one million credits

JSONDoc = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)

REASONS = (
    "'platform_error', 'backend_unavailable', 'run_too_large', 'insufficient_credits', "
    "'unsupported_target', 'cancelled', 'crash', 'timeout'"
)


def upgrade() -> None:
    op.create_table(
        "workflows",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_workflows"),
    )
    op.create_table(
        "versions",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("workflow", sa.String(200), nullable=False),
        sa.Column("version", sa.String(100), nullable=False),
        sa.Column("digest", sa.String(128), nullable=False),
        sa.Column("published_at", When, nullable=False),
        sa.Column("hardware_cases", JSONDoc, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_versions"),
        sa.ForeignKeyConstraint(["workflow"], ["workflows.name"], name="fk_versions_workflow_workflows"),
        sa.UniqueConstraint("workflow", "version", name="uq_versions_workflow_version"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("version_id", Id, nullable=False),
        sa.Column("case_name", sa.String(200), nullable=False),
        sa.Column("target", sa.String(200), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(32), nullable=True),
        sa.Column("detail", sa.Text, nullable=True),
        sa.Column("result", JSONDoc, nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.Column("started_at", When, nullable=True),
        sa.Column("finished_at", When, nullable=True),
        sa.Column("estimated_microcredits", sa.BigInteger, nullable=True),
        sa.Column("actual_microcredits", sa.BigInteger, nullable=True),
        sa.Column("filed_at", When, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.ForeignKeyConstraint(["version_id"], ["versions.id"], name="fk_runs_version_id_versions"),
        sa.CheckConstraint("source IN ('history', 'hardware')", name=op.f("ck_runs_source")),
        sa.CheckConstraint(
            "status IN ('created', 'running', 'finished', 'failed')", name=op.f("ck_runs_status")
        ),
        sa.CheckConstraint(f"reason IS NULL OR reason IN ({REASONS})", name=op.f("ck_runs_reason")),
        sa.CheckConstraint(
            "(status = 'failed') = (reason IS NOT NULL)", name=op.f("ck_runs_reason_iff_failed")
        ),
    )
    op.create_index("ix_runs_version_id", "runs", ["version_id"])
    op.create_index("ix_runs_filed_at_finished_at", "runs", ["filed_at", "finished_at"])
    accounts = op.create_table(
        "accounts",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_accounts"),
        sa.CheckConstraint("kind IN ('user', 'system', 'ledger')", name=op.f("ck_accounts_kind")),
    )
    transfers = op.create_table(
        "transfers",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.Column("memo", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_transfers"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_transfers_run_id_runs"),
        sa.CheckConstraint("kind IN ('grant', 'hold', 'charge', 'release')", name=op.f("ck_transfers_kind")),
        sa.CheckConstraint(
            "(kind = 'grant') = (run_id IS NULL)", name=op.f("ck_transfers_run_iff_not_grant")
        ),
        sa.UniqueConstraint("run_id", "kind", name="uq_transfers_run_id_kind"),
    )
    op.create_index("ix_transfers_kind_created_at", "transfers", ["kind", "created_at"])
    entries = op.create_table(
        "entries",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("transfer_id", Id, nullable=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("microcredits", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_entries"),
        sa.ForeignKeyConstraint(["transfer_id"], ["transfers.id"], name="fk_entries_transfer_id_transfers"),
        sa.ForeignKeyConstraint(["account"], ["accounts.name"], name="fk_entries_account_accounts"),
        sa.UniqueConstraint("transfer_id", "account", name="uq_entries_transfer_id_account"),
    )
    op.create_index("ix_entries_account", "entries", ["account"])
    op.create_table(
        "quotes",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("batch_id", sa.String(32), nullable=False),
        sa.Column("version_id", Id, nullable=False),
        sa.Column("case_name", sa.String(200), nullable=False),
        sa.Column("target", sa.String(200), nullable=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=True),
        sa.Column("price_microcredits", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.Column("confirmed_at", When, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_quotes"),
        sa.ForeignKeyConstraint(["version_id"], ["versions.id"], name="fk_quotes_version_id_versions"),
        sa.ForeignKeyConstraint(["account"], ["accounts.name"], name="fk_quotes_account_accounts"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_quotes_run_id_runs"),
        sa.CheckConstraint(
            "status IN ('pending', 'confirmed', 'refused', 'expired')", name=op.f("ck_quotes_status")
        ),
    )
    op.create_index("ix_quotes_batch_id", "quotes", ["batch_id"])
    op.create_index("ix_quotes_version_id", "quotes", ["version_id"])

    now = sa.func.current_timestamp()
    bind = op.get_bind()
    for name, kind in [
        ("system", "system"),
        ("ledger:mint", "ledger"),
        ("ledger:holds", "ledger"),
        ("ledger:revenue", "ledger"),
    ]:
        bind.execute(accounts.insert().values(name=name, kind=kind, created_at=now))
    grant = bind.execute(
        transfers.insert().values(kind="grant", created_at=now, memo="the platform's system account")
    ).inserted_primary_key[0]
    bind.execute(
        entries.insert().values(
            transfer_id=grant, account="ledger:mint", microcredits=-SYSTEM_GRANT_MICROCREDITS
        )
    )
    bind.execute(
        entries.insert().values(transfer_id=grant, account="system", microcredits=SYSTEM_GRANT_MICROCREDITS)
    )


def downgrade() -> None:
    for table in ("quotes", "entries", "transfers", "accounts", "runs", "versions", "workflows"):
        op.drop_table(table)
