"""``python -m qsolve.cli``: the console script ``qsolve``."""

from qsolve.cli import run

run()
