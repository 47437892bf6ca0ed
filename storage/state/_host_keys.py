"""Every host's receipt public key, kept in the state database, trusted through the operator's root key
(issue 26, item 3; issue 33, item 4; docs/deploy.md, docs/receipts.md).

Each host keeps its private key on its own machine (``QSOLVE_HOME/keys/``); the first time it signs (or
runs ``qsolve receipt-key``) it registers the public half here under its host name, with its proof of
possession: a statement naming the key and the host, signed by the key (``qsolve.receipts.endorsement``).
A row here vouches for nothing: a key is trusted only where the operator's root key endorsed it
(``qsolve receipt-key endorse KEY --root FILE``), and :meth:`HostKeys.trust_list` lists a key only where
its endorsement holds by the root configured on this machine (``QSOLVE_RECEIPT_ROOT``). A key inserted
straight into this table, a statement copied from another key or signed by another key is "not endorsed".

Two operator actions, from any machine, each a new endorsement the root signs (``--root FILE``):

- **retired**: its holder signs no more with it (a routine rotation). What it signed stands: the entry
  keeps no end, since qsolve's receipts seal no time (§8.2) and an end would refuse them all. The host
  that holds it sets the key file aside and makes, registers and uses a new key the next time it signs.
- **revoked**: the key is no longer vouched for, from ``revoked_from_ms`` (0 by default: from the start,
  for a key someone else may have read). Every receipt it signed from then is refused ``key_revoked``,
  and so is every one that seals no time (§8.8). Its host moves to a new key as for a retired one.

The columns ``retired_at``, ``revoked_from_ms`` and ``note`` repeat what the root signed, for the host's
own use (it moves to a new key); no verifier reads them. A database writer can take an endorsement away
or put back an earlier endorsement of the same key it kept a copy of: it forges none, and a machine that
has read the newer statement keeps it (``qsolve.receipts.newest``: every standing here is held to the
newest endorsement this machine has seen). A reader that never read it and must not be rolled back holds
receipts to the operator's signed list (``qsolve receipt-key --trust-list --root FILE``).

A key is registered once (its primary key): two processes of a host registering at once agree.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve.receipts.endorsement import (
    POSSESSION,
    Standing,
    StatementRefused,
    check,
    endorse,
    endorsed_list,
    possession,
    standing,
)
from qsolve.receipts.keys import HostKey
from qsolve.receipts.newest import newest_standings
from qsolve.receipts.root import configured_root
from qsolve_pipeline.storage.state._errors import NotFound, StateError
from qsolve_pipeline.storage.state._rows import now, row_of
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import host_keys

KEY_ID_DIGITS = 16  # a key's id: the first 16 of its 64 hex digits


class EndorsementChanged(StateError):
    """The key's endorsement changed while the root signed a new one: nothing was written; run it again."""


@dataclass(frozen=True)
class HostKeyRecord:
    """One registered key: whose host, when first seen, whether retired or revoked (as the root last said,
    for the host's own use), its proof of possession and the root's endorsement (texts; unchecked here)."""

    key: str
    host: str
    first_seen_at: datetime
    retired_at: datetime | None = None
    revoked_from_ms: int | None = None
    note: str | None = None
    possession: str | None = field(default=None, repr=False)
    endorsement: str | None = field(default=None, repr=False)

    @property
    def key_id(self) -> str:
        return self.key[:KEY_ID_DIGITS]

    @property
    def in_use(self) -> bool:
        return self.retired_at is None and self.revoked_from_ms is None

    @property
    def status(self) -> str:
        if self.revoked_from_ms is not None:
            return f"revoked from {self.revoked_from_ms} ms"
        return "retired" if self.retired_at is not None else "in use"

    def standing(self, root: str) -> Standing:
        """The key as the root's endorsement says, checked against ``root`` (64 hex digits)."""
        return standing(self.key, self.endorsement, root)


def _record(row: Any) -> HostKeyRecord:
    return row_of(HostKeyRecord, row)


def _now_ms() -> int:
    return int(time.time() * 1000)


