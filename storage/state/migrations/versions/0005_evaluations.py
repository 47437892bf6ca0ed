"""Evaluation runs (issue 14; calibration-evaluation seed): runs, one record per task result of a run,
reviewers' verdicts as an append-only history, and the figures evaluations saw, stored once by hash.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

JSONDoc = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)
STATUSES = "'pending', 'running', 'completed', 'failed', 'interrupted', 'cancelled'"


def upgrade() -> None:
    op.create_table(
        "evaluation_runs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("selection", JSONDoc, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("settings", JSONDoc, nullable=False),
        sa.Column("skipped", JSONDoc, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("owner", sa.String(100), nullable=True),
        sa.Column("heartbeat_at", When, nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.Column("started_at", When, nullable=True),
        sa.Column("finished_at", When, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_evaluation_runs"),
        sa.CheckConstraint(f"status IN ({STATUSES})", name=op.f("ck_evaluation_runs_status")),
        sa.CheckConstraint("trigger IN ('bulk', 'single')", name=op.f("ck_evaluation_runs_trigger")),
    )
    op.create_table(
        "evaluation_records",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("task_result_id", sa.String(32), nullable=False),
        sa.Column("task", sa.String(100), nullable=False),
        sa.Column("chip", sa.String(100), nullable=False),
        sa.Column("qid", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("input", JSONDoc, nullable=True),
        sa.Column("output", JSONDoc, nullable=True),
        sa.Column("evaluator", JSONDoc, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("model_seconds", sa.Float, nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.Column("started_at", When, nullable=True),
        sa.Column("finished_at", When, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_evaluation_records"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["evaluation_runs.id"], name="fk_evaluation_records_run_id_evaluation_runs"
        ),
        sa.ForeignKeyConstraint(
            ["task_result_id"],
            ["calibration_results.id"],
            name="fk_evaluation_records_task_result_id_calibration_results",
        ),
        sa.CheckConstraint(f"status IN ({STATUSES})", name=op.f("ck_evaluation_records_status")),
        sa.UniqueConstraint("run_id", "task_result_id", name="uq_evaluation_records_run_id_task_result_id"),
    )
    op.create_index("ix_evaluation_records_run_id_status", "evaluation_records", ["run_id", "status"])
    op.create_table(
        "evaluation_verdicts",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("record_id", sa.String(32), nullable=False),
        sa.Column("reviewer", sa.String(200), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("area", sa.String(32), nullable=True),
        sa.Column("comment", sa.Text, nullable=True),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_evaluation_verdicts"),
        sa.ForeignKeyConstraint(
            ["record_id"],
            ["evaluation_records.id"],
            name="fk_evaluation_verdicts_record_id_evaluation_records",
        ),
        sa.CheckConstraint(
            "verdict IN ('agree', 'disagree', 'unsure')", name=op.f("ck_evaluation_verdicts_verdict")
        ),
    )
    op.create_index("ix_evaluation_verdicts_record_id", "evaluation_verdicts", ["record_id"])
    op.create_table(
        "evaluation_assets",
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("blob", sa.String(64), nullable=False),
        sa.Column("bytes", sa.Integer, nullable=False),
        sa.Column("media_type", sa.String(32), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("sha256", name="pk_evaluation_assets"),
    )


def downgrade() -> None:
    for table in ("evaluation_assets", "evaluation_verdicts", "evaluation_records", "evaluation_runs"):
        op.drop_table(table)
