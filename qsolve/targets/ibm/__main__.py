"""``python -m qsolve.targets.ibm save-key | collect RECORD | cancel RECORD``: the entry point of the
command :mod:`qsolve.cli.ibm` (a front door: it opens the state database; the target itself does not)."""

from qsolve.cli.ibm import main

raise SystemExit(main())