class HostKeys(Store):
    def register_host_key(self, key: HostKey, host: str) -> HostKeyRecord:
        """Register ``key`` as ``host``'s with its proof of possession, where it is not registered yet;
        the key's record either way (a key keeps the host it was first registered by). A row of the key
        whose proof does not hold by the key (written by someone else) is given the host's own proof."""
        proof = possession(key, host, _now_ms())
        public = key.public_hex
        try:
            with self._write() as connection:
                found = connection.execute(sa.select(host_keys).where(host_keys.c.key == public)).first()
                if found is None:
                    connection.execute(
                        host_keys.insert().values(
                            key=public, host=host[:200], first_seen_at=now(), possession=proof
                        )
                    )
                elif not _holds(found.possession, public):
                    connection.execute(
                        host_keys.update()
                        .where(host_keys.c.key == public, _same(host_keys.c.possession, found.possession))
                        .values(possession=proof, host=host[:200])
                    )
                return self._host_key(connection, public)
        except IntegrityError:  # another process of the host registered it at the same moment
            with self._read() as connection:
                return self._host_key(connection, public)

    def host_keys(self, only: Iterable[str] | None = None) -> list[HostKeyRecord]:
        """Every registered key (or those of ``only``), first seen first (endorsed or not)."""
        query = sa.select(host_keys).order_by(host_keys.c.first_seen_at, host_keys.c.key)
        if only is not None:
            query = query.where(host_keys.c.key.in_(list(only)))
        with self._read() as connection:
            return [_record(row) for row in connection.execute(query)]

    def find_host_key(self, which: str) -> HostKeyRecord:
        """A key by its 64 hex digits or its id (at least its first 16)."""
        which = which.strip().lower()
        if len(which) < KEY_ID_DIGITS:
            raise NotFound(
                f"{which!r}: give a key's id (16 hex digits) or the whole key", kind="key", key=which
            )
        query = sa.select(host_keys).where(host_keys.c.key.startswith(which, autoescape=True))
        with self._read() as connection:
            rows = connection.execute(query.limit(2)).all()
        if len(rows) != 1:
            said = "no registered key" if not rows else "more than one registered key"
            raise NotFound(
                f"{said} starts with {which} (qsolve receipt-key lists them)", kind="key", key=which
            )
        return _record(rows[0])

    def endorse_host_key(self, which: str, root: HostKey) -> HostKeyRecord:
        """The root endorses the key on its proof of possession (StatementRefused saying why where that
        proof does not hold). A key endorsed already keeps what the root said of it (retired, revoked)."""
        record = self.find_host_key(which)
        earlier = self._newest(record, root)
        if earlier.endorsed:  # the root's newest word this machine knows, put back where it was taken away
            if earlier.endorsement == record.endorsement:
                return record
            return self._endorse(record, earlier.endorsement)
        done = self._endorse(record, endorse(root, record.key, record.possession, _now_ms()))
        self.key_standings(root.public_hex, only=[done.key])  # remembered here (qsolve.receipts.newest)
        return done

    def retire_host_key(self, which: str, root: HostKey, note: str | None = None) -> HostKeyRecord:
        """Retire a key: its holder signs no more with it; what it signed stands (module docstring). The
        root signs it where it endorsed the key; a key it never endorsed is only marked for its host."""
        record = self.find_host_key(which)
        earlier = self._newest(record, root)
        at = _now_ms()
        document = None
        if earlier.endorsed:
            document = endorse(
                root, record.key, record.possession, at, earlier=earlier, retired_ms=at, note=note
            )
        done = self._endorse(record, document, retired=True, note=note)
        self.key_standings(root.public_hex, only=[done.key])  # remembered here: no rollback past it
        return done

    def revoke_host_key(
        self, which: str, root: HostKey, from_ms: int = 0, note: str | None = None
    ) -> HostKeyRecord:
        """Revoke a key from ``from_ms`` (0: from the start): what it signed from then is refused. A key
        revoked already keeps the earlier of the two moments; a revoked key is retired as well. The root
        signs it where it endorsed the key; a key it never endorsed is only marked for its host."""
        if type(from_ms) is not int or not 0 <= from_ms <= 2**53 - 1:
            raise ValueError("a revocation's moment is a whole number of milliseconds from 0 to 2^53 - 1")
        record = self.find_host_key(which)
        earlier = self._newest(record, root)
        document = None
        if earlier.endorsed:
            document = endorse(
                root,
                record.key,
                record.possession,
                _now_ms(),
                earlier=earlier,
                revoked_from_ms=from_ms,
                note=note,
            )
        done = self._endorse(record, document, retired=True, revoked_from_ms=from_ms, note=note)
        self.key_standings(root.public_hex, only=[done.key])  # remembered here: no rollback past it
        return done

    def _newest(self, record: HostKeyRecord, root: HostKey) -> Standing:
        """The key's standing by the newest endorsement of the database's and this machine's (newest)."""
        return newest_standings([record.standing(root.public_hex)], root.public_hex, self.home)[0]

    def _endorse(
        self,
        record: HostKeyRecord,
        document: str | None,
        *,
        retired: bool = False,
        revoked_from_ms: int | None = None,
        note: str | None = None,
    ) -> HostKeyRecord:
        key = record.key
        with self._write() as connection:
            if document is not None:
                changed = connection.execute(
                    host_keys.update()
                    .where(host_keys.c.key == key, _same(host_keys.c.endorsement, record.endorsement))
                    .values(endorsement=document)
                ).rowcount
                if changed != 1:
                    raise EndorsementChanged(
                        f"the endorsement of {record.key_id} changed meanwhile: nothing was written; "
                        "run it again"
                    )
            if note:
                connection.execute(host_keys.update().where(host_keys.c.key == key).values(note=note[:500]))
            if retired:
                connection.execute(
                    host_keys.update()
                    .where(host_keys.c.key == key, host_keys.c.retired_at.is_(None))
                    .values(retired_at=now())
                )
            if revoked_from_ms is not None:
                column = host_keys.c.revoked_from_ms
                connection.execute(
                    host_keys.update()
                    .where(host_keys.c.key == key, sa.or_(column.is_(None), column > revoked_from_ms))
                    .values(revoked_from_ms=revoked_from_ms)
                )
            return self._host_key(connection, key)

    def key_standings(
        self, root: str | None = None, only: Iterable[str] | None = None
    ) -> list[tuple[HostKeyRecord, Standing]]:
        """Every registered key (or those of ``only``) with its standing under ``root`` (default: the
        configured root, NoReceiptRoot where there is none)."""
        root = root or configured_root()
        records = self.host_keys(only)
        # each key held to the newest endorsement this machine has seen: a replayed older one is no rollback
        standings = newest_standings([r.standing(root) for r in records], root, self.home)
        return list(zip(records, standings, strict=True))

    def trust_list(self, root: str | None = None, only: Iterable[str] | None = None) -> dict[str, Any]:
        """The keys the root endorsed as a trust list (``wai.quantum.receipt-keys/1``, §8.8): checked
        against ``root`` (default: ``QSOLVE_RECEIPT_ROOT``; NoReceiptRoot where none is configured).
        ``only``: the keys a reader will look up (a verifier, one receipt's), so no other is checked."""
        return endorsed_list([s for _, s in self.key_standings(root, only)])

    def page_trust_list(self) -> tuple[dict[str, Any], str | None]:
        """What the pages hold receipts to: the endorsed keys as a trust list, and None; or, where no root
        is configured on this machine, an empty list (nothing is trusted) and the line that says why."""
        from qsolve.receipts.root import NoReceiptRoot

        try:
            return self.trust_list(), None
        except NoReceiptRoot as e:
            return endorsed_list([]), str(e)

    def signing_key(self, home: Path | None = None, host: str | None = None, tell=None):
        """This host's key (``home/keys/``, made on first use), registered; a key retired or revoked is
        set aside and a new one made, registered and returned (``tell`` hears one line). A key not yet
        endorsed signs all the same: its receipts verify as registered once the root endorses it."""
        from qsolve.home import host_name
        from qsolve.receipts.keys import load_host_key, retire_key_file

        host = host or host_name()
        key = load_host_key(home)
        record = self.register_host_key(key, host)
        if record.in_use:
            return key
        retire_key_file(key.public_hex, home)
        new = load_host_key(home)
        self.register_host_key(new, host)
        if tell is not None:
            tell(
                f"receipt key {record.key_id} is {record.status}: this host signs with a new key "
                f"{new.public_hex[:16]}"
            )
        return new

    @staticmethod
    def _host_key(connection: sa.Connection, key: str) -> HostKeyRecord:
        row = connection.execute(sa.select(host_keys).where(host_keys.c.key == key)).first()
        if row is None:
            raise NotFound(f"no registered key {key}", kind="key", key=key)
        return _record(row)


def _holds(proof: str | None, key: str) -> bool:
    try:
        check(POSSESSION, proof, key, key)
    except StatementRefused:
        return False
    return True


def _same(column: Any, value: str | None) -> Any:
    return column.is_(None) if value is None else column == value
