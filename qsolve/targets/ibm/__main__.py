"""``python -m qsolve.targets.ibm save-key | collect RECORD | cancel RECORD``: the entry point (``cli.main``,
kept apart so that importing the package never loads this module under a second name)."""

from qsolve.targets.ibm.cli import main

raise SystemExit(main())
