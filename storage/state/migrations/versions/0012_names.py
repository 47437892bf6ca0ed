"""Workflow names and versions have owners (issue 33, items 1 and 5): who published each version, a
name's developers; the ledger's own accounts act for nobody.

``versions.account`` records the account each version was published for (null for the versions published
before this revision). A name's developers are the accounts with role ``developer`` of it in
``account_roles``, the table the web pages' logins already read: the developers recorded there before this
revision own their names from now on, and a name published before it with no developer there is published
again only by an admin (or once the operator adds a developer: ``qsolve accounts developer add``). The
ledger's own accounts (kind ``system`` or ``ledger``) act for nobody: any login, role or session one of them
was given is removed.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a plain ADD COLUMN with its reference on both backends: SQLite's batch copy would drop the table that
    # runs, quotes and history stages refer to, which its foreign keys refuse once it holds a version
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "ALTER TABLE versions ADD COLUMN account VARCHAR(200) "
            "CONSTRAINT fk_versions_account_accounts REFERENCES accounts (name)"
        )
    else:
        account = sa.ForeignKey("accounts.name", name="fk_versions_account_accounts")
        op.add_column("versions", sa.Column("account", sa.String(200), account, nullable=True))
    platform = "SELECT name FROM accounts WHERE kind <> 'user'"
    for table in ("account_sessions", "account_roles", "account_logins"):
        op.execute(sa.text(f"DELETE FROM {table} WHERE account IN ({platform})"))


def downgrade() -> None:
    with op.batch_alter_table("versions") as batch:
        batch.drop_constraint("fk_versions_account_accounts", type_="foreignkey")
        batch.drop_column("account")
