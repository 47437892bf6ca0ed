"""``qsolve providers test NAME [--yes]``: the conformance checker and its vectors (quantum-provider-protocol
§9).

checker          the checks, in order (describe, estimates, messages, credentials, programs, reference,
                 cancel, and credentials/not-echoed over the whole run)
provider-v1.json the vectors, written by qsolve from §9: messages and their codes, credentials (a wrong
                 one, none, none quoted), programs and their
                 thresholds, the reference provider's counts, and billing, estimate and result answers
                 each with how a client reads it (held to qsolve.providers.messages by the tests)

One line per check (``pass``, ``FAIL``, ``skip``: not run, ``n/a``: not for this device), then a summary.
Exit 0 exactly when every check passes (``n/a`` is not a failure; a check not run is not a pass: a program
not run for its cost fails the run until ``--yes`` allows the spend), 1 otherwise, 2 for an unknown
provider, 130 on Ctrl-C: the checker keeps no record of its jobs, so the line names each job it sent whose
end it did not see, by the provider's id, and cancels none (§5.7: a job is not cancelled only because its
client stopped waiting). Nothing printed holds the provider's credential.
"""

from __future__ import annotations

import sys

from qsolve.providers.conformance.checker import NOT_RUN_COST, Checker, load_vectors

__all__ = ["NOT_RUN_COST", "Checker", "load_vectors", "run_checks"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def run_checks(name: str, *, yes: bool) -> int:
    """Check the provider named ``name`` in ``providers.yaml``; the exit code."""
    from qsolve.providers.connect import open_client
    from qsolve.providers.registry import Registry, RegistryError
    from qsolve.providers.transport import TransportError

    try:
        entry = Registry().get(name)
        first, _ = open_client(name, entry=entry)  # the credential read, the transport built: misuse here
    except (RegistryError, TransportError, OSError, ValueError) as e:
        print(f"qsolve providers test: {str(e).splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    opened = [first]

    def connect():
        if opened:
            return opened.pop()
        return open_client(name, entry=entry)[0]

    spend = (
        "the spend allowed (--yes)" if yes else "no spend allowed: jobs run only if every estimate is free"
    )
    print(f"qsolve providers test {name} ({entry.transport}; {spend})", file=sys.stderr)
    def connect_with(credential: str | None):
        return open_client(name, entry=entry, credential=credential)[0]

    checker = Checker(
        name, connect, yes=yes, emit=lambda line: print(line, flush=True), connect_with=connect_with
    )
    try:
        checker.run()
    except KeyboardInterrupt:
        left = checker.left_running()
        said = (
            f"; left at {name}, not cancelled (§5.7) and recorded nowhere here: {'; '.join(left)}: it may "
            "run on there, and be billed"
            if left
            else "; no job it sent runs on"
        )
        print(f"qsolve providers test: interrupted (Ctrl-C){said}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(checker.summary())
    return EXIT_OK if checker.passed else EXIT_FAILED
