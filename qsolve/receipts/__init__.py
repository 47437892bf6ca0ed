"""Signed receipts of ``wai.quantum.provider/1`` (quantum-provider-protocol §8): reading, sealing, verifying.

strict_json      strict reading of a job's text (§8.2 "Reading")
canonical        RFC 8785 canonical text, ECMAScript numbers (§8.2)
first_form       the first receipts' writer (§8.2 "The first form")
seal             the digest (domain bytes 0x01, 0x02, 0x03) and sealing a job (§8.2)
signature        Ed25519, strictly (§8.2 "The signature, strictly")
keys             the host key in QSOLVE_HOME/keys/
receipt          a receipt's own reasons (receipt_form ... inexact_number)
provider_rules   the provider rules of §8.4;  execution: §8.3's rules and rows
unchecked        the families of rules not run here (§8.7 contracts, §8.9, §8.10, wasmQ, landscape)
sets             a set's receipt and its Merkle tree (§8.6)
trust            trust lists and times (§8.8)
verifier         the verifier: every reason, as a set;  verdict: what it answers
commands         ``qsolve verify`` and ``qsolve receipt-key``
"""

from qsolve.receipts.canonical import canonical_bytes, canonical_text, es6_number
from qsolve.receipts.keys import HostKey, KeyFileExposed, load_host_key, qsolve_home
from qsolve.receipts.seal import Form, Unsealable, digest, seal
from qsolve.receipts.signature import verify_strict
from qsolve.receipts.strict_json import Document, Unreadable, read
from qsolve.receipts.trust import HeldTo, TrustList, TrustListRefused
from qsolve.receipts.verdict import Verdict
from qsolve.receipts.verifier import SERVICE_LIMITS, VERIFY_LIMITS, verify

__all__ = [
    "Document",
    "Form",
    "HeldTo",
    "HostKey",
    "KeyFileExposed",
    "SERVICE_LIMITS",
    "TrustList",
    "TrustListRefused",
    "Unreadable",
    "Unsealable",
    "VERIFY_LIMITS",
    "Verdict",
    "canonical_bytes",
    "canonical_text",
    "digest",
    "es6_number",
    "load_host_key",
    "qsolve_home",
    "read",
    "seal",
    "verify",
    "verify_strict",
]
