"""qsolve's Prefect flows: ``submission``, ``history``, ``hardware`` (quote and hardware), ``evaluation``,
``calibration``, ``maintenance``; ``dispatch`` and ``server`` for the front doors, ``web_submission``
for the pages' uploads, ``endings`` (how a flow run ends, said in one line), ``queues`` (the work
pool's queues).

Prefect 3.9's process worker runs a flow's ``on_cancellation`` and ``on_crashed`` hooks from a script in
``prefect/runner/``, a folder first on that process's ``sys.path`` holding Prefect's own ``storage.py``:
there ``import storage`` would find it, not qsolve's package. Until qsolve's pipeline packages import
under a name of their own, importing this package binds ``storage`` and ``tasks`` to the folders beside
it, by their real location, whatever ``sys.path`` holds first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def _bind(name: str) -> None:
    """``name`` imported from ``_ROOT / name`` (a package) unless it already is."""
    folder = _ROOT / name
    if not (folder / "__init__.py").is_file():
        return
    present = sys.modules.get(name)
    if present is not None and Path(getattr(present, "__file__", "") or "/").resolve().parent == folder:
        return
    spec = importlib.util.find_spec(name) if present is None else None
    if spec is not None and spec.origin and Path(spec.origin).resolve().parent == folder:
        return  # the usual case: sys.path finds it as it is
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


for _name in ("storage", "tasks"):
    _bind(_name)
