"""A process provider's program, confined (issue 35): built from the sandbox's parts, as a workflow
process is (the parts run in the launcher, :mod:`qsolve.sandbox.launcher`, started by name: nothing of
the sandbox is imported here).

The platform starts ``python -m qsolve.sandbox.launcher PLAN`` in place of the program (:func:`start`):
between fork and exec it joins a memory and a pids cgroup of its own (:mod:`qsolve.runtime.cgroups`)
and takes new PID, mount, IPC, UTS and cgroup namespaces (never a network namespace: a provider may need
its device). The launcher (:mod:`qsolve.sandbox.launcher`) forks once, so that its child is the first
process of the new PID namespace, and the child, in this order:

1. builds a root of its own (:mod:`qsolve.sandbox.rootfs`): the runtime and the system's libraries, the
   files a resolver and TLS need (the CA certificates, never a folder of private keys; nothing only
   root may read: :data:`qsolve.sandbox.rootfs.ROOT_ONLY` is covered), the program, and the paths its
   entry allows (``--allow-read``),
   read-only; the paths its arguments name that exist (its jobs' folder, its log), or the folder of one
   it will make (not ``/``, ``/tmp`` or a home), writable, unless they are the system's or the runtime's,
   with ``QSOLVE_HOME`` covered by an empty folder where it lies in one (:func:`readable`); its scratch
   folder (``HOME``, ``TMPDIR``) a ``tmpfs``; a ``/proc``
   of its own PID namespace, where no other process is. Never ``QSOLVE_HOME``, the keychain's files,
   another provider's credential or another process's ``/proc/PID/environ``, whatever names them;
2. leaves root for ``nobody`` (:mod:`qsolve.sandbox.privileges`) keeping, across its exec, only the
   capabilities to read and write past the files' modes (``CAP_DAC_READ_SEARCH``, ``CAP_DAC_OVERRIDE``):
   what it reaches is its root's and Landlock's to say, as for a workflow process (so its root binds
   nothing only root may read: the runtime may lie in a folder only root may enter, /root/.pyenv, and
   an ``--allow-read`` or ``--allow-write`` path may be root's own 0600 file); none to trace, signal,
   mount or administer anything;
3. Landlock: reads only those paths, writes only its scratch folder and its named paths, connects over
   TCP only to the ports its entry allows (:data:`PORTS`, and ``--allow-port``: never the state
   database's or the Prefect API's, :func:`platform_ports`), binds no TCP port, and signals and abstract
   unix sockets scoped to itself (the network is not a namespace of its own: its device may be across it;
   Landlock does not filter UDP, so a resolver's DNS works);
4. seccomp: every call but tracing or reading another process, namespaces, mounts, files by handle and
   the kernel's own large interfaces (:func:`qsolve.sandbox.seccomp.install_program`);
5. writes what held (one JSON line) on a descriptor the exec closes, and runs the program with the
   environment it was given (``WAI_PROVIDER_CREDENTIAL`` its own credential and no other).

The program is the first process of its PID namespace: when it ends, the kernel ends every process it
started, a child in a session of its own too; the launcher's first process dies with the platform's
client: it watches a pipe (its lifeline) whose other end only the client holds, and kills the program
when that closes, however the client ended, whichever of its threads started it (not
``PR_SET_PDEATHSIG``, which is tied to the starting thread); the cgroup is emptied and removed when the
client closes the transport. Where the kernel gives less, :attr:`Started.missing` says what, and the program
does not run unless its entry accepted that by name (``qsolve providers add NAME ... --accept-unconfined
NAME``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import stat
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWCGROUP = 0x20000000, 0x02000000
#: tried in this order until one is granted (no network namespace: the program may need its device)
NAMESPACES = (
    CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP,
    CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC,
    CLONE_NEWPID,
)
#: the memory a provider's program may hold, with everything it starts (its cgroup's, on top of
#: :data:`qsolve.runtime.cgroups.RUNTIME_MB`)
MEMORY_MB = 1024
#: what every provider's program may read besides its own: the runtime, the system's libraries, what a
#: resolver and TLS read (its device may be across the network)
SYSTEM_READ = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    # what TLS reads: the CA certificates and OpenSSL's settings, never a folder of private keys
    # (/etc/ssl/private, /etc/pki/tls/private): the program reads past the files' modes (below)
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/ca-trust",
    "/etc/pki/tls/certs",
    "/etc/pki/tls/cert.pem",
    "/etc/pki/tls/openssl.cnf",
    "/dev/null",
    "/dev/urandom",
    "/dev/zero",
    "/sys/devices/system/cpu",
    "/proc",  # its own PID namespace's: no other process is in it
)
WRITE = ("/dev/null",)
#: the TCP ports every provider's program may connect to (on any address: Landlock's rule is a port's);
#: more only by its entry (``--allow-port``). HTTPS alone: not 80, so that a credential never crosses the
#: network in the clear, and since port 80 is where a cloud's metadata service (169.254.169.254) and many
#: of a host's own web services answer whoever asks
PORTS = (443,)
#: the usual ports of the platform's own services, refused to ``--allow-port`` whatever is configured
#: here (a worker's settings may name them where ``providers add`` ran without): PostgreSQL, Prefect
USUAL_PLATFORM_PORTS = {5432: "PostgreSQL's usual", 4200: "Prefect's usual"}


class Refused(ValueError):
    """A path a provider's program may not be given: one that is, holds or lies in a protected folder;
    or a TCP port that is not one, or is one of the platform's own services."""


