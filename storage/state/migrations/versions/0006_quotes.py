"""Hardware quotes (issue 13): quote batches, one open per workflow (refused in the database), and the
columns a quote needs: its case, its validity, the estimate shown, whether its cost is unknown, and the
amount its confirmation authorised.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

JSONDoc = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)
BATCH_OPEN = "status IN ('pricing', 'open')"


def upgrade() -> None:
    op.create_table(
        "quote_batches",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("workflow", sa.String(200), nullable=False),
        sa.Column("version_id", Id, nullable=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("target", sa.String(200), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.Column("ended_at", When, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_quote_batches"),
        sa.ForeignKeyConstraint(["workflow"], ["workflows.name"], name="fk_quote_batches_workflow_workflows"),
        sa.ForeignKeyConstraint(["version_id"], ["versions.id"], name="fk_quote_batches_version_id_versions"),
        sa.ForeignKeyConstraint(["account"], ["accounts.name"], name="fk_quote_batches_account_accounts"),
        sa.CheckConstraint("status IN ('pricing', 'open', 'ended')", name=op.f("ck_quote_batches_status")),
    )
    op.create_index(
        "uq_quote_batches_open",
        "quote_batches",
        ["workflow"],
        unique=True,
        sqlite_where=sa.text(BATCH_OPEN),
        postgresql_where=sa.text(BATCH_OPEN),
    )
    op.add_column("quotes", sa.Column("case_index", sa.Integer, nullable=True))
    op.add_column("quotes", sa.Column("valid_until", When, nullable=True))
    op.add_column("quotes", sa.Column("estimate", JSONDoc, nullable=True))
    op.add_column("quotes", sa.Column("unknown_cost", sa.Boolean, nullable=False, server_default=sa.false()))
    op.add_column("quotes", sa.Column("authorised_microcredits", sa.BigInteger, nullable=True))
    op.create_index("ix_quotes_run_id", "quotes", ["run_id"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_quotes_run_id", table_name="quotes")
    with op.batch_alter_table("quotes") as batch:
        for column in ("authorised_microcredits", "unknown_cost", "estimate", "valid_until", "case_index"):
            batch.drop_column(column)
    op.drop_index("uq_quote_batches_open", table_name="quote_batches")
    op.drop_table("quote_batches")
