"""Audit hooks installed in the workflow process before workflow code is imported.

They refuse writes outside the scratch folder, starting or signalling processes, and sockets to a
network, with a message that says so where the method is. An audit hook is a tripwire for ordinary
Python code, not a security boundary: code that loads native libraries steps around it. The kernel's
confinement (:mod:`qsolve.sandbox.confine`) is the boundary.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {  # event -> positions of path arguments that get written
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.link": (1,),
    "os.symlink": (1,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
    "os.chflags": (0,),
    "os.setxattr": (0,),
    "os.removexattr": (0,),
}
_PROCESS_EVENTS = {
    "os.fork",
    "os.forkpty",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "subprocess.Popen",
    "os.kill",
    "os.killpg",
    "pty.spawn",
}
_NETWORK_EVENTS = {
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
}
_NETWORK_FAMILIES = {socket.AF_INET, socket.AF_INET6}


class SandboxRefused(PermissionError):
    """What a workflow's code gets when it tries something the sandbox does not allow."""


def install(write_roots: Iterable[str], block_network: bool) -> None:
    roots = tuple(os.path.realpath(r) for r in write_roots)

    def allowed(path: object) -> bool:
        if isinstance(path, int) or path is None:
            return True
        real = os.path.realpath(os.fsdecode(path))
        return real == "/dev/null" or any(real == r or real.startswith(r + os.sep) for r in roots)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writes and not allowed(path):
                raise SandboxRefused(f"sandbox: writing outside the workflow folder is not allowed: {path}")
        elif event in _PATH_EVENTS:
            for i in _PATH_EVENTS[event]:
                if i < len(args) and not allowed(args[i]):
                    raise SandboxRefused(
                        f"sandbox: changing files outside the workflow folder is not "
                        f"allowed: {event} {args[i]}"
                    )
        elif event in _PROCESS_EVENTS:
            raise SandboxRefused(f"sandbox: {event} is not allowed")
        elif block_network and (
            event in _NETWORK_EVENTS or (event == "socket.__new__" and args[1] in _NETWORK_FAMILIES)
        ):
            raise SandboxRefused(f"sandbox: no network ({event})")

    sys.addaudithook(hook)
