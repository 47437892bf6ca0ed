"""Provider jobs (issue 12; quantum-provider-protocol §5.7): each job recorded before it is submitted,
its provider's id as soon as it is known, with the program sent and the description it was compiled
against, so that any later process can follow it.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

JSONDoc = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "provider_jobs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("provider", sa.String(63), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("job", sa.String(200), nullable=True),
        sa.Column("shots", sa.Integer, nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=True),
        sa.Column("program", JSONDoc, nullable=False),
        sa.Column("description", JSONDoc, nullable=False),
        sa.Column("context", JSONDoc, nullable=False),
        sa.Column("answer", JSONDoc, nullable=True),
        sa.Column("receipt", sa.String(64), nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("polls", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", When, nullable=False),
        sa.Column("submitted_at", When, nullable=True),
        sa.Column("finished_at", When, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_provider_jobs"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_provider_jobs_run_id_runs"),
        sa.CheckConstraint(
            "status IN ('recorded', 'submitting', 'submitted', 'done', 'failed', 'cancelled')",
            name=op.f("ck_provider_jobs_status"),
        ),
    )
    op.create_index("ix_provider_jobs_provider_job", "provider_jobs", ["provider", "job"])


def downgrade() -> None:
    op.drop_table("provider_jobs")
