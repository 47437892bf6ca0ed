"""Which system calls the sandbox job may make: a seccomp filter built with libseccomp (ctypes only).

:func:`install` denies, for good, starting or becoming another program, reaching other processes,
namespaces, mounts, the kernel's own interfaces, changing identity and opening any socket (one can still
``socketpair``, which reaches nothing but itself). Denied calls fail with EPERM (clone3 with ENOSYS, so
that the C library falls back to ``clone``, whose flags seccomp can read). Everything else is allowed:
what the job may read or write is Landlock's to decide (:mod:`qsolve.sandbox.landlock`). libseccomp's
defaults stay: no_new_privs is set, and a system call of another architecture kills the process. The
filter is synchronised to every thread of the process.
"""

from __future__ import annotations

import ctypes
import errno
from functools import cache

from qsolve.sandbox.landlock import ConfinementError

DENIED = (
    # starting processes (clone without CLONE_THREAD is below) or becoming another program
    "fork", "vfork", "execve", "execveat",
    # reaching into other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    # namespaces, mounts and the filesystem's root
    "setns", "unshare", "mount", "umount2", "pivot_root", "chroot",
    "move_mount", "open_tree", "fsopen", "fsmount", "fspick", "mount_setattr",
    # the kernel's own large interfaces
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "fanotify_init", "personality",
    # files by handle, around the paths Landlock checks
    "open_by_handle_at", "name_to_handle_at",
    # administering the machine
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "syslog", "acct", "quotactl",
    # changing identity or capabilities
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "setfsuid", "setfsgid", "capset",
    # every socket: the job talks to the platform over the pipes it was given
    "socket",
)  # fmt: skip

CLONE_THREAD = 0x00010000
# clone with any of these makes a new namespace, even for a thread
CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
TIOCSTI = 0x5412  # pushes input into a terminal: denied on ioctl

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7
SCMP_FLTATR_CTL_TSYNC = 4


def _fail_with(code: int) -> int:
    """libseccomp's _fail_with(code)."""
    return 0x00050000 | (code & 0x0000FFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@cache
def _library() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        from ctypes.util import find_library  # runs ldconfig: only when the usual name fails

        found = find_library("seccomp")
        try:
            lib = ctypes.CDLL(found, use_errno=True) if found else None
        except OSError:
            lib = None
    if lib is not None:
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_release.restype = None
        lib.seccomp_release.argtypes = [ctypes.c_void_p]
        lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_rule_add_array.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.POINTER(_ArgCmp),
        ]
        lib.seccomp_load.argtypes = [ctypes.c_void_p]
    return lib


def available() -> bool:
    """Whether libseccomp can be loaded."""
    return _library() is not None


def _check(result: int, what: str) -> None:
    if result < 0:  # libseccomp returns -errno
        raise ConfinementError(-result, f"seccomp: {what} failed: {errno.errorcode.get(-result, -result)}")


def _masked(arg: int, mask: int, value: int) -> _ArgCmp:
    return _ArgCmp(arg=arg, op=SCMP_CMP_MASKED_EQ, datum_a=mask, datum_b=value)


def install(*, allow_threads: bool = True) -> None:
    """Load the filter into this process, irreversibly. ``allow_threads``: whether ``clone`` may still
    make threads (``CLONE_THREAD``); without it every clone is denied."""
    lib = _library()
    if lib is None:
        raise ConfinementError(errno.ENOENT, "seccomp: libseccomp (libseccomp.so.2) cannot be loaded")
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise ConfinementError(errno.ENOMEM, "seccomp: seccomp_init failed")
    try:
        _check(lib.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1), "setting TSYNC")
        eperm = _fail_with(errno.EPERM)

        def deny(name: str, action: int = eperm, *conditions: _ArgCmp) -> None:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:  # not a system call of this architecture
                return
            array = (_ArgCmp * len(conditions))(*conditions) if conditions else None
            _check(lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array), f"denying {name}")

        for name in DENIED:
            deny(name)
        deny("clone3", _fail_with(errno.ENOSYS))
        if allow_threads:
            deny("clone", eperm, _masked(0, CLONE_THREAD, 0))
            for flag in CLONE_NAMESPACES:
                deny("clone", eperm, _masked(0, flag, flag))
        else:
            deny("clone")
        deny("ioctl", eperm, _masked(1, 0xFFFFFFFF, TIOCSTI))  # the kernel reads the request as 32 bits
        _check(lib.seccomp_load(ctx), "seccomp_load")
    finally:
        lib.seccomp_release(ctx)


__all__ = ["DENIED", "available", "install"]
