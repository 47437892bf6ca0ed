"""A provider program's standard error, its log: drained by a thread so the program never blocks on it,
its last ``max_chars`` characters kept in memory (:meth:`ProviderLog.text`) and, when asked, a file of at
most :data:`LOG_FILE_BYTES` (moved aside at its bound, never written through a link: :class:`_LogFile`),
the credential taken out of both.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import logging
import os
import stat
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from qsolve.providers.errors import redact

log = logging.getLogger(__name__)

LOG_CHARS = 1 << 20
#: the most a provider's log file holds (``QSOLVE_HOME/providers/logs/NAME.log``): a write that would
#: take it past its bound first moves it to ``NAME.log.1`` (the one before is replaced), at start or
#: while writing, so the newest lines are kept and the two hold at most twice the bound
LOG_FILE_BYTES = 8 << 20


class ProviderLog:
    """A provider's standard error: its last ``max_chars`` characters, redacted, and a file if named.

    While the log is still being written it holds back the last ``len(credential) - 1`` characters,
    so that a credential split between two reads is never shown in part.
    """

    def __init__(
        self,
        *,
        secrets: Sequence[str | None] = (),
        max_chars: int = LOG_CHARS,
        path: Path | None = None,
        file_bytes: int = LOG_FILE_BYTES,
    ) -> None:
        self._secrets = tuple(s for s in secrets if s)
        self._hold = max((len(s) for s in self._secrets), default=1) - 1
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""
        self._kept: deque[str] = deque()
        self._size = 0
        self._dropped = 0
        self._max = max_chars
        self._lock = threading.Lock()
        self._file = _LogFile(path, file_bytes) if path else None

    def feed(self, data: bytes, *, final: bool = False) -> None:
        with self._lock:
            text = redact(self._pending + self._decoder.decode(data, final), self._secrets)
            cut = len(text) if final else max(0, len(text) - self._hold)
            out, self._pending = text[:cut], text[cut:]
            if not out:
                return
            self._kept.append(out)
            self._size += len(out)
            while self._size > self._max and self._kept:
                first = self._kept[0]
                over = self._size - self._max
                if len(first) <= over:
                    self._kept.popleft()
                    self._size -= len(first)
                    self._dropped += len(first)
                else:
                    self._kept[0] = first[over:]
                    self._size -= over
                    self._dropped += over
            if self._file is not None:
                self._file.write(out.encode("utf-8", "replace"))

    def text(self) -> str:
        with self._lock:
            head = f"[… {self._dropped} earlier characters dropped]\n" if self._dropped else ""
            return head + "".join(self._kept)

    def close(self) -> None:
        self.feed(b"", final=True)
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class _LogFile:
    """A provider's log file, written by every program of one provider at once (two ``qsolve run`` of
    it, a worker's and the command line's) and never through a link planted in its place.

    It is opened with ``O_NOFOLLOW`` and kept only when it is a regular file of this user's with one
    link: otherwise one line says so and nothing is written to it. Each write takes an ``flock`` on the
    file, checks that the name still leads to it (another program may have moved it aside: it is opened
    again) and counts against its real size (``fstat``): a write that would take it past its bound moves
    it to ``NAME.log.1`` first (the one before replaced, unless that is no regular file of ours: then the
    file keeps its bound and the rest is dropped, counted, and said). So the file never passes its bound
    and the newest program's lines are the ones kept."""

    def __init__(self, path: Path, bound: int) -> None:
        self.path = path
        self.aside = path.with_name(path.name + ".1")
        self.bound = max(1, bound)
        self.fd: int | None = None
        self.off = False  # refused: nothing more is written
        self.dropped = 0
        self._open()

    def _open(self) -> bool:
        """Open the file at :attr:`path` to append, never through a link, and check it is ours."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            why = "it is a symbolic link, never followed" if os.path.islink(self.path) else exc.strerror
            return self._refuse(str(why))
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
            os.close(fd)
            return self._refuse("it is not a regular file of this user's own (with one link)")
        self.fd = fd
        return True

    def _refuse(self, why: str) -> bool:
        self.off = True
        log.warning("provider log %s: nothing is written to it: %s", self.path, why)
        return False

    def _current(self) -> int | None:
        """The descriptor of the file :attr:`path` names, locked; ``None`` once refused."""
        for _ in range(8):
            if self.fd is None and (self.off or not self._open()):
                return None
            assert self.fd is not None
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            st = os.fstat(self.fd)
            try:
                there = os.lstat(self.path)
                if (there.st_dev, there.st_ino) == (st.st_dev, st.st_ino):
                    return self.fd
            except FileNotFoundError:
                pass
            self._close_fd()  # moved aside (or removed) by another program: the name's file is used
        return None

    def _close_fd(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # its lock goes with it

    def _rotate(self) -> bool:
        """Move the file (locked, named by :attr:`path`) to ``NAME.log.1``, never replacing a link or
        anything but a regular file of ours there."""
        try:
            st = os.lstat(self.aside)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                log.warning(
                    "provider log %s: not moved aside: %s is not a regular file of this user's own; the log "
                    "keeps its bound and the rest is dropped",
                    self.path,
                    self.aside.name,
                )
                return False
        except FileNotFoundError:
            pass
        try:
            os.rename(self.path, self.aside)
        except OSError:
            return False
        self._close_fd()
        return True

    def write(self, data: bytes) -> None:
        while data and not self.off:
            fd = self._current()
            if fd is None:
                return
            try:
                if self.dropped:  # it could not be moved aside: past its bound, dropped and counted
                    self.dropped += len(data)
                    return
                size = os.fstat(fd).st_size
                if size + len(data) <= self.bound:
                    _write_all(fd, data)
                    return
                if size == 0:  # one write longer than the bound: a bound's worth, then moved aside
                    piece = _cut(data, self.bound) or data[: self.bound]
                    _write_all(fd, piece)
                    data = data[len(piece) :]
                    continue
                if self._rotate():
                    continue  # the next turn opens a fresh file
                piece = _cut(data, max(0, self.bound - size))
                _write_all(fd, piece)
                _write_all(
                    fd,
                    f"\n[qsolve: this log reached its bound of {self.bound} bytes and could not be moved "
                    "aside; the rest of what the provider writes is dropped (its count follows when it "
                    "ends)]\n".encode(),
                )
                self.dropped = len(data) - len(piece)
                return
            finally:
                if self.fd is not None:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self.dropped and self.fd is not None:
            with contextlib.suppress(OSError):
                _write_all(self.fd, f"[qsolve: {self.dropped} bytes of this log were dropped]\n".encode())
        self._close_fd()


def _cut(data: bytes, size: int) -> bytes:
    """``data``'s first ``size`` bytes at most, never ending inside a UTF-8 character."""
    piece = data[:size]
    if len(piece) < len(data):
        while piece and (piece[-1] & 0xC0) == 0x80:
            piece = piece[:-1]
        if piece and piece[-1] >= 0xC0:
            piece = piece[:-1]
    return piece


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
