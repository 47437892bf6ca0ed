"""The track record's signed append-only log, and its fold, the files readers read (issue 34, item 2;
migration 0015; the entries' form: ``storage.trackrecord.log``).

Each append is one transaction: the head read, the entry signed by this host's receipt key
(``signing_key``), inserted under the next sequence number with the head's hash as its ``prev`` (both
unique: a writer that lost a race to another process or machine gets an IntegrityError and signs again
on the new head; no process lock), and the live set updated. An append that would change nothing (a
batch filed again, its file live already with the same digest) adds no entry.

A filing's entry (``durable=False``) is committed without waiting for its own fsync on a SQLite file
(``Store._write_durable_later``): it follows the batch's record (``record_trackrecord_file``, durable,
before the file takes its name), so losing it with the power leaves what a crash between the file taking
its name and its entry leaves, and what a maintenance pass mends (the runs are marked filed only by a
later commit, which makes the entry durable first). The log's first entry is always durable, and a
checkpoint is signed only over entries made durable (:meth:`TrackRecordLog.trackrecord_checkpoint`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from qsolve_pipeline.storage.state._rows import now
from qsolve_pipeline.storage.state._store import Store
from qsolve_pipeline.storage.state._tables import trackrecord_files, trackrecord_live, trackrecord_log

TRIES = 50  # appends lost to other writers before giving up (each loser signs again on the new head)


@dataclass(frozen=True)
class LiveFile:
    """A file of the live set: what a reader reads, checked against ``digest`` first."""

    name: str
    digest: str
    size: int
    rows: int
    seq: int
    seen: str | None


#: what log entries add, by database, seq and hash: (digest, size, rows) by name (``_signed_adds``)
_signed_cache: dict[tuple[str, int, str], dict[str, tuple[Any, Any, Any]]] = {}

OUTSIDE_LOG = (
    "the state database's live set says log entry {seq} added it{said}: the live set was changed outside "
    "the log (qsolve trackrecord verify names it)"
)


def _adds_of(document: Any) -> dict[str, tuple[Any, Any, Any]]:
    """An entry document's adds as name -> (digest, size, rows); nothing of what is not of that form."""
    import json

    try:
        adds = json.loads(document)["entry"]["adds"]
        return {a["name"]: (a["digest"], a["size"], a["rows"]) for a in adds if isinstance(a["name"], str)}
    except (ValueError, TypeError, KeyError):
        return {}


def _held_to_log(
    files: list[LiveFile], signed: dict[int, dict[str, tuple[Any, Any, Any]]]
) -> tuple[list[LiveFile], list[tuple[str, str]]]:
    held, outside = [], []
    for f in files:
        if f.seq not in signed:
            outside.append((f.name, OUTSIDE_LOG.format(seq=f.seq, said=", an entry the log does not have")))
            continue
        added = signed[f.seq].get(f.name)
        if added is None:
            outside.append((f.name, OUTSIDE_LOG.format(seq=f.seq, said=", but that entry adds no such file")))
        elif added != (f.digest, f.size, f.rows):
            outside.append(
                (
                    f.name,
                    OUTSIDE_LOG.format(seq=f.seq, said=", but not with the digest, size and rows it gives"),
                )
            )
        else:
            held.append(f)
    return held, outside


