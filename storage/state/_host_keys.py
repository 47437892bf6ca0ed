"""Every host's receipt public key, registered in the state database (issue 26, item 3; docs/deploy.md).

Each host keeps its private key on its own machine (``QSOLVE_HOME/keys/``); the first time it signs (or
runs ``qsolve receipt-key``) it registers the public half here under its host name. The set is a trust
list of the form ``wai.quantum.receipt-keys/1`` (quantum-provider-protocol §8.8) that any verifier takes,
so a receipt sealed on one host verifies, held to it, on every other.

Two operator actions, from any machine (``qsolve receipt-key retire|revoke KEY``):

- **retired**: its holder signs no more with it (a routine rotation). What it signed stands: the entry
  keeps no end, since qsolve's receipts seal no time (§8.2) and an end would refuse them all. The host
  that holds it sets the key file aside and makes, registers and uses a new key the next time it signs.
- **revoked**: the key is no longer vouched for, from ``revoked_from_ms`` (0 by default: from the start,
  for a key someone else may have read). Every receipt it signed from then is refused ``key_revoked``,
  and so is every one that seals no time (§8.8). Its host moves to a new key as for a retired one.

A key is registered once (its primary key): two processes of a host registering at once agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from storage.state._errors import NotFound
from storage.state._rows import now, row_of
from storage.state._store import Store
from storage.state._tables import host_keys

KEY_ID_DIGITS = 16  # a key's id: the first 16 of its 64 hex digits


def _ms(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp() * 1000)


@dataclass(frozen=True)
class HostKeyRecord:
    """One registered key: whose host, when first seen, and whether it was retired or revoked."""

    key: str
    host: str
    first_seen_at: datetime
    retired_at: datetime | None = None
    revoked_from_ms: int | None = None
    note: str | None = None

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

    def entry(self) -> dict[str, Any]:
        """The trust list's entry: ``key`` and ``revoked_from_ms`` are what a verifier reads (§8.8); the
        rest (``host``, ``key_id``, ``first_seen_ms``, ``retired_ms``, ``note``) it ignores."""
        entry: dict[str, Any] = {"key": self.key}
        if self.revoked_from_ms is not None:
            entry["revoked_from_ms"] = self.revoked_from_ms
        entry |= {"host": self.host, "key_id": self.key_id, "first_seen_ms": _ms(self.first_seen_at)}
        if self.retired_at is not None:
            entry["retired_ms"] = _ms(self.retired_at)
        if self.note:
            entry["note"] = self.note
        return entry


def _record(row: Any) -> HostKeyRecord:
    return row_of(HostKeyRecord, row)


class HostKeys(Store):
    def register_host_key(self, key: str, host: str) -> HostKeyRecord:
        """Register ``key`` (64 lower-case hex digits) as ``host``'s, where it is not registered yet; the
        key's record either way (a key keeps the host it was first registered by)."""
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"{key!r} is not an Ed25519 public key of 64 lower-case hex digits")
        try:
            with self._write() as connection:
                if connection.execute(sa.select(host_keys.c.key).where(host_keys.c.key == key)).first():
                    return self._host_key(connection, key)
                connection.execute(host_keys.insert().values(key=key, host=host[:200], first_seen_at=now()))
                return self._host_key(connection, key)
        except IntegrityError:  # another process of the host registered it at the same moment
            with self._read() as connection:
                return self._host_key(connection, key)

    def host_keys(self) -> list[HostKeyRecord]:
        """Every registered key, first seen first."""
        query = sa.select(host_keys).order_by(host_keys.c.first_seen_at, host_keys.c.key)
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

    def retire_host_key(self, which: str, note: str | None = None) -> HostKeyRecord:
        """Retire a key: its holder signs no more with it; what it signed stands (module docstring)."""
        key = self.find_host_key(which).key
        with self._write() as connection:
            connection.execute(
                host_keys.update()
                .where(host_keys.c.key == key, host_keys.c.retired_at.is_(None))
                .values(retired_at=now(), **({"note": note[:500]} if note else {}))
            )
            return self._host_key(connection, key)

    def revoke_host_key(self, which: str, from_ms: int = 0, note: str | None = None) -> HostKeyRecord:
        """Revoke a key from ``from_ms`` (0: from the start): what it signed from then is refused. A key
        revoked already keeps the earlier of the two moments; a revoked key is retired as well."""
        if type(from_ms) is not int or not 0 <= from_ms <= 2**53 - 1:
            raise ValueError("a revocation's moment is a whole number of milliseconds from 0 to 2^53 - 1")
        key = self.find_host_key(which).key
        column = host_keys.c.revoked_from_ms
        with self._write() as connection:
            connection.execute(
                host_keys.update()
                .where(host_keys.c.key == key, sa.or_(column.is_(None), column > from_ms))
                .values(revoked_from_ms=from_ms, **({"note": note[:500]} if note else {}))
            )
            connection.execute(
                host_keys.update()
                .where(host_keys.c.key == key, host_keys.c.retired_at.is_(None))
                .values(retired_at=now())
            )
            return self._host_key(connection, key)

    def trust_list(self) -> dict[str, Any]:
        """The registered keys as a trust list (``wai.quantum.receipt-keys/1``, §8.8)."""
        from qsolve.receipts.trust import FORMAT

        return {"format": FORMAT, "algorithm": "ed25519", "keys": [r.entry() for r in self.host_keys()]}

    def signing_key(self, home: Path | None = None, host: str | None = None, tell=None):
        """This host's key (``home/keys/``, made on first use), registered; a key retired or revoked in the
        database is set aside and a new one made, registered and returned (``tell`` hears one line)."""
        from qsolve.home import host_name
        from qsolve.receipts.keys import load_host_key, retire_key_file

        host = host or host_name()
        key = load_host_key(home)
        record = self.register_host_key(key.public_hex, host)
        if record.in_use:
            return key
        retire_key_file(key.public_hex, home)
        new = load_host_key(home)
        self.register_host_key(new.public_hex, host)
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
