"""What every machine shares through the database (issue 26, item 3): each host's receipt public key, credit
prices and limits, and which worker holds which provider.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
