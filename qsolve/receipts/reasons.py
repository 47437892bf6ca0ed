"""Every reason a verifier here gives, in the seed's order, with the section it comes from.

The verdict reports them as a set (sorted by code); this catalogue is for people: the command's plain
output and ``docs/receipts.md``. Reasons marked ``alone`` are reported alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    code: str
    section: str
    when: str
    alone: bool = False


REASONS: tuple[Reason, ...] = (
    Reason(
        "too_large", "§8.4", "the job is longer than this surface reads, in bytes or in values", alone=True
    ),
    Reason("unreadable", "§8.2", "the text breaks a rule of strict reading", alone=True),
    Reason(
        "not_a_job", "§8.4", "the value is not an object whose request and result are objects", alone=True
    ),
    Reason("no_receipt", "§8.4", "the result has no receipt", alone=True),
    Reason("receipt_form", "§8.4", "the receipt is not of its form (alg, canon, hex members, time)"),
    Reason("digest_mismatch", "§8.4", "the stated digest is not the digest of this request and result"),
    Reason("bad_key", "§8.4", "the key is refused by the strict rules"),
    Reason("bad_signature", "§8.4", "the signature does not hold, strictly, over the stated digest"),
    Reason("inexact_number", "§8.4", "a sealed whole number no double holds, not written canonically"),
    Reason("provider_class", "§8.4", "the accuracy class is not the one its form and provenance give"),
    Reason("request_provider", "§8.4", "provider.name is not the request's provider"),
    Reason("request_shots", "§8.4", "shots is not the request's (1024 when it gives none)"),
    Reason("counts", "§8.4", "the counts are not of their form or do not add up"),
    Reason("provider_members", "§8.4", "a member of a stated provider's result is missing or mistyped"),
    Reason("counts_source", "§8.4", "counts_source is not one its kind and provenance give"),
    Reason("execution", "§8.3", "execution breaks a rule of §8.3 or is not its kind's row"),
    Reason("compiled_program", "§8.4", "compiled.program is not the BLAKE3 of compiled.qasm3"),
    Reason("cost_confirmation", "§8.4", "confirmed or confirmed_by does not fit whether the run was free"),
    Reason("planner_form", "§8.7", "a result with no contract carries a planner"),
    Reason("shadow", "§8.7", "a result with no contract carries a shadow"),
    Reason("stopped", "§8.7", "a result carries stopped, and no contract gives max_joules"),
    Reason("set_items", "§8.6", "the items are not of their form, not count, or not the request's"),
    Reason("set_item", "§8.6", "an item is not a valid job, is a set, or names another key"),
    Reason("set_root", "§8.6", "root is not the Merkle root of the leaves, or a path does not lead to it"),
    Reason("key_untrusted", "§8.8", "no entry of the trust list is the receipt's key"),
    Reason("key_window", "§8.8", "the receipt was issued outside its key's window, or seals no time"),
    Reason("key_revoked", "§8.8", "the key was revoked when the receipt was issued, or it seals no time"),
    Reason("expired", "§8.8", "the time given is at or after the receipt's not_after_ms"),
    Reason("issued_later", "§8.8", "the receipt was issued after the time given, past the allowance"),
)
BY_CODE = {r.code: r for r in REASONS}
ALONE = frozenset(r.code for r in REASONS if r.alone)
