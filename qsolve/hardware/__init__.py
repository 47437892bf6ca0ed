"""Hardware cases as quoted, confirmed, developer-paid runs (issue 13), over ``tasks.hardware``;
docs/hardware.md.

shown      what a person is shown of a quote: its line, the device's cost, what confirming authorises
commands   ``qsolve quote``, ``qsolve confirm``, ``qsolve refuse`` (run through ``flows.dispatch``)
"""
