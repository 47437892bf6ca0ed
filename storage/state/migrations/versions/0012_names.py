"""Workflow names and versions have owners (issue 33, items 1 and 5): who published each version, a name's developers, the accounts quotes act for.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
