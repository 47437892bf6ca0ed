"""Hardware cases as quoted, confirmed, developer-paid runs (issue 13): ``qsolve quote``, ``qsolve
confirm`` (``commands``), over ``tasks.hardware``; docs/hardware.md."""
