"""The track record's signed append-only log (issue 34, item 2): one signed, hash-chained entry per file filed
or compacted, and the live set readers read.

``trackrecord_log`` holds the entries, one row each: its sequence number (1, 2, ...), the hash of the entry
before it, its own hash and its whole signed document (``storage.trackrecord.log``). Both the sequence
number and the previous hash are unique, so two writers appending at once (two processes, two machines)
cannot fork the chain: one insert fails and its writer appends again on the new head.

``trackrecord_live`` is the fold of the log (each file added and not yet retired, with its digest, size
and rows), kept in the same transaction as each append, so a reader asks it rather than folding the
whole log; ``seen`` is what identified the bytes when they last matched the digest (a file's inode, size
and times; an object's ETag), so a reader hashes a file again only when that changed.

No entry is made here: a database whose ``trackrecord_files`` records files gets its first entry,
``adopted``, from the first process that reads or files with the log (signed by that host's key).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trackrecord_log",
        sa.Column("seq", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("prev", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("document", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_trackrecord_log"),
        sa.UniqueConstraint("prev", name="uq_trackrecord_log_prev"),
        sa.UniqueConstraint("hash", name="uq_trackrecord_log_hash"),
    )
    op.create_table(
        "trackrecord_live",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("rows", sa.BigInteger, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("seen", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_trackrecord_live"),
    )


def downgrade() -> None:
    op.drop_table("trackrecord_live")
    op.drop_table("trackrecord_log")
