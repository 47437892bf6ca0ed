"""``python -m qsolve.targets.ibm save-key | collect RECORD | cancel RECORD`` (run by
``qsolve/targets/ibm/__main__.py``): the IBM target's own command, over the state database and blobs of
``QSOLVE_HOME``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from qsolve.errors import QsolveError
from qsolve.providers.credentials import CredentialStore, Secret
from qsolve.targets.ibm.later import cancel, collect
from qsolve.targets.ibm.names import PROVIDER

#: the help's first line
DESCRIPTION = "ibm:<device>: an IBM Quantum device through qiskit-ibm-runtime (docs/ibm.md)"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m qsolve.targets.ibm save-key | collect RECORD | cancel RECORD``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m qsolve.targets.ibm", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "save-key", help="keep QISKIT_IBM_TOKEN's key in the keychain, or a file only you can read"
    )
    for name, text in (
        ("collect", "follow a recorded IBM job and seal it"),
        ("cancel", "cancel a recorded IBM job"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("record")
    args = parser.parse_args(argv)
    try:
        if args.command == "save-key":
            value = os.environ.get("QISKIT_IBM_TOKEN")
            if not value:
                print(
                    "save-key: set QISKIT_IBM_TOKEN to the key (it is read from there, once)", file=sys.stderr
                )
                return 2
            stored = CredentialStore().put(PROVIDER, Secret(value))
            print(f"the IBM Quantum API key is kept in {stored.label}")
            return 0
        from qsolve_pipeline.storage.blobs import BlobStore
        from qsolve_pipeline.storage.sessions import keeper
        from qsolve_pipeline.storage.state import connect as connect_state
        from qsolve_pipeline.storage.state import qsolve_home

        with connect_state() as db:
            if args.command == "cancel":
                done = cancel(args.record, book=db)
                print(f"IBM job {args.record}: " + ("cancelled" if done else "had already ended"))
                return 0
            row = db.get_provider_job(args.record)
            if row.status in ("done", "failed", "cancelled"):  # ended: sealed once, never again
                print(f"IBM job {args.record} (IBM's id {row.job or 'never given'}): {row.status}")
                if row.receipt:
                    print(
                        f"IBM job {args.record}: done; receipt {BlobStore(qsolve_home()).where(row.receipt)}"
                    )
                elif row.error:
                    print(f"  {row.error}")
                return 0 if row.status == "done" else 1
            sealed = collect(args.record, book=db, keep=keeper(qsolve_home(), db))
        print(f"IBM job {args.record}: done; receipt {sealed.path}")
        return 0
    except QsolveError as e:
        print(f"python -m qsolve.targets.ibm: {e}", file=sys.stderr)
        return 1
