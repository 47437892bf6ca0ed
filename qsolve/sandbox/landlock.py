"""What the sandbox job may touch on the filesystem, over TCP and by signal: Linux Landlock (ctypes only).

:func:`restrict` confines the calling process, for good, to reading the ``read`` paths and writing the
``write`` paths; it denies every TCP bind and every TCP connect but to the ports it is given (ABI 4;
none for a workflow process, a provider's for its program) and, from ABI 6, signals and abstract unix
sockets that reach outside the confined process and its children. Landlock filters TCP only: UDP (a
resolver's DNS), and a TCP ``listen`` on a socket never bound (which the kernel binds to a port of its
choosing), are not its to refuse. Landlock applies to the calling
thread and its future threads and children only, so :func:`restrict` refuses to run while the process
has other threads (they would stay unconfined).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not imported at run time: a provider's launcher starts faster without pathlib
    from pathlib import Path


class ConfinementError(OSError):
    """A kernel confinement (Landlock, seccomp, dropping root) could not be put in place."""


# generic syscall numbers, the same on x86_64 and aarch64
_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
PR_SET_NO_NEW_PRIVS = 38
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RULE_NET_PORT = 2  # ABI 4

ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5
ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_BY_ABI = {1: _FS_ABI1, 2: ACCESS_FS_REFER, 3: ACCESS_FS_TRUNCATE, 5: ACCESS_FS_IOCTL_DEV}
READ_RIGHTS = ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR | ACCESS_FS_EXECUTE
FILE_READ_RIGHTS = ACCESS_FS_READ_FILE | ACCESS_FS_EXECUTE
FILE_WRITE_RIGHTS = ACCESS_FS_READ_FILE | ACCESS_FS_WRITE_FILE | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4
        ("scoped", ctypes.c_uint64),  # ABI 6
    ]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel's header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _numbers() -> tuple[int, int, int] | None:
    return _SYSCALLS.get(os.uname().machine)


def _syscall(number: int, *args: object) -> int:
    """syscall(2); int arguments go as longs (it is variadic), errors raise OSError."""
    args = tuple(ctypes.c_long(a) if isinstance(a, int) else a for a in args)
    ctypes.set_errno(0)
    result = _libc().syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def abi_version() -> int:
    """The Landlock ABI of the running kernel; 0 when it has none (or it is disabled)."""
    numbers = _numbers()
    if numbers is None:
        return 0
    try:
        return _syscall(numbers[0], None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    except OSError as e:
        if e.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return 0
        raise ConfinementError(e.errno, f"Landlock: cannot read the ABI version: {e.strerror}") from None


def handled_fs(abi: int) -> int:
    """Every filesystem right that ABI ``abi`` knows."""
    rights = 0
    for since, bits in _FS_BY_ABI.items():
        if abi >= since:
            rights |= bits
    return rights


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1  # no /proc: nothing to tell, the caller's word stands


def restrict(read: Iterable[str | Path], write: Iterable[str | Path], *, connect: Iterable[int] = ()) -> int:
    """Confine this process (irreversibly) to reading ``read`` and writing ``write``; deny every TCP bind
    and every TCP connect but to the ports of ``connect`` (a provider's program may need its device:
    ABI 4 and later; before, TCP is not filtered at all, which the caller says) and, from ABI 6, signals
    and abstract unix sockets beyond itself. Paths that do not exist are skipped. Returns the ABI in
    force."""
    ports = sorted(set(connect))
    for port in ports:
        if not 1 <= port <= 65535:
            raise ConfinementError(errno.EINVAL, f"Landlock: {port} is not a TCP port (1 to 65535)")
    abi = abi_version()
    numbers = _numbers()
    if abi < 1 or numbers is None:
        raise ConfinementError(errno.EOPNOTSUPP, "Landlock is not available on this kernel")
    threads = _threads()
    if threads > 1:
        raise ConfinementError(
            errno.EBUSY, f"Landlock: the process has {threads} threads; confine it before it starts any"
        )
    create, add_rule, restrict_self = numbers
    fs = handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=fs)
    size = 8
    if abi >= 4:
        attr.handled_access_net = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    try:
        ruleset = _syscall(create, ctypes.byref(attr), size, 0)
    except OSError as e:
        raise ConfinementError(e.errno, f"Landlock: cannot create a ruleset: {e.strerror}") from None
    try:
        for path in read:
            _add_path(add_rule, ruleset, os.fspath(path), READ_RIGHTS & fs, FILE_READ_RIGHTS & fs)
        for path in write:
            _add_path(add_rule, ruleset, os.fspath(path), fs, FILE_WRITE_RIGHTS & fs)
        for port in ports if abi >= 4 else ():
            rule = _NetPortAttr(allowed_access=ACCESS_NET_CONNECT_TCP, port=port)
            try:
                _syscall(add_rule, ruleset, LANDLOCK_RULE_NET_PORT, ctypes.byref(rule), 0)
            except OSError as e:
                raise ConfinementError(
                    e.errno, f"Landlock: cannot allow TCP port {port}: {e.strerror}"
                ) from None
        _no_new_privs()
        try:
            _syscall(restrict_self, ruleset, 0)
        except OSError as e:
            raise ConfinementError(e.errno, f"Landlock: cannot restrict the process: {e.strerror}") from None
    finally:
        os.close(ruleset)
    return abi


def _no_new_privs() -> None:
    args = (ctypes.c_ulong(a) for a in (1, 0, 0, 0))
    if _libc().prctl(ctypes.c_int(PR_SET_NO_NEW_PRIVS), *args) != 0:
        code = ctypes.get_errno()
        raise ConfinementError(code, f"cannot set no_new_privs: {os.strerror(code)}")


def _add_path(add_rule: int, ruleset: int, path: str, dir_rights: int, file_rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        raise ConfinementError(e.errno, f"Landlock: cannot open {path!r}: {e.strerror}") from None
    try:
        rights = dir_rights if stat.S_ISDIR(os.fstat(fd).st_mode) else file_rights
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        try:
            _syscall(add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        except OSError as e:
            raise ConfinementError(
                e.errno, f"Landlock: cannot add a rule for {path!r}: {e.strerror}"
            ) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


__all__ = ["ConfinementError", "abi_version", "handled_fs", "restrict"]
