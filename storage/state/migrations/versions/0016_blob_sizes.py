"""Every blob's size recorded with its digest, so that a read stops at it (issue 34, item 4).

``blob_sizes``: a blob's digest (its name, the BLAKE3 of its bytes) and its length. The evaluations' kept
figures, whose sizes were recorded already (``evaluation_assets.bytes``), are copied in; a blob recorded
before this migration elsewhere (an archive, a receipt, a calibration figure) has no size here, and is
read to the bound of its kind (``storage.bounds``).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blob_sizes",
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_blob_sizes"),
    )
    op.execute(
        "INSERT INTO blob_sizes (digest, bytes, recorded_at) "
        "SELECT blob, MIN(bytes), MIN(created_at) FROM evaluation_assets GROUP BY blob"
    )


def downgrade() -> None:
    op.drop_table("blob_sizes")