def platform_ports(environ: dict[str, str] | None = None) -> dict[int, str]:
    """The TCP ports of the platform's own services, as this process is configured (``QSOLVE_DATABASE_URL``,
    ``PREFECT_API_URL``) and as they usually are (:data:`USUAL_PLATFORM_PORTS`): ``{port: whose}``."""
    from urllib.parse import urlsplit

    environ = os.environ if environ is None else environ
    ports = dict(USUAL_PLATFORM_PORTS)
    defaults = {"postgresql": 5432, "postgres": 5432, "http": 80, "https": 443}
    for variable, whose in (
        ("QSOLVE_DATABASE_URL", "the state database's"),
        ("PREFECT_API_URL", "the Prefect API's"),
    ):
        raw = environ.get(variable, "")
        if not raw:
            continue
        try:
            parts = urlsplit(raw)
            port = parts.port or defaults.get(parts.scheme.split("+", 1)[0])
        except ValueError:
            continue
        if port:
            ports[port] = f"{whose} ({variable})"
    return ports


def check_ports(
    ports: list[str] | tuple[str | int, ...], environ: dict[str, str] | None = None
) -> tuple[int, ...]:
    """The TCP ports ``--allow-port`` names, as numbers; :class:`Refused` naming one that is not a port
    (1 to 65535) or is one of the platform's own services' (:func:`platform_ports`): a program that may
    connect to it may try that service's every account, and gets in where it admits by address."""
    services = platform_ports(environ)
    out: list[int] = []
    for raw in ports:
        text = str(raw).strip()
        if not text.isascii() or not text.isdigit() or len(text) > 5 or not 1 <= int(text) <= 65535:
            raise Refused(f"--allow-port {text[:20]!r}: not a TCP port (a whole number from 1 to 65535)")
        port = int(text)
        if port in services:
            raise Refused(
                f"--allow-port {port}: that is {services[port]} port; a provider's program never connects "
                "to the platform's own services"
            )
        out.append(port)
    return tuple(dict.fromkeys(out))


def protected(home: Path) -> list[Path]:
    """What no provider's program sees: ``QSOLVE_HOME`` (its keys, its credentials folder, the state)
    and the keychain's files."""
    user = Path.home()
    keychains = [user / ".local/share/keyrings", user / ".local/share/python_keyring", user / ".gnupg"]
    return [p.resolve() for p in (home, *keychains)]


