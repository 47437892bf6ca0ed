"""Signed receipts of ``wai.quantum.provider/1`` (quantum-provider-protocol §8): reading, sealing, verifying.

strict_json      strict reading of a job's text (§8.2 "Reading")
canonical        RFC 8785 canonical text, ECMAScript numbers (§8.2)
first_form       the first receipts' writer (§8.2 "The first form")
seal             the digest (domain bytes 0x01, 0x02, 0x03) and sealing a job (§8.2)
signature        Ed25519, strictly (§8.2 "The signature, strictly")
keys             the host key in QSOLVE_HOME/keys/
receipt          a receipt's own reasons (receipt_form ... inexact_number)
values           how the rules read a value (§8.4)
provider_rules   the provider rules of §8.4;  execution: §8.3's rules and rows
unchecked        the families of rules not run here (§8.7 contracts, §8.9, §8.10, wasmQ, landscape)
sets             a set's receipt and its Merkle tree (§8.6)
trust            trust lists and times (§8.8)
verifier         the verifier: every reason, as a set;  verdict: what it answers
reading          verify's inputs read (a time, its allowance), a verdict told plainly: command and page
endorsement      the host key's proof of possession, the root's endorsement, the root's signed list
root             the operator's root key: its file, and the public half each machine is configured with
newest           the newest endorsement of each key this machine has seen (no rollback)
trackrecord_log  the track record's signed log: its entries, checkpoints, fold and chain check

The commands (``qsolve verify``, ``qsolve receipt-key``) are :mod:`qsolve.cli.receipts`.
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

_HOMES = {
    "Document": "strict_json",
    "Form": "seal",
    "HeldTo": "trust",
    "HostKey": "keys",
    "KeyFileExposed": "keys",
    "SERVICE_LIMITS": "verifier",
    "TrustList": "trust",
    "TrustListRefused": "trust",
    "Unreadable": "strict_json",
    "Unsealable": "seal",
    "VERIFY_LIMITS": "verifier",
    "Verdict": "verdict",
    "canonical_bytes": "canonical",
    "canonical_text": "canonical",
    "digest": "seal",
    "es6_number": "canonical",
    "load_host_key": "keys",
    "qsolve_home": "keys",
    "read": "strict_json",
    "seal": "seal",
    "verify": "verifier",
    "verify_strict": "signature",
}

__all__ = sorted(_HOMES)


# the command line builds its parser without loading the verifier
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
