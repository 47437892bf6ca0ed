"""A provider has a holder who allows accounts to spend on it (issue 33, item 3): the account that holds
each provider name (the first to add it wins: its primary key), whom it allows (accounts, or a workflow's
quotes), and on each quote whose confirmations authorised it: the payer's, and the holder's where the
payer is not the holder and the job is not free.

A provider configured before this migration has no holder here: the migration cannot know whose it is,
so every quote on it is refused until its holder claims it (``qsolve providers claim NAME``,
docs/providers.md).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

When = sa.DateTime(timezone=True)
QUOTE_COLUMNS = ("confirmed_by", "holder", "holder_confirmed_by", "holder_confirmed_at")


def upgrade() -> None:
    op.create_table(
        "provider_owners",
        sa.Column("provider", sa.String(63), nullable=False),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("held_since", When, nullable=False),
        sa.PrimaryKeyConstraint("provider", name="pk_provider_owners"),
        sa.ForeignKeyConstraint(["holder"], ["accounts.name"], name="fk_provider_owners_holder_accounts"),
    )
    op.create_table(
        "provider_allowances",
        sa.Column("provider", sa.String(63), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("grantee", sa.String(200), nullable=False),
        sa.Column("allowed_by", sa.String(200), nullable=False),
        sa.Column("allowed_at", When, nullable=False),
        sa.PrimaryKeyConstraint("provider", "kind", "grantee", name="pk_provider_allowances"),
        sa.ForeignKeyConstraint(
            ["provider"], ["provider_owners.provider"], name="fk_provider_allowances_provider_provider_owners"
        ),
        sa.CheckConstraint("kind IN ('account', 'workflow')", name=op.f("ck_provider_allowances_kind")),
    )
    op.add_column("quotes", sa.Column("confirmed_by", sa.String(200), nullable=True))
    op.add_column("quotes", sa.Column("holder", sa.String(200), nullable=True))
    op.add_column("quotes", sa.Column("holder_confirmed_by", sa.String(200), nullable=True))
    op.add_column("quotes", sa.Column("holder_confirmed_at", When, nullable=True))
    # a quote confirmed before this change was confirmed by its payer, the only one who could
    op.execute("UPDATE quotes SET confirmed_by = account WHERE confirmed_at IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("quotes") as batch:
        for column in reversed(QUOTE_COLUMNS):
            batch.drop_column(column)
    op.drop_table("provider_allowances")
    op.drop_table("provider_owners")
