"""What every machine shares through the database (issue 26, item 3): each host's receipt public key
(``host_keys``), credit prices and limits (``credit_prices``, ``credit_limits``; they were ``credits.toml``),
and which host's workers hold which provider (``provider_holders``, a Prefect work queue each).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "host_keys",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("first_seen_at", When, nullable=False),
        sa.Column("retired_at", When, nullable=True),
        sa.Column("revoked_from_ms", sa.BigInteger, nullable=True),
        sa.Column("note", sa.String(500), nullable=True),
        sa.PrimaryKeyConstraint("key", name="pk_host_keys"),
    )
    op.create_index("ix_host_keys_host", "host_keys", ["host"])
    op.create_table(
        "credit_limits",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.String(64), nullable=False),
        sa.Column("set_at", When, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_credit_limits"),
    )
    op.create_table(
        "credit_prices",
        sa.Column("target", sa.String(200), nullable=False),
        sa.Column("per_circuit", sa.String(64), nullable=False),
        sa.Column("per_shot", sa.String(64), nullable=False),
        sa.Column("set_at", When, nullable=False),
        sa.PrimaryKeyConstraint("target", name="pk_credit_prices"),
    )
    op.create_table(
        "provider_holders",
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("queue", sa.String(200), nullable=False),
        sa.Column("seen_at", When, nullable=False),
        sa.PrimaryKeyConstraint("host", "queue", name="pk_provider_holders"),
    )


def downgrade() -> None:
    op.drop_table("provider_holders")
    op.drop_table("credit_prices")
    op.drop_table("credit_limits")
    op.drop_index("ix_host_keys_host", table_name="host_keys")
    op.drop_table("host_keys")
