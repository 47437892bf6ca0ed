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
import re
import secrets
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._errors import StorageMismatch
from qsolve_pipeline.storage.state._rows import clock, now
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import claims, storage_binding

if TYPE_CHECKING:
    from qsolve_pipeline.storage.objects import S3Objects

BINDING = "storage"
MARKER = "qsolve-binding"  #: the object under the store's prefix whose token the binding keeps
TOKEN = re.compile(r"[0-9a-f]{32}")
#: (database, store, endpoint) whose marker this process found the binding's: checked once per process
_checked: set[tuple[str, str, str]] = set()
BOUND = sa.select(storage_binding.c.url, storage_binding.c.token)


def storage_identity(home: Path) -> str:
    """What this home's storage is, as the state database records it."""
    from qsolve_pipeline.storage.objects import S3Objects, storage_of

    store = storage_of(home)
    if isinstance(store, S3Objects):
        return store.url
    return Path(os.path.realpath(home)).as_uri()


def _marker_token(store: S3Objects, proposed: str) -> str:
    """The token of ``store``'s marker: ``proposed``, written now if there was none (a create: of two
    homes writing at once one makes it, and the other reads it), else the one already there."""
    if store.create(MARKER, f"{proposed}\n".encode(), durable=True):
        return proposed
    found = _read_marker(store)
    if found is None:
        raise StorageMismatch(
            f"{store.address(MARKER)} at {store.endpoint}: the storage binding marker is there but holds no "
            "qsolve token (written by something else?): remove it, or point QSOLVE_STORAGE_URL elsewhere",
            storage=store.url,
        )
    return found


def _read_marker(store: S3Objects) -> str | None:
    """The token in ``store``'s marker; None where there is no marker or it holds none."""
    from qsolve_pipeline.storage.bounds import MARKER_BYTES
    from qsolve_pipeline.storage.objects import ObjectTooLarge

    try:
        text = store.get(MARKER, limit=MARKER_BYTES)[:200].decode("ascii", "replace").strip()
    except (FileNotFoundError, ObjectTooLarge):  # a larger object is not a marker qsolve wrote
        return None
    return text if TOKEN.fullmatch(text) else None


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
    def bind_storage(self, identity: str, store: S3Objects | None = None) -> None:
        """Record ``identity`` as this database's storage if none is, else check it is the same;
        :class:`StorageMismatch` (one line naming both) otherwise.

        ``store``, the object store ``identity`` names, is checked to be the one the database was first
        used with (a bucket of that name on another S3 server is not): the first binding writes a marker
        object holding a random token into it (a create, never over another's) and the database keeps
        the token; each start reads the marker (one small GET, once per process) and compares."""
        with self._read() as connection:
            row = connection.execute(BOUND).first()
        mine = None  # the token this store's marker holds, where this call has read or written it
        if row is None:
            if store is not None:
                mine = _marker_token(store, secrets.token_hex(16))
            try:
                with self._write() as connection:
                    connection.execute(
                        storage_binding.insert().values(
                            name=BINDING, url=identity, token=mine, bound_at=now()
                        )
                    )
                if store is not None:
                    _checked.add(self._checked_key(store))
                return
            except IntegrityError:  # another home bound it at the same moment
                with self._read() as connection:
                    row = connection.execute(BOUND).first()
        if not _same(row.url, identity):
            raise StorageMismatch(
                f"this home's storage is {identity}, but the state database {self._shown()} was first "
                f"used with {row.url}: point QSOLVE_STORAGE_URL (or QSOLVE_HOME) at that storage",
                recorded=row.url,
                storage=identity,
            )
        if store is None or self._checked_key(store) in _checked:
            return
        token = row.token
        if token is None:  # bound before the marker (migration 0010): write it now; the database decides
            mine = mine or _marker_token(store, secrets.token_hex(16))
            with self._write() as connection:
                connection.execute(
                    storage_binding.update()
                    .where(storage_binding.c.name == BINDING, storage_binding.c.token.is_(None))
                    .values(token=mine)
                )
                token = connection.execute(sa.select(storage_binding.c.token)).scalar_one()
        if mine is None:
            mine = _read_marker(store)
        if mine != token:
            held = "has no binding marker" if mine is None else f"holds binding marker {mine[:12]}"
            raise StorageMismatch(
                f"this home's storage {identity} at {store.endpoint} {held} ({MARKER}), but the state "
                f"database {self._shown()} was first used with {row.url} holding marker {token[:12]}: "
                "another S3 server with a bucket of that name; point AWS_ENDPOINT_URL at the server the "
                "database was first used with",
                recorded=f"{row.url} (marker {token})",
                storage=f"{identity} at {store.endpoint} (marker {mine})",
            )
        _checked.add(self._checked_key(store))

    def _checked_key(self, store: S3Objects) -> tuple[str, str, str]:
        return (self.engine.url.render_as_string(hide_password=True), store.url, store.endpoint)

    def _shown(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def claim(self, name: str, owner: str, seconds: float) -> bool:
        """Take or renew the claim ``name`` for ``owner`` until ``seconds`` from now: whether ``owner``
        holds it (another's claim that has not lapsed is kept). The database decides, by its own clock
        (written and judged alike, whatever this host's clock says)."""
        with self._write() as connection:
            at = clock(connection)
            taken = connection.execute(
                claims.update()
                .where(claims.c.name == name, sa.or_(claims.c.owner == owner, claims.c.expires_at < at))
                .values(owner=owner, expires_at=at + timedelta(seconds=seconds))
            ).rowcount
            if taken:
                return True
        try:
            with self._write() as connection:
                until = clock(connection) + timedelta(seconds=seconds)
                connection.execute(claims.insert().values(name=name, owner=owner, expires_at=until))
            return True
        except IntegrityError:
            return False

    def release_claim(self, name: str, owner: str) -> None:
        with self._write() as connection:
            connection.execute(claims.delete().where(claims.c.name == name, claims.c.owner == owner))