def check_readable(path: str | Path, home: Path) -> str:
    """``path`` as an absolute path, or :class:`Refused` naming it: one that is or holds ``QSOLVE_HOME``
    or the keychain's files, or lies in one."""
    real = Path(path).expanduser().resolve()
    for guarded in protected(home):
        if real == guarded or guarded.is_relative_to(real) or real.is_relative_to(guarded):
            raise Refused(
                f"{path}: a provider's program may not read it: it is, holds or lies in {guarded} "
                "(QSOLVE_HOME or the keychain)"
            )
    return str(Path(path).expanduser().absolute())


@cache
def runtime_paths() -> frozenset[str]:
    """The Python runtime this platform runs on, and its packages (a provider is often a Python script)."""
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    paths |= {p for p in sys.path if p.endswith("-packages")}
    paths.add(str(Path(__file__).resolve().parents[1]))  # the qsolve package: `-m qsolve.providers.reference`
    for folder in [p for p in sys.path if p.endswith("-packages")]:  # packages installed editable: sources
        for finder in Path(folder).glob("__editable___*_finder.py"):
            text = finder.read_text(errors="replace")
            paths |= set(re.findall(r"'(/[^']+)'", text.partition("MAPPING")[2].partition("\n")[0]))
    return frozenset(paths)


def _under(real: Path, roots: list[Path]) -> bool:
    return any(real == r or real.is_relative_to(r) for r in roots)


def _named(path: str, home: Path, roots: list[Path], what: str) -> str | None:
    """A path the operator named, as it is on the host (no link in it), or ``None`` where there is
    none; :class:`Refused` for one reached through a symbolic link that leads outside ``roots`` (a
    program may plant a link where it may write, and is never given what a link points at) or one
    that is, holds or lies in a protected folder."""
    absolute = os.path.abspath(os.path.expanduser(path))
    if not os.path.lexists(absolute):
        return None
    real = os.path.realpath(absolute)
    if real != absolute and not _under(Path(real), roots):
        raise Refused(
            f"{what}{path}: a provider's program is never given a path through a symbolic link "
            f"(it leads to {real}); name the real path"
        )
    try:
        return check_readable(real, home)
    except Refused as e:
        raise Refused(f"{what}{e}") from None


