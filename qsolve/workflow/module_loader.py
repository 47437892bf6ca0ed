"""Importing a workflow's module from its file (only in the run, never in lint)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from blake3 import blake3


def load_module(path: Path) -> ModuleType:
    """Import ``path`` as a fresh module; its folder is importable for helper modules beside it."""
    name = "qsolve_workflow_" + blake3(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
