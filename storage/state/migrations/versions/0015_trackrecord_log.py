"""Reserved for the track record's signed append-only log (issue 34, item 2): one entry per file filed or
compacted, hash-chained, signed by the filing host's key; signed checkpoints. Empty until it lands.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