def readable(
    argv: list[str], allowed: list[str], home: Path, allowed_write: list[str] | tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    """``(read, write)``: what the program may read, and write besides its scratch folder. It reads
    :data:`SYSTEM_READ`, the runtime, the program itself, ``allowed`` (``--allow-read``) and each path
    its arguments name that exists; it writes only ``allowed_write`` (``--allow-write``: the operator's
    word), each that exists. A path its arguments name is only read, and one that does not exist is
    given nothing (not its folder). A path named through a symbolic link (one the program may have
    planted) is :class:`Refused`, never followed, unless the link is the runtime's; so is an allowed
    one that is, holds or lies in a protected folder (a named one is not given). Nothing that is, holds
    or lies in ``QSOLVE_HOME`` or the keychain, whatever named it."""
    found = shutil.which(argv[0]) if os.sep not in argv[0] else argv[0]
    named = [a for a in argv[1:] if a.startswith(("/", "./", "../")) or os.sep in a]
    fixed = [p for p in [*runtime_paths(), *SYSTEM_READ] if os.path.exists(p)]
    roots = [Path(p).resolve() for p in fixed]
    read = {r for p in allowed if (r := _named(p, home, [], "--allow-read ")) is not None}
    for candidate in [*([found] if found else []), *fixed]:
        with contextlib.suppress(Refused):
            read.add(check_readable(candidate, home))
    write = {w for p in allowed_write if (w := _named(p, home, [], "--allow-write ")) is not None}
    for candidate in named:
        try:
            real = _named(candidate, home, roots, "its command's path ")
        except Refused as e:
            if "symbolic link" in str(e):
                raise
            continue  # QSOLVE_HOME or the keychain, named: not given
        if real is not None:
            read.add(real)
    return sorted(read - write), sorted(write)


def to_pin(paths: list[str]) -> list[str]:
    """Those of ``paths`` outside the runtime and the system's files: what a program may have written
    near (its command's paths, ``--allow-read``, ``--allow-write``), bound by descriptor (:func:`pin`)."""
    fixed = [p for p in [*runtime_paths(), *SYSTEM_READ] if os.path.exists(p)]
    roots = [*(Path(p) for p in fixed), *(Path(p).resolve() for p in fixed)]  # as named, and as they are
    return [p for p in paths if not _under(Path(p), roots)]


def pin(paths: list[str], home: Path) -> dict[str, int]:
    """Each of ``paths`` that exists opened (``O_PATH | O_NOFOLLOW``) as it was checked, so that the
    launcher binds the very file or folder checked, never what a name leads to later (a link swapped in
    between): one that is now a link, or is now elsewhere, or now is, holds or lies in a protected
    folder, is :class:`Refused`. The caller closes the descriptors."""
    pinned: dict[str, int] = {}
    try:
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            pinned[path] = fd
            now = os.readlink(f"/proc/self/fd/{fd}")
            if stat.S_ISLNK(os.fstat(fd).st_mode) or now != os.path.abspath(path):
                raise Refused(f"{path}: it changed while it was checked (now {now}): not started")
            check_readable(now, home)
    except BaseException:
        for fd in pinned.values():
            os.close(fd)
        raise
    return pinned


# ---- the platform's side ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Confinement:
    """How a provider's program is confined: what its entry lets it read besides the runtime, and
    whether it may run where the kernel cannot confine it (its entry accepted that by name)."""

    read: tuple[str, ...] = ()
    accept_unconfined: bool = False
    memory_mb: int = MEMORY_MB
    #: what its entry lets it write besides its scratch folder (``--allow-write``); nothing else
    write: tuple[str, ...] = ()
    #: the TCP ports it may connect to besides :data:`PORTS` (``--allow-port``); no other
    ports: tuple[int, ...] = ()

    def tcp_ports(self) -> list[int]:
        """Every TCP port its program may connect to (:class:`Refused` if its entry names one of the
        platform's own services as configured now)."""
        return sorted({*PORTS, *check_ports(self.ports)})


@dataclass
class Started:
    """A confined program as started: its process (the launcher's first), its cgroup, what held."""

    proc: Any
    cgroup: Any
    held: dict[str, Any] = field(default_factory=dict)
    #: the write end of the launcher's lifeline, held by this client only: closing it (or this process
    #: ending, however) ends the program and everything it started
    lifeline: int | None = None

    @property
    def missing(self) -> list[str]:
        return list(self.held.get("missing", ["it said nothing of what held"]))

    def end(self) -> None:
        """Kill everything the program started, in any session, and remove its cgroup."""
        lifeline, self.lifeline = self.lifeline, None
        if lifeline is not None:
            with contextlib.suppress(OSError):
                os.close(lifeline)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.cgroup.remove()


def _prepare(cgroup_fds: list[int]):
    """Between fork and exec: its cgroups (before its cgroup namespace), then its namespaces."""
    from qsolve.runtime import cgroups

    unshare = ctypes.CDLL(None, use_errno=True).unshare  # looked up before the fork

    def apply() -> None:
        cgroups.join(cgroup_fds)
        for flags in NAMESPACES:
            if unshare(flags) == 0:
                break

    return apply


def start(
    argv: list[str],
    *,
    env: dict[str, str],
    read: list[str],
    scratch: str,
    require: bool,
    write: list[str] | None = None,
    hidden: list[str] | None = None,
    cwd: str | None = None,
    memory_mb: int = MEMORY_MB,
    probe: bool = False,
    wait_s: float = 30.0,
    pinned: dict[str, int] | None = None,
    ports: list[int] | tuple[int, ...] = PORTS,
) -> Started:
    """Start ``argv`` confined (or, with ``probe``, only confine the launcher and say what held); standard
    input, output and error are pipes, as for an unconfined program. Returns once the launcher said what
    held (the program is running then, unless ``require`` and something is missing, or ``probe``).
    ``pinned``: paths opened as they were checked (:func:`pin`), bound from those descriptors; ``ports``:
    the TCP ports it may connect to (every other connect, and every bind, is refused)."""
    import select
    import subprocess
    import time

    from qsolve.runtime import cgroups

    cgroup = cgroups.Cgroup.make()
    cgroup.limit(memory_mb)
    joining = cgroup.joining()
    status_r, status_w = os.pipe()
    lifeline_r, lifeline_w = os.pipe()  # both close on exec here: only the launcher is given its end
    plan = {
        "argv": list(argv),
        "read": read,
        "write": [*WRITE, *(write or []), scratch],
        "scratch": scratch,
        "require": require,
        "probe": probe,
        "status_fd": status_w,
        "lifeline_fd": lifeline_r,
        "cwd": cwd,
        "host_ns": {k: os.readlink(f"/proc/self/ns/{k}") for k in ("mnt", "pid")},
        "threads_counted": cgroup.counts_threads,
        "pythonpath": env.get("PYTHONPATH"),
        "hidden": list(hidden or []),
        "pinned": dict(pinned or {}),
        "ports": sorted(set(ports)),
    }
    launcher_env = dict(env) | {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    try:
        proc = subprocess.Popen(  # noqa: S603 - a list, no shell
            [sys.executable, "-S", "-s", "-m", "qsolve.sandbox.launcher", json.dumps(plan)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=launcher_env,
            cwd=scratch,
            bufsize=0,
            close_fds=True,
            pass_fds=(status_w, lifeline_r, *(pinned or {}).values()),
            start_new_session=True,
            preexec_fn=_prepare(joining),
        )
    except BaseException:
        os.close(status_r)
        os.close(lifeline_w)
        cgroup.remove()
        raise
    finally:
        os.close(status_w)
        os.close(lifeline_r)
        for fd in joining:
            os.close(fd)
    started = Started(proc, cgroup, lifeline=lifeline_w)
    data, until = b"", time.monotonic() + wait_s
    try:
        while len(data) < 1 << 16:
            left = until - time.monotonic()
            if left <= 0 or not select.select([status_r], [], [], left)[0]:
                break
            chunk = os.read(status_r, 1 << 16)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(status_r)
    try:
        started.held = json.loads(data.split(b"\n", 1)[0]) if data else {}
    except ValueError:
        started.held = {}
    if not isinstance(started.held, dict):
        started.held = {}
    return started


def probe(
    argv: list[str],
    allowed: list[str],
    home: Path,
    allowed_write: list[str] | tuple[str, ...] = (),
    ports: list[int] | tuple[int, ...] = PORTS,
) -> list[str]:
    """What the kernel cannot give a provider's program here (nothing: it runs confined), found by
    confining the launcher as it would be and running nothing (``qsolve providers add``). The paths
    ``allowed`` and ``allowed_write`` are checked first (:class:`Refused`)."""
    import tempfile

    read, write = readable(argv, allowed, home, allowed_write)
    pinned = pin(to_pin([*read, *write]), home)
    tmp = tempfile.mkdtemp(prefix="qsolve-provider-")
    try:
        scratch = os.path.join(tmp, "scratch")
        os.mkdir(scratch, 0o700)
        hidden = [str(h) for h in protected(home)]
        started = start(
            argv,
            env={"PATH": os.defpath},
            read=read,
            write=write,
            hidden=hidden,
            scratch=scratch,
            require=True,
            probe=True,
            pinned=pinned,
            ports=ports,
        )
        try:
            started.proc.communicate(timeout=30)
        finally:
            started.end()
        return started.missing
    finally:
        for fd in pinned.values():
            os.close(fd)
        shutil.rmtree(tmp, ignore_errors=True)
