"""Shared storage (issue 26, item 1 and 4): the storage URL the database was first used with, and compaction
claimed in the database (one machine compacts at a time).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
