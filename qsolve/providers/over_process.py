"""A provider that is a local program (quantum-provider-protocol §2.2).

The program the person names is started with its arguments and no shell, in a session of its own, the
first time a message is sent. Each message is one line of JSON on its standard input and each answer
one line of JSON on its standard output. Anything else there (a line that is not JSON, or not an
object, a second line for one message, output nobody asked for, a line longer than ``max_line``) breaks
the protocol: the process is ended, and every later exchange on the transport fails saying why. So does
a provider that does not answer in time (it is killed: ``timeout``) or that ends (``transport``).

The program's environment is an allowlist (:mod:`qsolve.providers.program_env`); its standard error is
its log (:mod:`qsolve.providers.program_log`), drained so the program never blocks on it, the credential
taken out.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qsolve.providers.program_env import passed_names, provider_environment
from qsolve.providers.program_log import LOG_CHARS, ProviderLog
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
CHUNK = 1 << 16
CLOSE_GRACE_S = 2.0


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
        self._pass_env = passed_names(pass_env)
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
            try:  # noqa: SIM105 - not contextlib's: it may be None by then
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

    def __del__(self) -> None:  # also at the interpreter's end, when modules' names may be None already
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            try:  # noqa: SIM105 - not contextlib's: it may be None by then
                os.killpg(proc.pid, signal.SIGKILL)
            except Exception:
                pass
        confined = getattr(self, "_confined", None)
        if confined is not None:
            try:  # noqa: SIM105
                confined.end()
            except Exception:
                pass
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
