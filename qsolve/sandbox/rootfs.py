"""The workflow process's own filesystem: a root made for it in its own mount namespace (ctypes only).

:func:`make_root` builds, on an empty ``tmpfs``, exactly what the job reads and writes and nothing else:
the paths it may read bound read-only (the Python runtime, the installed packages, the platform's
package, its copy of the workflow), its scratch folder as a ``tmpfs`` of its own (the cap on all it may
write), ``/dev/null``, and a ``/proc`` of its own PID namespace. Then it makes that the process's root
(``pivot_root``) and lets go of the host's: ``stat``, ``inotify`` and ``/proc/self/mountinfo`` see only
these mounts, never ``QSOLVE_HOME``, the platform's keys, its credentials or the host's other mounts.
Every mount is ``nosuid``, ``nodev`` (the device files bound on their own aside) and ``noatime`` (what one
process reads leaves no trace another could read off the access times); every path keeps the name it has
on the host, so nothing else of the job changes.

It needs ``CAP_SYS_ADMIN`` in a mount namespace of the process's own: the caller checks both.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable, Mapping
from functools import cache

from qsolve.sandbox.landlock import ConfinementError

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_BIND, MS_REC, MS_PRIVATE = 32, 1024, 4096, 16384, 1 << 18
MNT_DETACH = 2
DEVICES = ("/dev/null", "/dev/urandom", "/dev/zero")  # device files: bound on their own, dev allowed
SAFE = MS_NOSUID | MS_NOATIME
#: folders of the system's that only root (or a service's own user) may read, in folders every root binds
#: (``/usr``): covered by an empty folder wherever they are bound, since a process confined here keeps
#: ``CAP_DAC_READ_SEARCH`` and reads past the files' modes. The folders a root binds by default hold no
#: other such file (tests/qsolve/providers/test_confined.py walks a provider's root for one)
ROOT_ONLY = ("/usr/share/polkit-1/rules.d", "/usr/local/etc/ssl/private", "/usr/local/ssl/private")


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise ConfinementError(code, f"own filesystem: {what}: {os.strerror(code)}")


def _bytes(s: str | None) -> bytes | None:
    return None if s is None else os.fsencode(s)


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    result = _libc().mount(_bytes(source), _bytes(target), _bytes(kind), ctypes.c_ulong(flags), _bytes(data))
    _call(result, f"mount {source or kind} on {target}")


def plan(paths: Iterable[str], sources: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The folders and files to bind (each as it resolves on the host, none inside another), and the
    links to make so that every path resolves as on the host (``path -> resolved``). A path of
    ``sources`` (one the caller opened as it checked it) is taken as it is, never resolved again."""
    sources = sources or {}
    resolved: dict[str, str] = {}
    for path in paths:
        path = os.path.abspath(path)
        if path in sources:
            resolved[path] = path
            continue
        if path == "/proc" or path.startswith("/proc/") or not os.path.exists(path):
            continue  # /proc is its own; what does not exist is not bound (Landlock skips it too)
        resolved[path] = os.path.realpath(path)
    binds: list[str] = []
    for real in sorted(set(resolved.values())):
        if not any(real.startswith(b + "/") or b == "/" for b in binds):
            binds.append(real)
    links = {p: r for p, r in resolved.items() if p != r}
    return binds, links


def _mount_point(root: str, path: str, directory: bool) -> str:
    target = root + path
    if directory:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    return target


def make_root(
    new_root: str,
    read: Iterable[str],
    write: Iterable[str],
    scratch: str,
    scratch_mb: int,
    uid: int,
    hidden: Iterable[str] = (),
    sources: Mapping[str, str] | None = None,
) -> list[str]:
    """Build the root in the empty folder ``new_root`` and make it this process's root, for good. Paths
    of ``read`` are bound read-only, those of ``write`` writable (``scratch`` becomes a ``tmpfs`` of
    ``scratch_mb`` MiB owned by ``uid``); each folder of ``hidden`` and of :data:`ROOT_ONLY` that lies in
    a bound one is covered by an empty read-only ``tmpfs`` (a provider's folder may hold ``QSOLVE_HOME``).
    A path of ``sources`` is bound from its source (``/proc/self/fd/N``, a descriptor opened as the path
    was checked), so a link swapped in at that path since is never followed. Returns the mount points,
    as the process now sees them."""
    sources = dict(sources or {})
    read, write = [os.path.abspath(p) for p in read], [os.path.abspath(p) for p in write]
    scratch = os.path.abspath(scratch)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host's namespace
    _mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=0755")
    writable = set(plan((p for p in write if p != scratch), sources)[0])
    binds, links = plan([p for p in read if p != scratch] + [p for p in write if p != scratch], sources)
    points = ["/"]
    for real in binds:
        source = sources.get(real, real)
        target = _mount_point(new_root, real, os.path.isdir(source))
        _mount(source, target, None, MS_BIND)
        flags = MS_REMOUNT | MS_BIND | SAFE | (0 if real in writable else MS_RDONLY)
        _mount(None, target, None, flags | (0 if real in DEVICES else MS_NODEV))
        points.append(real)
    for path in sorted({os.path.realpath(h) for h in [*hidden, *ROOT_ONLY]}):
        if os.path.isdir(path) and any(path.startswith(b + "/") for b in binds):
            _mount(
                "tmpfs", new_root + path, "tmpfs", SAFE | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,mode=0"
            )
            points.append(path)
    for path, real in links.items():
        if not os.path.lexists(new_root + path):
            os.makedirs(os.path.dirname(new_root + path), exist_ok=True)
            os.symlink(real, new_root + path)
    target = _mount_point(new_root, scratch, True)
    options = f"size={scratch_mb}m,mode=0700,uid={uid},gid={uid}"
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME, options)
    points.append(scratch)
    _mount("proc", _mount_point(new_root, "/proc", True), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    points.append("/proc")
    points += _mask_root_only(new_root)
    _mount(None, new_root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m")
    os.chdir(new_root)
    _call(_libc().syscall(ctypes.c_long(_PIVOT_ROOT), b".", b"."), "pivot_root")
    _call(_libc().umount2(b".", MNT_DETACH), "letting go of the host's root")
    os.chdir("/")
    if os.path.exists(new_root):  # the host's path of the new root: it must not be there any more
        raise ConfinementError(errno.EEXIST, "own filesystem: the host's root is still visible")
    return points


def _mask_root_only(new_root: str) -> list[str]:
    """Cover each file of its ``/proc`` that only root may read (``slabinfo``, ``timer_list``, which
    names the host's processes, ``kpageflags``, ``vmallocinfo``...: the kernel's, not its PID
    namespace's) with an empty read-only file: the process keeps ``CAP_DAC_READ_SEARCH``, which would
    read them past their modes. Returns them, as the process will see them."""
    import stat

    masked = []
    proc = new_root + "/proc"
    for name in sorted(os.listdir(proc)):
        path = f"{proc}/{name}"
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_mode & stat.S_IROTH:
            continue
        _mount("/dev/null", path, None, MS_BIND)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | SAFE | MS_NODEV | MS_NOEXEC)
        masked.append(f"/proc/{name}")
    return masked


def name_host(name: str) -> None:
    """Give the process's own UTS namespace a name of its own, in place of the host's it started with."""
    _call(_libc().sethostname(name.encode(), len(name)), "sethostname")


_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, -1)

__all__ = ["make_root", "name_host", "plan"]
