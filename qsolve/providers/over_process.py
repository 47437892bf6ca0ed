"""A provider that is a local program (quantum-provider-protocol §2.2).

The program the person names is started with its arguments and no shell, in a session of its own, the
first time a message is sent. Each message is one line of JSON on its standard input and each answer
one line of JSON on its standard output. Anything else there (a line that is not JSON, or not an
object, a second line for one message, output nobody asked for, a line longer than ``max_line``) breaks
the protocol: the process is ended, and every later exchange on the transport fails saying why. So does
a provider that does not answer in time (it is killed: ``timeout``) or that ends (``transport``).

The program's environment is an allowlist (:func:`provider_environment`), however qsolve was started
(the command line, a serve script, a worker): what a program needs to start (``PATH``, ``TZ``, and
``LANG`` and the standard ``LC_*`` categories holding a locale's name), ``HOME`` and ``TMPDIR`` set to a
scratch folder of its own (owner-only, made when it starts and removed when it ends), the variables its
entry in ``providers.yaml`` names (``env: [NAME, ...]``, the person's own non-secret settings, never
the host's own secrets or settings by name, :func:`host_variable`, nor a value that is a secret,
:func:`host_value`), and its own credential, as ``WAI_PROVIDER_CREDENTIAL``, never on its command
line. Nothing else of this process's environment reaches it: no other provider's credential, no cloud
key (``QISKIT_IBM_TOKEN``, ``AWS_SECRET_ACCESS_KEY``), no database address. Its standard error is its
log: a thread drains it so the program never blocks on it, and keeps its last ``log_chars`` characters
(:meth:`ProcessTransport.log`) and, when asked, a file of at most :data:`LOG_FILE_BYTES` (moved aside
at its bound, never written through a link: :class:`_LogFile`), the credential taken out of both.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import logging
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qsolve.providers.errors import redact
from qsolve.providers.transport import (
    MAX_ANSWER_BYTES,
    TransportError,
    TransportProtocolError,
    TransportTimeout,
    encode_message,
    parse_answer,
)

if TYPE_CHECKING:
    from qsolve.providers.confined import Confinement

log = logging.getLogger(__name__)
CREDENTIAL_ENV = "WAI_PROVIDER_CREDENTIAL"
#: what a program needs to start, passed on from this process's environment when set (``LANG`` and the
#: locale categories only with a locale's value: :func:`locale_value`)
START_ENV = ("PATH", "LANG", "TZ")
#: the standard locale categories (POSIX and glibc's): no other ``LC_*`` variable is passed on
LOCALE_ENV = (
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_ADDRESS",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_NAME",
    "LC_PAPER",
    "LC_TELEPHONE",
)
#: a locale's name: ``C``, ``POSIX``, ``C.UTF-8``, ``en_US.UTF-8``, ``sr_RS@latin``, ``es_419.utf8``
LOCALE = re.compile(r"(C|POSIX|[a-z]{2,3}(_[A-Z]{2}|_[0-9]{3})?)(\.[A-Za-z0-9-]{1,20})?(@[A-Za-z0-9]{1,20})?")
#: set by the transport itself: a scratch folder, and the provider's own credential
OWN_ENV = ("HOME", "TMPDIR", CREDENTIAL_ENV)
LOG_CHARS = 1 << 20
#: the most a provider's log file holds (``QSOLVE_HOME/providers/logs/NAME.log``): a write that would
#: take it past its bound first moves it to ``NAME.log.1`` (the one before is replaced), at start or
#: while writing, so the newest lines are kept and the two hold at most twice the bound
LOG_FILE_BYTES = 8 << 20
CHUNK = 1 << 16
CLOSE_GRACE_S = 2.0


#: the prefixes of the host's own secrets and settings, never passed on by ``env`` (:func:`host_variable`)
HOST_PREFIXES = (
    ("QSOLVE_", "qsolve's own setting"),
    ("PREFECT_", "Prefect's setting"),
    ("QISKIT_IBM_", "IBM Quantum's credential or setting"),
    ("IBM_", "IBM's credential or setting"),
    ("AWS_", "a cloud credential or setting (AWS)"),
    ("AZURE_", "a cloud credential or setting (Azure)"),
    ("GOOGLE_", "a cloud credential or setting (Google)"),
    ("GCP_", "a cloud credential or setting (Google Cloud)"),
    ("GCLOUD_", "a cloud credential or setting (Google Cloud)"),
    ("CLOUDSDK_", "a cloud credential or setting (Google Cloud)"),
    ("PG", "the database's (PostgreSQL) setting"),
    ("MYSQL", "a database's setting"),
    ("OPENAI_", "a model's key or setting"),
    ("ANTHROPIC_", "a model's key or setting"),
    ("HF_", "a model hub's key or setting"),
    ("HUGGING_FACE_", "a model hub's key or setting"),
    ("SSH_", "the host's SSH agent or setting"),
    ("GPG_", "the host's keys"),
)
#: whole names of the host's secrets and settings
HOST_NAMES = {
    "DATABASE_URL": "a database's address",
    "REDIS_URL": "a database's address",
    "KRB5CCNAME": "the host's Kerberos credential",
    "DBUS_SESSION_BUS_ADDRESS": "the host's session bus (the keychain)",
}
#: what in a name marks it as a secret's, wherever it is in the name
SECRET_MARKS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE",
    "DATABASE_URL",
    "COOKIE",
    "SESSION",
    "BEARER",
    "CONNECTION_STRING",
    "CONN_STR",
)
#: what marks a secret as a part of a name between underscores (``DB_PASS``, ``GITHUB_PAT``, ``SENTRY_DSN``)
SECRET_PARTS = ("PASS", "PWD", "AUTH", "DSN", "CRED", "CREDS", "PAT", "JWT", "HMAC", "PASSCODE", "OTP")
#: ... and as the end of one (``DBPASS``, ``SMTPPWD``, ``OAUTH``, ``PGDSN``)
SECRET_ENDS = ("PASS", "PWD", "AUTH", "DSN")
#: parts that end like a mark and are no secret's; the working directories are no secret either
NOT_SECRET_PARTS = {"BYPASS", "COMPASS", "SURPASS", "OVERPASS", "UNDERPASS"}
NOT_SECRET_NAMES = {"PWD", "OLDPWD"}
#: a URL whose userinfo holds a password (``scheme://user:pass@host``), anywhere in a value
URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:]*:[^/?#@\s]*@")
#: the shortest secret a value is compared with (equal to it); from this length, held anywhere in it
SECRET_MIN_CHARS, SECRET_HELD_CHARS = 4, 8


def secret_name(name: str) -> str | None:
    """Why ``name`` is a secret's by its spelling (``TOKEN``, ``DB_PASS``, ``GITHUB_PAT``...), or ``None``."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return None
    for mark in SECRET_MARKS:
        if mark in upper:
            return f"its name marks a secret ({mark})"
    for part in upper.split("_"):
        if part in NOT_SECRET_PARTS:
            continue
        for mark in SECRET_PARTS:
            if part == mark or (mark in SECRET_ENDS and part.endswith(mark)):
                return f"its name marks a secret ({mark})"
    if upper.endswith("KEY"):
        return "its name marks a secret (…KEY)"
    return None


