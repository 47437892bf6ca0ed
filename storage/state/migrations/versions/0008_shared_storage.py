"""Shared storage (issue 26, item 1 and 4): the storage URL the database was first used with, and compaction
claimed in the database (one machine compacts at a time).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "storage_binding",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("bound_at", When, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_storage_binding"),
    )
    op.create_table(
        "claims",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("expires_at", When, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_claims"),
    )


def downgrade() -> None:
    op.drop_table("claims")
    op.drop_table("storage_binding")
