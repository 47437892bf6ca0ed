"""People of the web pages (issue 16): a login (an access token, kept as its SHA-256) on a user's credit
account, its roles (``admin``, ``developer`` of a workflow, ``editor``, ``reviewer``), and its sessions
(their ids kept as SHA-256, each with the form token its pages carry).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "account_roles",
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("workflow", sa.String(200), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("account", "role", "workflow", name="pk_account_roles"),
        sa.ForeignKeyConstraint(["account"], ["accounts.name"], name="fk_account_roles_account_accounts"),
        sa.CheckConstraint(
            "role IN ('admin', 'developer', 'editor', 'reviewer')", name=op.f("ck_account_roles_role")
        ),
    )
    op.create_table(
        "account_logins",
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("account", name="pk_account_logins"),
        sa.ForeignKeyConstraint(["account"], ["accounts.name"], name="fk_account_logins_account_accounts"),
        sa.UniqueConstraint("token_sha256", name="uq_account_logins_token_sha256"),
    )
    op.create_table(
        "account_sessions",
        sa.Column("id_sha256", sa.String(64), nullable=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("form_token", sa.String(64), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.Column("expires_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id_sha256", name="pk_account_sessions"),
        sa.ForeignKeyConstraint(["account"], ["accounts.name"], name="fk_account_sessions_account_accounts"),
    )
    op.create_index("ix_account_sessions_account", "account_sessions", ["account"])
    op.create_index("ix_account_sessions_expires_at", "account_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_account_sessions_expires_at", table_name="account_sessions")
    op.drop_index("ix_account_sessions_account", table_name="account_sessions")
    op.drop_table("account_sessions")
    op.drop_table("account_logins")
    op.drop_table("account_roles")