def host_variable(name: str, credential_envs: Sequence[str] = ()) -> str | None:
    """Why ``name`` is the host's secret or setting and is never passed on to a provider program by its
    entry's ``env`` (docs/providers.md), or ``None`` for one that may be. ``credential_envs``: the
    variables that hold some provider's credential (``--credential-env``) or a model's key."""
    upper = name.upper()
    if name in credential_envs:
        return "it holds a credential (a provider's --credential-env, or the evaluation model's key)"
    if upper in HOST_NAMES:
        return HOST_NAMES[upper]
    for prefix, what in HOST_PREFIXES:
        if upper.startswith(prefix):
            return f"{what} ({prefix}*)"
    return secret_name(name)


def host_value(value: str, secret_values: Sequence[str] = ()) -> str | None:
    """Why a variable holding ``value`` is never passed on to a provider program whatever its name (its
    value is never said), or ``None``: a URL's password in it (``scheme://user:pass@host``), or one of
    ``secret_values`` (the providers' stored credentials, qsolve's own secrets: equal to one, or holding
    one of :data:`SECRET_HELD_CHARS` characters or more)."""
    if URL_PASSWORD.search(value):
        return "its value holds a URL with a password (scheme://user:pass@host)"
    for secret in secret_values:
        if len(secret) < SECRET_MIN_CHARS:
            continue
        if value == secret or (len(secret) >= SECRET_HELD_CHARS and secret in value):
            return "its value is a credential qsolve keeps (a provider's, or qsolve's own secret)"
    return None


