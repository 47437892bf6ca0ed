"""How fast the verifier checks a receipt, beside the raw signature check it cannot be faster than.

Seals a typical provider result of about 2 KB (a stated sampler-v2 job on a processor) with a key made
for the run, then, pinned to one core, alternates rounds of full verification (strict reading, canonical
text, BLAKE3, the strict signature rule, every rule of §8.4, the verdict) with rounds of raw PyNaCl
verifications of the same signature over the same 32 digest bytes, and prints the best round of each
and their ratio. Alternating keeps a busy machine from favouring one side.

    python bench/receipts.py [--seconds S]        target: receipts at least 25% of the raw rate
    python bench/receipts.py --registered         verify --registered's and the page's checks

``--registered`` times what ``qsolve verify --registered`` does past opening the state database (the
trust list read from a SQLite database of 8 host keys and built, then one receipt verified held to it)
and what the workflow page does for a hardware row (the list built once, then 10 receipts verified held
to it). Where the code has endorsements (issue 33), every key is endorsed by a root made for the run and
configured as ``QSOLVE_RECEIPT_ROOT``, so the list is built from statements checked against it (once a
process; ``--cold`` checks them each time, as a fresh ``qsolve verify`` process does); run it on the code
before and after, in one sitting: target no more than 10% slower.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

import nacl.bindings
from blake3 import blake3

from qsolve.receipts.keys import HostKey
from qsolve.receipts.seal import seal
from qsolve.receipts.verifier import verify

TARGET = 0.25
QASM3 = (
    "OPENQASM 3.0;\nbit[3] c;\nrz(pi/2) $0;\nsx $0;\nrz(pi/2) $0;\ncz $0, $1;\nsx $1;\ncz $1, $2;\n"
    "sx $2;\nc[0] = measure $0;\nc[1] = measure $1;\nc[2] = measure $2;\n"
)


def typical_job(key: HostKey) -> dict:
    """A GHZ-3 run on a processor through the sampler kind: every member §8.1 lists, sealed."""
    counts = {"000": 478, "111": 461, "001": 21, "110": 17, "011": 12, "100": 11}
    result = {
        "method": "provider",
        "accuracy": {"class": "measured", "note": "counts measured on a processor, as it returned them"},
        "provider": {
            "name": "ibm-fez",
            "kind": "sampler-v2",
            "protocol": "ibm-runtime/sampler-v2",
            "device": "ibm_fez",
            "provenance": "silicon",
            "qubits": 156,
            "basis": "rzsxxcz",
            "describe": blake3(b"the device's description").hexdigest(),
        },
        "calibration": "2026-11-20T06:00:00Z",
        "compiled": {
            "basis": "rzsxxcz",
            "qasm3": QASM3,
            "program": blake3(QASM3.encode()).hexdigest(),
            "hash": "BLAKE3 of the UTF-8 bytes of qasm3",
            "native_gates": 9,
            "two_qubit_gates": 2,
            "swaps": 0,
            "layout": [0, 1, 2],
            "final_layout": [0, 1, 2],
            "checked": "equivalent to the circuit on random product states",
            "placement": {"target": "calibration", "expected_success": 0.94, "fewest_swaps_success": 0.94},
        },
        "job": {"id": "d1x7f3k2q9", "polls": 6},
        "counts": counts,
        "distinct_outcomes": len(counts),
        "omitted_shots": 0,
        "shots": 1000,
        "counts_source": "shots",
        "execution": {
            "stated_by": "client",
            "mitigation": "default",
            "twirling": "off",
            "decoupling": "off",
            "remapping": "default",
            "optimisation": "default",
            "verbatim": False,
            "sent": {
                "fields": ["backend", "params", "program_id"],
                "settings": {
                    "/params/options/dynamical_decoupling/enable": False,
                    "/params/options/twirling/enable_gates": False,
                    "/params/options/twirling/enable_measure": False,
                },
            },
        },
        "ideal": {
            "computed": True,
            "total_variation_distance": 0.077,
            "hellinger_fidelity": 0.923,
            "sampling_tvd_expected": 0.0178,
            "ideal_outcomes": 2,
        },
        "cost": {
            "free": False,
            "estimate": {"free": False, "amount": "1.60", "currency": "USD"},
            "charged": {"amount": "1.60", "currency": "USD"},
            "confirmed": True,
        },
        "energy": {"unmetered": "the provider does not meter a job's energy"},
        "engine": {"name": "wai-quantum", "version": "qsolve/0.1.0"},
        "schema": "wai.quantum.job-result/1",
    }
    request = {
        "provider": "ibm-fez",
        "qasm": "OPENQASM 3.0;\nqubit[4] q;\nh q[0];\ncx q[0], q[1];\n",
        "shots": 1000,
    }
    return seal(request, result, key)


def _rate(fn: Callable[[], object], seconds: float) -> float:
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(100):
            fn()
        n += 100
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def registered(args: argparse.Namespace, key: HostKey, text: bytes) -> None:
    """``--registered``: see the module's docstring."""
    import tempfile
    from pathlib import Path

    from qsolve.receipts.trust import HeldTo, TrustList
    from qsolve_pipeline.storage.state import connect

    with tempfile.TemporaryDirectory(prefix="qsolve-bench-") as tmp:
        keys = [key, *(HostKey(os.urandom(32)) for _ in range(7))]
        with connect(f"sqlite:///{tmp}/state.db", home=Path(tmp)) as db:
            endorsing = hasattr(db, "endorse_host_key")
            if endorsing:  # the code of issue 33: keys trusted through the root
                root = HostKey(os.urandom(32))
                os.environ["QSOLVE_RECEIPT_ROOT"] = root.public_hex
            for i, k in enumerate(keys):
                db.register_host_key(k if endorsing else k.public_hex, f"host-{i}")
                if endorsing:
                    db.endorse_host_key(k.public_hex, root)

            forget = None
            if endorsing and args.cold:  # a fresh process: no statement checked yet
                from qsolve.receipts.endorsement import _checked

                forget = _checked.cache_clear

            only = {"only": [key.public_hex]} if endorsing else {}  # the command checks the receipt's key

            def command() -> None:
                if forget is not None:
                    forget()
                held = HeldTo(trust=TrustList.from_value(db.trust_list(**only)))
                assert verify(text, held=held).valid

            def page() -> None:
                if forget is not None:
                    forget()
                held = HeldTo(trust=TrustList.from_value(db.trust_list()))
                for _ in range(10):
                    verify(text, held=held)

            commands, pages = [], []
            for _ in range(args.rounds):
                commands.append(_rate(command, args.seconds))
                pages.append(_rate(page, args.seconds))
    kind = "registered in the table"
    if endorsing:
        kind = "endorsed by a root, checked" + (" each time (no cache)" if args.cold else " (cached)")
    print(f"8 host keys {kind}; one core")
    print(f"verify --registered (list + 1 receipt): {max(commands):8.0f} /s")
    print(f"a page's hardware row (list + 10 receipts): {max(pages):6.0f} /s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="length of each round (default 0.5)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds of each (default 6)")
    parser.add_argument(
        "--registered", action="store_true", help="time verify --registered's and the page's checks"
    )
    parser.add_argument(
        "--cold", action="store_true", help="with --registered: check every statement again each time"
    )
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if args.registered:
        key = HostKey(os.urandom(32))
        registered(args, key, json.dumps(typical_job(key), indent=2).encode())
        return
    key = HostKey(os.urandom(32))
    job = typical_job(key)
    text = json.dumps(job, indent=2).encode()
    result_bytes = len(json.dumps(job["result"]).encode())
    verdict = verify(text)
    assert verdict.valid, verdict.reasons
    receipt = job["result"]["receipt"]
    signed = bytes.fromhex(receipt["signature"]) + bytes.fromhex(receipt["digest"])
    public = bytes.fromhex(receipt["key"])

    def raw() -> None:
        nacl.bindings.crypto_sign_open(signed, public)

    def full() -> None:
        verify(text)

    receipts, raws = [], []
    for _ in range(args.rounds):
        receipts.append(_rate(full, args.seconds))
        raws.append(_rate(raw, args.seconds))
    best_receipts, best_raw = max(receipts), max(raws)
    ratio = best_receipts / best_raw
    print(f"job text {len(text)} bytes (its result {result_bytes} bytes, compact), one core")
    print(f"receipts verified:       {best_receipts:8.0f} /s   (every rule of §8.4, strict signature)")
    print(f"raw PyNaCl verifications: {best_raw:7.0f} /s   (crypto_sign_open over the 32 digest bytes)")
    met = "met" if ratio >= TARGET else "NOT met"
    print(f"ratio:                   {ratio:8.1%}     (target at least {TARGET:.0%}: {met})")


if __name__ == "__main__":
    main()
