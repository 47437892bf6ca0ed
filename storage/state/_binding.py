"""Shared storage in the state database (issue 26, item 4; DESIGN.md §7): the storage the database was first
used with, so that a home whose storage disagrees refuses to start (no silent split), and claims: work one
machine does at a time (the track record's compaction in object storage), each with an expiry that its
holder renews as it makes progress.

What "the same storage" means: an object store is ``s3://BUCKET/PREFIX`` (the endpoint is each machine's
own way to reach it, so not part of it); a local folder is the home's real path (symbolic links resolved),
and a recorded folder that is the same file as this one by another path (a bind mount) is the same. A
SQLite database inside the home with no object store is never bound: it moves with its folder.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from storage.state._errors import StorageMismatch
from storage.state._rows import now
from storage.state._store import Store
from storage.state._tables import claims, storage_binding

BINDING = "storage"


def storage_identity(home: Path) -> str:
    """What this home's storage is, as the state database records it."""
    from storage.objects import S3Objects, storage_of

    store = storage_of(home)
    if isinstance(store, S3Objects):
        return store.url
    return Path(os.path.realpath(home)).as_uri()


def _same(recorded: str, mine: str) -> bool:
    if recorded == mine:
        return True
    if not (recorded.startswith("file://") and mine.startswith("file://")):
        return False
    from urllib.parse import unquote, urlsplit

    try:
        return os.path.samefile(unquote(urlsplit(recorded).path), unquote(urlsplit(mine).path))
    except OSError:
        return False


class Binding(Store):
    def bind_storage(self, identity: str) -> None:
        """Record ``identity`` as this database's storage if none is, else check it is the same;
        :class:`StorageMismatch` (one line naming both) otherwise."""
        with self._read() as connection:
            row = connection.execute(sa.select(storage_binding.c.url)).first()
        if row is None:
            try:
                with self._write() as connection:
                    connection.execute(
                        storage_binding.insert().values(name=BINDING, url=identity, bound_at=now())
                    )
                return
            except IntegrityError:  # another home bound it at the same moment
                with self._read() as connection:
                    row = connection.execute(sa.select(storage_binding.c.url)).first()
        if not _same(row.url, identity):
            raise StorageMismatch(
                f"this home's storage is {identity}, but the state database {self._shown()} was first "
                f"used with {row.url}: point QSOLVE_STORAGE_URL (or QSOLVE_HOME) at that storage",
                recorded=row.url,
                storage=identity,
            )

    def _shown(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def claim(self, name: str, owner: str, seconds: float) -> bool:
        """Take or renew the claim ``name`` for ``owner`` until ``seconds`` from now: whether ``owner``
        holds it (another's claim that has not lapsed is kept). The database decides."""
        at = now()
        until = at + timedelta(seconds=seconds)
        with self._write() as connection:
            taken = connection.execute(
                claims.update()
                .where(claims.c.name == name, sa.or_(claims.c.owner == owner, claims.c.expires_at < at))
                .values(owner=owner, expires_at=until)
            ).rowcount
            if taken:
                return True
        try:
            with self._write() as connection:
                connection.execute(claims.insert().values(name=name, owner=owner, expires_at=until))
            return True
        except IntegrityError:
            return False

    def release_claim(self, name: str, owner: str) -> None:
        with self._write() as connection:
            connection.execute(claims.delete().where(claims.c.name == name, claims.c.owner == owner))