def locale_value(value: str) -> bool:
    """Whether ``value`` is a locale's name (or empty), as ``LANG`` and ``LC_*`` hold."""
    return value == "" or LOCALE.fullmatch(value) is not None


def provider_environment(
    source: Mapping[str, str],
    names: Sequence[str] = (),
    *,
    scratch: str | Path,
    credential: str | None = None,
    credential_envs: Sequence[str] = (),
    secret_values: Sequence[str] = (),
    said: Callable[[str], None] | None = None,
) -> dict[str, str]:
    """The whole environment of a provider process: from ``source`` (this process's), ``PATH`` and ``TZ``
    where set, ``LANG`` and the standard locale categories (:data:`LOCALE_ENV`) where set to a locale's
    name, and the ``names`` its entry passes on where set, but for the host's own secrets and settings
    (:func:`host_variable`) and any whose value is a secret (:func:`host_value`: a URL's password, one of
    ``secret_values``): skipped, each said in one line to ``said``, never its value; ``HOME`` and
    ``TMPDIR`` the ``scratch`` folder; ``WAI_PROVIDER_CREDENTIAL`` its ``credential``, when it has one.
    Nothing else."""
    env = {k: v for k, v in source.items() if k in ("PATH", "TZ")}
    env.update(
        {
            k: v
            for k, v in source.items()
            if k in ("LANG", *LOCALE_ENV) and isinstance(v, str) and locale_value(v)
        }
    )
    env.setdefault("PATH", os.defpath)
    for name in _passed(names):
        why = host_variable(name, credential_envs)
        if why is None and name in source:
            why = host_value(source[name], secret_values)
        if why is not None:
            (said or log.warning)(f"env {name}: not passed on to the provider program: {why}")
            continue
        if name in source:
            env[name] = source[name]
    env["HOME"] = env["TMPDIR"] = str(scratch)
    if credential:
        env[CREDENTIAL_ENV] = credential
    return env


def _passed(names: Sequence[str]) -> tuple[str, ...]:
    """The names of the person's variables a provider process is given; one qsolve sets is refused."""
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TransportError("the variables passed on to a provider are a list of names")
    for name in names:
        if name in OWN_ENV:
            raise TransportError(f"{name} is set by qsolve for a provider process; it is not passed on")
    return tuple(names)


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