class TrackRecordLog(Store):
    _log_key: Any = None
    _log_started: bool = False

    def _trackrecord_signer(self) -> tuple[Any, str]:
        from qsolve.home import host_name

        if self._log_key is None:
            self._log_key = self.signing_key(self.home)
        return self._log_key, host_name()

    def append_trackrecord_entry(
        self,
        kind: str,
        adds: list[dict[str, Any]],
        retires: list[dict[str, str]] = (),
        *,
        durable: bool = True,
    ) -> dict[str, Any] | None:
        """Append an entry adding ``adds`` (``log.added``) and retiring ``retires`` ({name, digest});
        returns its document, or None where it would change nothing: each add already live with its
        digest, each retire not live with its digest. ``durable=False``: a filing's entry, durable with
        the next durable commit (module docstring); the log's first entry is durable all the same."""
        from qsolve.receipts import trackrecord_log as log

        key, host = self._trackrecord_signer()
        t, live = trackrecord_log.c, trackrecord_live.c
        write = self._write if durable or not self._log_started else self._write_durable_later
        for attempt in range(TRIES):
            try:
                with write() as connection:
                    names = sorted({a["name"] for a in adds} | {r["name"] for r in retires})
                    found = (
                        dict(
                            connection.execute(
                                sa.select(live.name, live.digest).where(live.name.in_(names))
                            ).all()
                        )
                        if names
                        else {}
                    )
                    todo_adds = [a for a in adds if found.get(a["name"]) != a["digest"]]
                    todo_retires = [r for r in retires if found.get(r["name"]) == r["digest"]]
                    if not todo_adds and not todo_retires:
                        return None
                    head = connection.execute(
                        sa.select(t.seq, t.hash).order_by(t.seq.desc()).limit(1)
                    ).first()
                    seq, prev = (head[0] + 1, head[1]) if head is not None else (1, log.GENESIS)
                    at_ms = time.time_ns() // 1_000_000
                    document = log.entry_document(seq, prev, kind, todo_adds, todo_retires, key, host, at_ms)
                    connection.execute(
                        trackrecord_log.insert(),
                        {
                            "seq": seq,
                            "prev": prev,
                            "hash": log.document_hash(document),
                            "document": log.text(document),
                            "recorded_at": now(),
                        },
                    )
                    gone = [r["name"] for r in todo_retires] + [a["name"] for a in todo_adds]
                    if gone:
                        connection.execute(trackrecord_live.delete().where(live.name.in_(gone)))
                    if todo_adds:
                        connection.execute(
                            trackrecord_live.insert(),
                            [
                                {
                                    "name": a["name"],
                                    "digest": a["digest"],
                                    "size": a["size"],
                                    "rows": a["rows"],
                                    "seq": seq,
                                    "seen": a.get("seen"),
                                }
                                for a in todo_adds
                            ],
                        )
                self._log_started = True
                return document
            except IntegrityError:
                if attempt == TRIES - 1:
                    raise
                continue
        return None

    def trackrecord_live_files(self) -> list[LiveFile]:
        """The live set, by name: the files every reader reads, each row as the log entry that added it
        signed it (:meth:`trackrecord_live_checked`; a row changed outside the log is not among them)."""
        return self.trackrecord_live_checked()[0]

    def trackrecord_live_checked(self) -> tuple[list[LiveFile], list[tuple[str, str]]]:
        """The live set's rows that are as the log entry they name (``seq``) added them (name, digest,
        size, rows), and the others, each (name, why): a row the state database's writer changed outside
        the log, which no reader reads and ``qsolve trackrecord verify`` names (it is not in the fold)."""
        c = trackrecord_live.c
        with self._read() as connection:
            rows = connection.execute(
                sa.select(c.name, c.digest, c.size, c.rows, c.seq, c.seen).order_by(c.name)
            ).all()
            signed = self._signed_adds(connection, {r[4] for r in rows})
        return _held_to_log([LiveFile(*r) for r in rows], signed)

    def trackrecord_live_file(self, name: str) -> LiveFile | None:
        """The live file of this name, or None (None too where its row is not as its entry signed it)."""
        c = trackrecord_live.c
        with self._read() as connection:
            found = connection.execute(
                sa.select(c.name, c.digest, c.size, c.rows, c.seq, c.seen).where(c.name == name)
            ).first()
            if found is None:
                return None
            signed = self._signed_adds(connection, {found[4]})
        held = _held_to_log([LiveFile(*found)], signed)[0]
        return held[0] if held else None

    def _signed_adds(self, connection, seqs: set[int]) -> dict[int, dict[str, tuple[str, int, int]]]:
        """What the log entries ``seqs`` add, by seq then name: (digest, size, rows). Kept per process by
        database, seq and the entry's hash (an entry is never rewritten by qsolve; one rewritten outside
        it fails ``qsolve trackrecord verify``'s signature check)."""
        if not seqs:
            return {}
        t = trackrecord_log.c
        url = self.engine.url.render_as_string(hide_password=True)
        wanted = sorted(s for s in seqs if isinstance(s, int))
        heads: dict[int, str] = {}
        for at in range(0, len(wanted), 500):
            chunk = wanted[at : at + 500]
            heads.update(connection.execute(sa.select(t.seq, t.hash).where(t.seq.in_(chunk))).all())
        todo = [s for s, h in heads.items() if (url, s, h) not in _signed_cache]
        for at in range(0, len(todo), 100):
            chunk = todo[at : at + 100]
            for seq, hash_, document in connection.execute(
                sa.select(t.seq, t.hash, t.document).where(t.seq.in_(chunk))
            ):
                if len(_signed_cache) > 100_000:
                    _signed_cache.clear()
                _signed_cache[(url, seq, hash_)] = _adds_of(document)
        return {s: _signed_cache.get((url, s, h), {}) for s, h in heads.items()}

    def trackrecord_log_started(self) -> bool:
        """Whether the log has an entry (kept once true: a log is never emptied)."""
        if not self._log_started:
            self._log_started = self.trackrecord_log_head()[0] > 0
        return self._log_started

    def mark_trackrecord_seen(self, name: str, digest: str, seen: str) -> None:
        """What identified a live file's bytes when they last matched its digest (a reader's cache)."""
        c = trackrecord_live.c
        with self._write() as connection:
            connection.execute(
                trackrecord_live.update().where(c.name == name, c.digest == digest).values(seen=seen)
            )

    def trackrecord_log_documents(self, after: int = 0) -> list[str]:
        """The log's entries after entry ``after``, in order, each its document's text."""
        t = trackrecord_log.c
        with self._read() as connection:
            return list(
                connection.execute(sa.select(t.document).where(t.seq > after).order_by(t.seq)).scalars()
            )

    def trackrecord_log_head(self) -> tuple[int, str]:
        """The log's size and its last entry's hash (``log.GENESIS`` when empty)."""
        from qsolve.receipts import trackrecord_log as log

        t = trackrecord_log.c
        with self._read() as connection:
            head = connection.execute(sa.select(t.seq, t.hash).order_by(t.seq.desc()).limit(1)).first()
        return (0, log.GENESIS) if head is None else (head[0], head[1])

    def trackrecord_checkpoint(self) -> dict[str, Any]:
        """The log's head as a signed checkpoint (``log.checkpoint_document``), by this host's key. The
        head is the hash of the log's last entry as its document has it, the chain checked from the
        first entry (each one's form, signature and link): never the ``hash`` column as it stands, which
        the state database's writer can set. A log that does not check is :class:`log.LogRefused`,
        naming its first problem: no checkpoint signed."""
        from qsolve.receipts import trackrecord_log as log

        key, host = self._trackrecord_signer()
        self._durable_now()  # never a checkpoint over an entry a power cut could still take back
        documents = []
        for n, text in enumerate(self.trackrecord_log_documents(), start=1):
            try:
                documents.append(log.read(text))
            except log.LogRefused as e:
                raise log.LogRefused(f"track-record log entry {n}: {e}; no checkpoint signed") from None
        chain = log.Chain.of(documents, None)
        if chain.problems:
            raise log.LogRefused(f"track-record log: {chain.problems[0]}; no checkpoint signed")
        size, head = self.trackrecord_log_head()
        if size != len(chain.hashes) or head != (chain.hashes[-1] if chain.hashes else log.GENESIS):
            raise log.LogRefused(
                f"track-record log: entry {size}'s recorded hash is not its document's; no checkpoint signed"
            )
        return log.checkpoint_document(size, head, key, host, time.time_ns() // 1_000_000)

    def recorded_trackrecord_files(self) -> list[tuple[str, str]]:
        """Every (name, digest) recorded before the log (migration 0011): what adoption takes in."""
        c = trackrecord_files.c
        with self._read() as connection:
            return [tuple(r) for r in connection.execute(sa.select(c.name, c.digest).where(c.digest != ""))]
