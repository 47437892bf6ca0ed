"""The store behind the storage binding (issue 26, item 4): ``s3://BUCKET/PREFIX`` names a bucket, not the
S3 server that holds it, so the binding keeps the token of a marker object written into the store at the
first binding (``qsolve-binding``); a home whose store does not hold that token refuses to start. A binding
made before this revision has no token yet: the next start writes the marker and records it.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("storage_binding") as batch:
        batch.add_column(sa.Column("token", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("storage_binding") as batch:
        batch.drop_column("token")
