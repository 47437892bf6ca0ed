"""Hardware cases as quoted, confirmed, developer-paid runs (issue 13), over ``tasks.hardware``;
docs/hardware.md.

shown      what a person is shown of a quote: its line, the device's cost, what confirming authorises

The commands (``qsolve quote``, ``confirm``, ``refuse``) are :mod:`qsolve.cli.hardware`; a confirmed
quote's run is started through ``flows.dispatch``.
"""
