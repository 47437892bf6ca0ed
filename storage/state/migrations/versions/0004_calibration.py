"""Calibration task results (issue 14; calibration-evaluation seed): one row per run of a calibration
task on a qubit or coupling of a chip, with its sweep, settings, fitted outputs, figures (their bytes in
blobs) and, for injected faults and healthy runs, the known answer.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

JSONDoc = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "calibration_results",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("task", sa.String(100), nullable=False),
        sa.Column("chip", sa.String(100), nullable=False),
        sa.Column("qid", sa.String(32), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("figures", JSONDoc, nullable=False),
        sa.Column("figure_count", sa.Integer, nullable=False),
        sa.Column("sweep", JSONDoc, nullable=True),
        sa.Column("settings", JSONDoc, nullable=False),
        sa.Column("outputs", JSONDoc, nullable=False),
        sa.Column("fit", JSONDoc, nullable=True),
        sa.Column("true_status", sa.String(64), nullable=True),
        sa.Column("fault", sa.String(100), nullable=True),
        sa.Column("seed", sa.BigInteger, nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_calibration_results"),
        sa.CheckConstraint("status IN ('completed', 'failed')", name=op.f("ck_calibration_results_status")),
    )
    op.create_index(
        "ix_calibration_results_chip_task_qid_created_at",
        "calibration_results",
        ["chip", "task", "qid", "created_at"],
    )
    op.create_index("ix_calibration_results_day", "calibration_results", ["day"])


def downgrade() -> None:
    op.drop_table("calibration_results")