class ProcessTransport:
    """One provider process; one JSON line each way per message."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        credential: str | None = None,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        cwd: str | Path | None = None,
        log_path: str | Path | None = None,
        log_chars: int = LOG_CHARS,
        max_line: int = MAX_ANSWER_BYTES,
        confinement: Confinement | None = None,
        home: Path | None = None,
        credential_envs: Sequence[str] = (),
        secret_values: Sequence[str] = (),
    ) -> None:
        """``env`` is where the allowed variables are read from (this process's environment when not
        given), and ``pass_env`` the names of the person's own variables passed on besides.
        ``confinement``: run the program confined (:mod:`qsolve.providers.confined`), seeing nothing of
        ``home`` (``QSOLVE_HOME``) or the keychain; ``None`` runs it as the host's user, as a test's
        stand-in does."""
        if isinstance(argv, str | bytes) or not argv or not all(isinstance(a, str) for a in argv):
            raise TransportError("a process provider is a program and its arguments: a list of strings")
        self.argv = tuple(argv)
        self.credential = credential or None
        self._source = dict(os.environ if env is None else env)
        self._pass_env = _passed(pass_env)
        #: variables that hold a credential on this host: never passed on, whatever ``pass_env`` says
        self._credential_envs = tuple(credential_envs)
        #: values that are a credential qsolve keeps: a variable holding one is never passed on either
        self._secret_values = tuple(secret_values)
        self._scratch: str | None = None
        self._cwd = cwd
        self._max_line = max_line
        self._log_path = Path(log_path) if log_path else None
        self._log = ProviderLog(secrets=(self.credential,), max_chars=log_chars, path=self._log_path)
        self._proc: subprocess.Popen[bytes] | None = None
        self._confinement = confinement
        self._home = home
        self._confined: Any = None  # qsolve.providers.confined.Started, once started confined
        #: what held of its confinement, once started confined (``missing``: what did not)
        self.confined: dict[str, Any] | None = None
        self._stderr_thread: threading.Thread | None = None
        self._buffer = bytearray()
        self._broken: str | None = None
        self._closed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ProcessTransport({list(self.argv)!r}{', with a credential' if self.credential else ''})"

    @property
    def pid(self) -> int | None:
        """The provider program's process id, as this host sees it (confined: the launcher's child)."""
        if self._proc is None:
            return None
        if self._confined is not None:
            try:
                children = Path(f"/proc/{self._proc.pid}/task/{self._proc.pid}/children").read_text().split()
                return int(children[0]) if children else None
            except (OSError, ValueError):
                return None
        return self._proc.pid

    def log(self) -> str:
        """The provider's standard error so far (its last characters), the credential taken out."""
        return self._log.text()

    # ---- the exchange ---------------------------------------------------------------------------

    def exchange(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        data = encode_message(message) + b"\n"
        with self._lock:
            if self._closed:
                raise TransportError("the transport was closed")
            if self._broken is not None:
                raise TransportError(f"the provider process is not used again: {self._broken}")
            if self._proc is None:
                self._start()
            deadline = time.monotonic() + timeout
            self._unasked()
            self._write(data, deadline, timeout)
            line = self._read_line(deadline, timeout)
            if self._buffer:
                self._fail(TransportProtocolError("the provider wrote more than one line for one message"))
            try:
                return parse_answer(line, (self.credential,))
            except TransportProtocolError as exc:
                self._fail(exc)
                raise  # unreachable: _fail raises

    def _start(self) -> None:
        self._scratch = tempfile.mkdtemp(prefix="qsolve-provider-")  # owner-only (0700)
        if self._confinement is not None:
            return self._start_confined(self._confinement)
        env = provider_environment(
            self._source,
            self._pass_env,
            scratch=self._scratch,
            credential=self.credential,
            credential_envs=self._credential_envs,
            secret_values=self._secret_values,
        )
        try:
            self._proc = subprocess.Popen(  # noqa: S603 - a list, no shell
                list(self.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=self._cwd,
                bufsize=0,
                close_fds=True,
                start_new_session=True,
                shell=False,
            )
        except OSError as exc:
            self._broken = f"it did not start: {exc.strerror or exc}"
            self._remove_scratch()
            raise TransportError(
                f"the provider program {self.argv[0]!r} did not start: {exc.strerror or exc}"
            ) from None
        self._started()

    def _start_confined(self, confinement: Confinement) -> None:
        """Start the program in its own confinement (:mod:`qsolve.providers.confined`); refuse to run it
        where the kernel gave less, unless its entry accepted that."""
        from qsolve.home import qsolve_home
        from qsolve.providers import confined as program

        assert self._scratch is not None
        scratch = os.path.join(self._scratch, "scratch")
        os.mkdir(scratch, 0o700)
        env = provider_environment(
            self._source,
            self._pass_env,
            scratch=scratch,
            credential=self.credential,
            credential_envs=self._credential_envs,
            secret_values=self._secret_values,
        )
        home = self._home or qsolve_home()
        pinned: dict[str, int] = {}
        try:
            ports = confinement.tcp_ports()
            read, write = program.readable(list(self.argv), list(confinement.read), home, confinement.write)
            # what it may have written near is bound as it was checked, never looked up again by name
            pinned = program.pin(program.to_pin([*read, *write]), home)
            started = program.start(
                list(self.argv),
                env=env,
                read=read,
                write=write,
                hidden=[str(h) for h in program.protected(home)],
                scratch=scratch,
                require=not confinement.accept_unconfined,
                cwd=str(self._cwd) if self._cwd else None,
                memory_mb=confinement.memory_mb,
                pinned=pinned,
                ports=ports,
            )
        except (OSError, program.Refused) as exc:
            self._broken = f"it did not start: {exc}"
            self._remove_scratch()
            raise TransportError(f"the provider program {self.argv[0]!r} did not start: {exc}") from None
        finally:
            for fd in pinned.values():
                os.close(fd)
        self._proc, self._confined, self.confined = started.proc, started, started.held
        if started.missing and not confinement.accept_unconfined:
            self._broken = "the kernel cannot confine it here"
            self._kill()
            raise TransportError(
                f"the provider program {self.argv[0]!r} cannot be confined on this machine ("
                + "; ".join(started.missing)
                + "): it was not run; qsolve providers add NAME --accept-unconfined NAME ... accepts that"
            )
        self._started()

    def _started(self) -> None:
        assert self._proc is not None
        assert self._proc.stdin is not None and self._proc.stderr is not None
        os.set_blocking(self._proc.stdin.fileno(), False)
        self._stderr_thread = threading.Thread(
            target=self._drain_stderr, args=(self._proc.stderr,), name="provider-stderr", daemon=True
        )
        self._stderr_thread.start()

    def _drain_stderr(self, pipe: Any) -> None:
        fd = pipe.fileno()
        try:
            while True:
                try:
                    chunk = os.read(fd, CHUNK)
                except OSError:
                    break
                if not chunk:
                    break
                self._log.feed(chunk)
        finally:
            self._log.feed(b"", final=True)

    def _unasked(self) -> None:
        """Output before a message is sent: a second answer written late, or an end."""
        if self._buffer:
            self._fail(TransportProtocolError("the provider wrote to its standard output unasked"))
        fd = self._stdout_fd()
        if select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, CHUNK)
            if chunk:
                self._fail(TransportProtocolError("the provider wrote to its standard output unasked"))
            self._fail(TransportError(f"the provider process ended ({self._exit_status()})"))

    def _write(self, data: bytes, deadline: float, timeout: float) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(TransportTimeout(f"the provider did not read the message within {timeout:g} s"))
            if not select.select([], [fd], [], left)[1]:
                continue
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                self._fail(TransportError(f"the provider process ended ({self._exit_status()})"))
            view = view[written:]

    def _read_line(self, deadline: float, timeout: float) -> bytes:
        fd = self._stdout_fd()
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end > self._max_line:
                self._fail(
                    TransportProtocolError(f"the provider wrote a line longer than {self._max_line} bytes")
                )
            if end >= 0:
                line = bytes(memoryview(self._buffer)[:end])  # one copy, not two
                del self._buffer[: end + 1]
                return line
            searched = len(self._buffer)
            if searched > self._max_line:
                self._fail(
                    TransportProtocolError(f"the provider wrote a line longer than {self._max_line} bytes")
                )
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self._fail(TransportTimeout(f"no answer within {timeout:g} s: the provider was ended"))
            chunk = os.read(fd, min(CHUNK, self._max_line + 1 - len(self._buffer)))  # never past the bound
            if not chunk:
                self._fail(
                    TransportError(f"the provider process ended before it answered ({self._exit_status()})")
                )
            self._buffer += chunk

    def _stdout_fd(self) -> int:
        assert self._proc is not None and self._proc.stdout is not None
        return self._proc.stdout.fileno()

    def _exit_status(self) -> str:
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "its standard output closed"
        if self._confined is not None and self._confined.cgroup.oom_killed():
            from qsolve.runtime.cgroups import RUNTIME_MB

            limit = self._confinement.memory_mb if self._confinement is not None else 0
            return (
                f"ended by its memory bound: over its limit of {limit} MB (and {RUNTIME_MB} MB for its "
                "runtime), the kernel's out-of-memory killer ended it"
            )
        if code == 127 and self._log_path is not None:  # the launcher's, or a shell's, "could not start"
            return f"exit code 127: its program could not be started; its log says why: {self._log_path}"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def _fail(self, exc: TransportError) -> None:
        """End the process's use for good, and raise ``exc``."""
        self._broken = str(exc)
        self._kill()
        raise exc

    # ---- ending ---------------------------------------------------------------------------------

    def _remove_scratch(self) -> None:
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    def _kill(self) -> None:
        proc = self._proc
        if proc is None:
            self._remove_scratch()
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: it and whatever it started
            except (ProcessLookupError, PermissionError):
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
        if self._confined is not None:  # every process it started, a new session's too, and its cgroup
            self._confined.end()
        self._reap()
        self._remove_scratch()

    def _reap(self) -> None:
        proc = self._proc
        assert proc is not None
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=2.0)
        if proc.stderr is not None and (self._stderr_thread is None or not self._stderr_thread.is_alive()):
            with contextlib.suppress(OSError):
                proc.stderr.close()

    def close(self) -> None:
        """End the provider's standard input, so it ends; kill it if it has not within a grace."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            proc = self._proc
            if proc is not None:
                if proc.poll() is None and proc.stdin is not None:
                    with contextlib.suppress(OSError):
                        proc.stdin.close()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=CLOSE_GRACE_S)
                self._kill()
            self._log.close()

    def __enter__(self) -> ProcessTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(Exception):
                os.killpg(proc.pid, signal.SIGKILL)
        confined = getattr(self, "_confined", None)
        if confined is not None:
            with contextlib.suppress(Exception):
                confined.end()
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
