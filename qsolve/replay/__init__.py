"""Replay (issue 40): a version's bundle, checked offline and run again, so that a reader re-derives
every number of its track record from the published code and the device's own sealed counts.

bundle      the bundle's form: one zip, the same bytes for the same track record, read with safezip
rows        track-record rows as a replay reads them from the files the log signed
checks      the log, its checkpoint, the files, the rows, the archive and the receipts, checked
sealed      the replay target of a hardware row: each circuit answered with the counts sealed for it
compare     a row's numbers against its case run again (the reproducible gate's tolerances)
replaying   the replay itself, its report, its table

Nothing here imports Prefect or storage (the exporter is ``storage.trackrecord.export``).
"""

from __future__ import annotations

from qsolve.lazy import lazy_names

__getattr__, __dir__ = lazy_names(
    __name__,
    {"Bundle": "bundle", "read_bundle": "bundle", "replay": "replaying", "ReplayReport": "replaying"},
)

__all__ = ["Bundle", "ReplayReport", "read_bundle", "replay"]
