"""qsolve's Prefect flows: ``submission``, ``history``, ``hardware`` (quote and hardware), ``evaluation``,
``calibration``, ``maintenance``; ``dispatch`` and ``server`` for the front doors, ``web_submission``
for the pages' uploads, ``endings`` (how a flow run ends, said in one line), ``queues`` (the work
pool's queues).
"""
