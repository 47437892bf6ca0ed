"""A provider's program started confined: ``python -S -s -m qsolve.sandbox.launcher PLAN`` (issue 35).

The platform's side, what the plan holds and why, is :mod:`qsolve.providers.confined`. This module runs
before the program: it forks so that its child is the first process of the PID namespace the platform
gave it, confines that child (its own root, ``nobody``, Landlock, seccomp), writes what held as one
JSON line on the plan's status descriptor, and runs the program in it. It imports only the standard
library and the sandbox's parts, so that it starts fast.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
from typing import Any

SCRATCH_MB = 64
UNPRIVILEGED = 65534
HOSTNAME = "qsolve-provider"
PR_SET_PDEATHSIG = 1
REFUSED_EXIT = 126
POLL_S = 0.2


def namespace(pid: int | str, kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _first_process(status_fd: int, lifeline: int | None) -> None:
    """Fork: the child goes on (the first process of the new PID namespace); this process waits for it
    and ends as it ended. It also watches ``lifeline``, a pipe whose other end only the platform's
    client holds: when that closes (the client closed the transport, or ended however it ended), the
    child is killed, and with it every process of its PID namespace. Not ``PR_SET_PDEATHSIG`` here: that
    is tied to the *thread* that started this process, and a client's thread may end before its client
    does (the child's is, to this process, which has one thread)."""
    pid = os.fork()
    if pid == 0:
        _die_with_parent()
        if lifeline is not None:
            os.close(lifeline)
        return
    for fd in (0, 1, status_fd):
        os.close(fd)
    status = _wait(pid, lifeline)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _wait(pid: int, lifeline: int | None) -> int:
    """The child's wait status; the child killed first if the lifeline closes while it runs."""
    import select

    try:
        ended: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd: looked at every POLL_S
        ended = None
    watched = [fd for fd in (ended, lifeline) if fd is not None]
    while watched:
        try:
            ready = select.select(watched, [], [], None if ended is not None else POLL_S)[0]
        except InterruptedError:
            continue
        if ended is None and os.waitpid(pid, os.WNOHANG)[0] == pid:
            os._exit(1)  # reaped here: no status to give (only without pidfd, a kernel before 5.3)
        if ended in ready:
            break
        if lifeline in ready:
            try:
                gone = os.read(lifeline, 64) == b""
            except OSError:
                gone = True
            if gone:  # the client is gone: so is everything it started
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                watched.remove(lifeline)
                if ended is None:
                    break
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue


def _reopened(pinned: dict[str, int]) -> dict[str, str]:
    """Each pinned path opened again in this mount namespace (a bind mount's source must be in it), as
    ``/proc/self/fd/N``: the very file or folder the platform checked and opened, or
    :class:`~qsolve.sandbox.landlock.ConfinementError` if the name now leads to anything else."""
    import errno
    import stat

    from qsolve.sandbox.landlock import ConfinementError

    out: dict[str, str] = {}
    for path, fd in pinned.items():
        try:
            mine = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            raise ConfinementError(e.errno, f"{path}: gone since it was checked") from None
        checked, now = os.fstat(fd), os.fstat(mine)
        if stat.S_ISLNK(now.st_mode) or (checked.st_dev, checked.st_ino) != (now.st_dev, now.st_ino):
            raise ConfinementError(errno.ESTALE, f"{path}: it changed since it was checked (not followed)")
        out[path] = f"/proc/self/fd/{mine}"
    return out


def confine(plan: dict[str, Any]) -> dict[str, Any]:
    """Confine this process as this module says; what held (``missing``: what did not)."""
    from qsolve.sandbox import landlock, privileges, rootfs, seccomp

    held: dict[str, Any] = {"missing": [], "namespaces": []}
    missing = held["missing"]
    host = plan.get("host_ns") or {}
    if os.getpid() == 1 and namespace("self", "pid") != host.get("pid"):
        held["namespaces"].append("pid")
    else:
        missing.append("no PID namespace of its own: it could see and reach other processes")
    own_mounts = namespace("self", "mnt") not in (None, host.get("mnt"))
    if own_mounts:
        held["namespaces"].append("mnt")
    root = os.geteuid() == 0
    scratch = plan["scratch"]
    # the paths the platform opened as it checked them: never bound by what a name leads to later
    pinned = {path: int(fd) for path, fd in (plan.get("pinned") or {}).items()}
    sources = {path: f"/proc/self/fd/{fd}" for path, fd in pinned.items()}
    held["own_root"] = False
    if root and own_mounts:
        new_root = os.path.join(os.path.dirname(os.path.abspath(scratch)), "root")
        try:
            os.makedirs(new_root, exist_ok=True)
            hidden = plan.get("hidden") or []
            mounts = _reopened(pinned)
            rootfs.make_root(
                new_root, plan["read"], plan["write"], scratch, SCRATCH_MB, UNPRIVILEGED, hidden, mounts
            )
            rootfs.name_host(HOSTNAME)
            held["own_root"] = True
        except Exception as e:
            missing.append(f"no filesystem of its own: {e}")
    elif root:
        missing.append("no filesystem of its own: no mount namespace of its own")
    else:
        missing.append("no filesystem of its own: only root can build it")
    try:
        if root:
            if not held["own_root"]:
                os.chown(scratch, UNPRIVILEGED, UNPRIVILEGED)
            # kept across its exec: what it may read and write is its root's and Landlock's to say
            dac = (privileges.CAP_DAC_READ_SEARCH, privileges.CAP_DAC_OVERRIDE)
            privileges.drop_root(UNPRIVILEGED, UNPRIVILEGED, ambient=dac)
        held["uid"] = os.geteuid()
    except Exception as e:
        missing.append(f"could not leave root: {e}")
        held["uid"] = os.geteuid()
    if held["uid"] == 0:
        missing.append("runs as root")
    read, write = plan["read"], plan["write"]
    if not held["own_root"]:  # nothing hides what a folder holds: no folder that holds a hidden one
        hidden = [os.path.realpath(h) for h in plan.get("hidden") or []]

        def clear(path: str) -> bool:
            real = os.path.realpath(path)
            return not any(h == real or h.startswith(real.rstrip("/") + "/") for h in hidden)

        read, write = [p for p in read if clear(p)], [p for p in write if clear(p)]
        read, write = [sources.get(p, p) for p in read], [sources.get(p, p) for p in write]
    try:
        ports = [int(p) for p in plan.get("ports") or ()]
        held["landlock_abi"] = abi = landlock.restrict(read, write, connect=ports)
        held["tcp_ports"] = ports if abi >= 4 else None
        if abi < 4:
            missing.append(
                f"Landlock ABI {abi}: its TCP connections are not held to its ports "
                f"({', '.join(map(str, ports)) or 'none'}): it reaches every service of this host and network"
            )
        if abi < 6:
            missing.append(f"Landlock ABI {abi}: its signals and abstract sockets are not scoped to it")
    except Exception as e:
        missing.append(f"no Landlock: {e}")
    try:
        seccomp.install_program()
        held["seccomp"] = True
    except Exception as e:
        missing.append(f"no seccomp filter: {e}")
    if not plan.get("threads_counted"):
        missing.append("no cgroup of its own: its memory and processes are not bounded")
    return held


def main(args: list[str]) -> None:
    plan = json.loads(args[0])
    status_fd = int(plan["status_fd"])
    os.set_inheritable(status_fd, False)  # the exec closes it: the platform then reads its end
    lifeline = plan.get("lifeline_fd")
    if lifeline is not None:
        lifeline = int(lifeline)
        os.set_inheritable(lifeline, False)
    for fd in (plan.get("pinned") or {}).values():
        os.set_inheritable(int(fd), False)  # never the program's: the exec closes them
    _first_process(status_fd, lifeline)
    held = confine(plan)
    refused = plan["probe"] or (plan["require"] and bool(held["missing"]))
    os.write(status_fd, json.dumps(held).encode() + b"\n")
    if refused:
        os._exit(0 if plan["probe"] else REFUSED_EXIT)
    env = dict(os.environ)
    if plan.get("pythonpath") is None:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = plan["pythonpath"]
    try:
        os.chdir(plan.get("cwd") or plan["scratch"])
    except OSError:
        os.chdir(plan["scratch"])
    argv = plan["argv"]
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        os.write(2, f"qsolve: the provider program {argv[0]!r} did not start: {e.strerror}\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
