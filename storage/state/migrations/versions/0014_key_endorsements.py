"""Receipt keys trusted through the operator's root key (issue 33, item 4).

Endorsements, retirements and revocations are signed statements.

Each host key keeps its host's proof of possession (a statement the key signed) and the root's
endorsement (a statement the root signed, retirement and revocation in it), as text; a key with none is
not endorsed (qsolve.receipts.endorsement).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("host_keys") as batch:
        batch.add_column(sa.Column("possession", sa.Text, nullable=True))
        batch.add_column(sa.Column("endorsement", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("host_keys") as batch:
        batch.drop_column("endorsement")
        batch.drop_column("possession")
