"""The web app's state database: one :class:`storage.state.StateDB` per app, opened on first use, its
connections pooled (``qsolve.web.pages.db`` gives it to a request)."""

from __future__ import annotations

import threading

from fastapi import FastAPI

from qsolve_pipeline.storage.state import StateDB

_lock = threading.Lock()


def state_db(app: FastAPI) -> StateDB:
    """The app's state database, opened on first use for ``app.state.home``."""
    found = getattr(app.state, "db", None)
    if found is None:
        with _lock:
            found = getattr(app.state, "db", None)
            if found is None:
                from qsolve_pipeline.storage.state import connect

                found = app.state.db = connect(home=app.state.home)
    return found
