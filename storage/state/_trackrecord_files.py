"""The track record's data files as the state database knows them (issue 24, item 3; migration 0011).

Whoever writes a data file (a filing's batch, a compaction's heads and older rows) records its name and
the BLAKE3 of its bytes here before the file takes its name, so a file the database does
not know is never one qsolve wrote: the maintenance pass sets it aside and files its runs again
(``storage.maintenance``). Two writers of the same name may write other bytes (a batch filed twice at
once): each pair is kept, and a file holding either is known. Records of files long gone are forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._rows import now
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import trackrecord_files

CHUNK = 500  # names per IN (...) list
#: the record that says the files were checked once: no data file's name (none starts with a dot)
CHECKED = ".checked"


class TrackRecordFiles(Store):
    def record_trackrecord_file(self, name: str, digest: str) -> None:
        """Record a data file about to take ``name``, by the BLAKE3 (hex) of its bytes. Recorded already
        (the same batch filed again, or at once elsewhere): its time is brought forward, so that a pass
        forgetting old records meanwhile keeps it."""
        t = trackrecord_files.c
        try:
            with self._write() as connection:
                connection.execute(
                    trackrecord_files.insert().values(name=name, digest=digest, recorded_at=now())
                )
        except IntegrityError:
            with self._write() as connection:
                connection.execute(
                    trackrecord_files.update()
                    .where(t.name == name, t.digest == digest)
                    .values(recorded_at=now())
                )

    def known_trackrecord_files(self, names: Iterable[str]) -> set[tuple[str, str]]:
        """The (name, digest) pairs recorded for these names."""
        wanted = sorted(set(names))
        found: set[tuple[str, str]] = set()
        t = trackrecord_files.c
        with self._read() as connection:
            for i in range(0, len(wanted), CHUNK):
                query = sa.select(t.name, t.digest).where(t.name.in_(wanted[i : i + CHUNK]))
                found.update((name, digest) for name, digest in connection.execute(query))
        return found

    def has_trackrecord_files(self) -> bool:
        """Whether any data file was ever recorded, or the files found were adopted once (a database from
        before migration 0011 has neither). Stays true however many records are forgotten: the first
        check marks it (:data:`CHECKED`), so an emptied folder never opens adoption again."""
        t = trackrecord_files.c
        with self._read() as connection:
            marked = connection.execute(sa.select(t.name).where(t.name == CHECKED)).first() is not None
            if marked:
                return True
            any_file = connection.execute(sa.select(t.name).limit(1)).first() is not None
        if any_file:
            self.mark_trackrecord_checked()
        return any_file

    def mark_trackrecord_checked(self) -> None:
        """Mark that the files were checked (adopted, or recorded as written): never adopted again."""
        self.record_trackrecord_file(CHECKED, "")

    def forget_trackrecord_files(
        self, present: Iterable[str], older_than: timedelta = timedelta(days=1)
    ) -> int:
        """Forget the records, older than ``older_than``, of names no longer ``present``: files a
        compaction merged or a pass set aside. A record younger than that may be a file being written."""
        keep = set(present) | {CHECKED}
        t = trackrecord_files.c
        with self._read() as connection:
            old = connection.execute(
                sa.select(t.name).where(t.recorded_at < now() - older_than).distinct()
            ).scalars()
            gone = sorted(n for n in old if n not in keep)
        forgotten = 0
        for i in range(0, len(gone), CHUNK):
            with self._write() as connection:
                forgotten += connection.execute(
                    trackrecord_files.delete().where(
                        t.name.in_(gone[i : i + CHUNK]), t.recorded_at < now() - older_than
                    )
                ).rowcount
        return forgotten
