"""The front door lists exactly what is public, sorted, and every error survives pickling."""

from __future__ import annotations

import pickle
from decimal import Decimal

import qsolve_pipeline.storage.state
from qsolve_pipeline.storage.state import InsufficientCredits, StateError, VersionConflict


def test_all_is_the_public_names_sorted() -> None:
    public = {name for name in dir(qsolve_pipeline.storage.state) if not name.startswith("_")}
    assert set(qsolve_pipeline.storage.state.__all__) == public
    assert qsolve_pipeline.storage.state.__all__ == sorted(
        qsolve_pipeline.storage.state.__all__, key=lambda n: (not n.isupper(), n)
    )


def test_errors_keep_their_subject_across_processes() -> None:
    error = InsufficientCredits("alice has 1 credits", account="alice", run_id="r1", needed=Decimal(2))
    copy = pickle.loads(pickle.dumps(error))
    assert copy == error and str(copy) == "alice has 1 credits"
    assert (copy.account, copy.needed, copy.reason) == ("alice", 2, "insufficient_credits")
    assert isinstance(pickle.loads(pickle.dumps(VersionConflict("x", workflow="w"))), StateError)
