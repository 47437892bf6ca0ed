"""History stages and leases (issue 11): one history stage per version and round, claimed in the
database; runs carry their case's position, their owner's lease and a deadline.

Versions that already have history runs get a finished first round holding those runs, so a
resubmission after the upgrade finds them recorded.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)
SLOT_TAKEN = "stage_id IS NOT NULL AND (status <> 'failed' OR reason IN ('crash', 'timeout'))"


def upgrade() -> None:
    op.create_table(
        "history_stages",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("version_id", Id, nullable=False),
        sa.Column("round", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(100), nullable=False),
        sa.Column("lease_expires_at", When, nullable=False),
        sa.Column("started_at", When, nullable=False),
        sa.Column("finished_at", When, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_history_stages"),
        sa.ForeignKeyConstraint(
            ["version_id"], ["versions.id"], name="fk_history_stages_version_id_versions"
        ),
        sa.UniqueConstraint("version_id", "round", name="uq_history_stages_version_id_round"),
        sa.CheckConstraint("round >= 1", name=op.f("ck_history_stages_round")),
    )
    if op.get_bind().dialect.name == "sqlite":  # SQLite adds a column's reference only inline
        op.execute(
            "ALTER TABLE runs ADD COLUMN stage_id INTEGER"
            " CONSTRAINT fk_runs_stage_id_history_stages REFERENCES history_stages (id)"
        )
    else:
        op.add_column("runs", sa.Column("stage_id", Id, nullable=True))
        op.create_foreign_key(
            "fk_runs_stage_id_history_stages", "runs", "history_stages", ["stage_id"], ["id"]
        )
    op.add_column("runs", sa.Column("case_index", sa.Integer, nullable=True))
    op.add_column("runs", sa.Column("owner", sa.String(100), nullable=True))
    op.add_column("runs", sa.Column("lease_expires_at", When, nullable=True))
    op.add_column("runs", sa.Column("deadline_at", When, nullable=True))
    op.create_index("ix_runs_status_lease_expires_at", "runs", ["status", "lease_expires_at"])
    op.create_index(
        "uq_runs_stage_case",
        "runs",
        ["stage_id", "case_index"],
        unique=True,
        sqlite_where=sa.text(SLOT_TAKEN),
        postgresql_where=sa.text(SLOT_TAKEN),
    )
    bind = op.get_bind()
    bind.execute(
        sa.text(
            "INSERT INTO history_stages (version_id, round, owner, lease_expires_at, started_at, finished_at)"
            " SELECT version_id, 1, 'before-0002', MIN(created_at), MIN(created_at), MAX(created_at)"
            " FROM runs WHERE source = 'history' GROUP BY version_id"
        )
    )
    bind.execute(
        sa.text(
            "UPDATE runs SET stage_id ="
            " (SELECT s.id FROM history_stages s WHERE s.version_id = runs.version_id)"
            " WHERE source = 'history'"
        )
    )


def downgrade() -> None:
    op.drop_index("uq_runs_stage_case", table_name="runs")
    op.drop_index("ix_runs_status_lease_expires_at", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        for column in ("deadline_at", "lease_expires_at", "owner", "case_index", "stage_id"):
            batch.drop_column(column)
    op.drop_table("history_stages")
