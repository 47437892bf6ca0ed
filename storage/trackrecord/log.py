"""The track record's signed append-only log, as JSON anyone can check offline (issue 34, item 2): its
entries, checkpoints, fold and chain check. The form is defined in the core
(``qsolve.receipts.trackrecord_log``, whose docstring describes it), so that a replay checks it with no
state database; this module is its name here."""

from __future__ import annotations

from qsolve.receipts.trackrecord_log import (
    ADD_ORDER,
    ADOPTED,
    CHECKPOINT_DOMAIN,
    CHECKPOINT_FORMAT,
    COMPACTED,
    ENTRY_DOMAIN,
    ENTRY_FORMAT,
    FILED,
    GENESIS,
    KINDS,
    RETIRED,
    Chain,
    LogRefused,
    added,
    apply,
    blake3,
    canonical_bytes,
    check_checkpoint,
    check_entry,
    checkpoint_document,
    document_hash,
    entry_document,
    fold,
    key_refused,
    read,
    text,
)

__all__ = [
    "ADD_ORDER",
    "ADOPTED",
    "CHECKPOINT_DOMAIN",
    "CHECKPOINT_FORMAT",
    "COMPACTED",
    "ENTRY_DOMAIN",
    "ENTRY_FORMAT",
    "FILED",
    "GENESIS",
    "KINDS",
    "RETIRED",
    "Chain",
    "LogRefused",
    "added",
    "apply",
    "blake3",
    "canonical_bytes",
    "check_checkpoint",
    "check_entry",
    "checkpoint_document",
    "document_hash",
    "entry_document",
    "fold",
    "key_refused",
    "read",
    "text",
]
