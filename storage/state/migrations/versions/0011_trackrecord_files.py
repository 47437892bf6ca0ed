"""The track record's files as the state database knows them (issue 24, item 3): each data file qsolve
writes (a batch, a compaction's heads or older rows) is recorded by name and BLAKE3 of its bytes before it
takes its name, so that a maintenance pass sets aside any file the database does not know: a copy under
another file's name, a batch of the right runs with other values, a file no filing made.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trackrecord_files",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", "digest", name="pk_trackrecord_files"),
    )


def downgrade() -> None:
    op.drop_table("trackrecord_files")
