"""Which system calls the sandbox job may make: a seccomp filter built with libseccomp (ctypes only).

:func:`install` loads, for good, an allowlist (:data:`ALLOWED`): the calls that Python, NumPy, Qiskit
and Aer make (files, memory, threads, time, signals to itself), as traced running the example
workflows. A call nobody listed, including every call a later kernel adds, fails with ENOSYS, as on a
kernel without it (the C library then falls back where it can). Refused with EPERM, to say so plainly:
starting or becoming another program, reaching other processes, namespaces, mounts, the kernel's own
interfaces, changing identity, opening any socket (one can still ``socketpair``, which reaches nothing
but itself), file locks (``flock``; ``fcntl``'s lock, lease, owner and notify commands: a lock on a file
every workflow process may read is a channel between them) and inotify or fanotify (which would see
other processes' use of a folder). clone3 fails with ENOSYS, so that the C library falls back to
``clone``, whose flags seccomp can read. What the job may read or write is Landlock's to decide
(:mod:`qsolve.sandbox.landlock`). libseccomp's defaults stay: no_new_privs is set, and a system call of
another architecture kills the process. The filter is synchronised to every thread of the process.
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
    # channels between processes that can read the same file or folder (and set_tid_address, whose
    # address the kernel wakes as a shared futex when the thread exits; the C library calls it at start)
    "set_tid_address", "flock", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    "fanotify_mark",
)  # fmt: skip

#: what a workflow process may call (names of another architecture are skipped); a call not here fails
#: with ENOSYS, one of :data:`DENIED` with EPERM
ALLOWED = (
    # files: what they hold is Landlock's to say, which there are the process's own root's
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",  # preadv2: below
    "open", "openat", "openat2", "creat", "close", "close_range", "lseek", "_llseek",
    "stat", "fstat", "lstat", "newfstatat", "fstatat64", "statx", "statfs", "fstatfs",
    "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents", "getdents64",
    "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat",
    "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
    "chmod", "fchmod", "fchmodat", "fchmodat2", "truncate", "ftruncate", "fallocate",
    "fsync", "fdatasync", "utime", "utimes", "utimensat", "futimesat", "umask", "mknod", "mknodat",
    "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
    "dup", "dup2", "dup3", "pipe", "pipe2", "sendfile", "copy_file_range", "splice", "memfd_create",
    "select", "_newselect", "pselect6", "poll", "ppoll", "epoll_create", "epoll_create1", "epoll_ctl",
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2",
    # sockets already open (socket itself is denied: only socketpair's pairs exist)
    "socketpair", "sendto", "recvfrom", "sendmsg", "recvmsg", "shutdown", "getsockopt", "setsockopt",
    "getsockname", "getpeername",
    # memory
    "brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "msync",
    "mbind", "get_mempolicy", "set_mempolicy",  # where its own memory lives (Aer's allocator asks)
    # threads and waiting
    "futex_waitv", "set_robust_list", "get_robust_list", "rseq",  # futex: below
    "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
    "sched_get_priority_max", "sched_get_priority_min", "nanosleep", "clock_nanosleep",
    "exit", "exit_group", "wait4", "waitid", "restart_syscall",
    # who and where it is, the time, its limits
    "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
    "getgroups", "getpgrp", "getpgid", "getsid", "getpriority", "capget", "uname", "sysinfo", "getcpu",
    "getrandom", "clock_gettime", "clock_getres", "gettimeofday", "time", "times", "getrusage",
    "getrlimit", "prlimit64", "prctl", "arch_prctl",
    # signals, to itself (Landlock scopes signals to the process)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigpending", "sigaltstack", "kill", "tkill", "tgkill", "pause", "alarm", "getitimer", "setitimer",
    "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
    "timerfd_create", "timerfd_settime", "timerfd_gettime", "signalfd", "signalfd4",
)  # fmt: skip

#: the commands of fcntl a workflow process may give: duplicating, descriptor and status flags, pipe
#: sizes, seals; never a lock (F_GETLK 5, F_SETLK 6, F_SETLKW 7, F_OFD_* 36-38), a lease, an owner
#: for signals or a directory notification
FCNTL_ALLOWED = (0, 1, 2, 3, 4, 1030, 1031, 1032, 1033, 1034)

CLONE_THREAD = 0x00010000
# clone with any of these makes a new namespace, even for a thread
CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
#: futex: any operation on a process-private futex (FUTEX_PRIVATE_FLAG); without it, only waiting
#: (FUTEX_WAIT, FUTEX_WAIT_BITSET: pthread_join waits so on a thread's id). A shared futex on a page of
#: a file every workflow process maps (numpy's, the C library's) is keyed by the file, so a shared
#: FUTEX_WAKE there would wake, and count, another workflow process's waiters: a channel between them
FUTEX_PRIVATE_FLAG = 128
FUTEX_SHARED_WAITS = (0, 9)
FUTEX_COMMAND = 0x7F
FUTEX_LAST = 13  # FUTEX_LOCK_PI2; a shared command above it fails with ENOSYS like any unlisted call
#: preadv2 and pwritev2 without RWF_NOWAIT, which fails a read unless the page is in the page cache: a
#: file's pages a first process read stayed cached, and told its re-run what it had chosen at random
RWF_NOWAIT = 0x8
RWV2_FLAGS = 5  # the argument of preadv2 and pwritev2 that holds their flags
TIOCSTI = 0x5412  # pushes input into a terminal: denied on ioctl
#: the requests of ioctl a workflow process may make: is it a terminal and how large (TCGETS,
#: TIOCGWINSZ), bytes waiting (FIONREAD), blocking and close-on-exec (FIONBIO, FIOCLEX, FIONCLEX)
IOCTL_ALLOWED = (0x5401, 0x5413, 0x541B, 0x5421, 0x5451, 0x5450)

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_EQ = 4
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
    ctx = lib.seccomp_init(_fail_with(errno.ENOSYS))
    if not ctx:
        raise ConfinementError(errno.ENOMEM, "seccomp: seccomp_init failed")
    try:
        _check(lib.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1), "setting TSYNC")
        eperm = _fail_with(errno.EPERM)

        def rule(name: str, action: int = eperm, *conditions: _ArgCmp) -> None:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:  # not a system call of this architecture
                return
            array = (_ArgCmp * len(conditions))(*conditions) if conditions else None
            added = lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array)
            _check(added, f"a rule for {name}")

        for name in ALLOWED:
            rule(name, SCMP_ACT_ALLOW)
        for name in DENIED:
            rule(name)
        # clone3 is not listed: it fails with ENOSYS (its flags are in memory, which seccomp cannot read)
        if allow_threads:  # a thread, never with a namespace of its own; every other clone is refused
            namespaces = sum(CLONE_NAMESPACES)
            rule("clone", SCMP_ACT_ALLOW, _masked(0, CLONE_THREAD | namespaces, CLONE_THREAD))
            rule("clone", eperm, _masked(0, CLONE_THREAD, 0))
            for flag in CLONE_NAMESPACES:
                rule("clone", eperm, _masked(0, flag, flag))
        else:
            rule("clone")
        for name in ("preadv2", "pwritev2"):
            rule(name, SCMP_ACT_ALLOW, _masked(RWV2_FLAGS, RWF_NOWAIT, 0))
            rule(name, eperm, _masked(RWV2_FLAGS, RWF_NOWAIT, RWF_NOWAIT))
        rule("futex", SCMP_ACT_ALLOW, _masked(1, FUTEX_PRIVATE_FLAG, FUTEX_PRIVATE_FLAG))
        for command in FUTEX_SHARED_WAITS:  # the operation's other bits: FUTEX_CLOCK_REALTIME
            rule("futex", SCMP_ACT_ALLOW, _masked(1, FUTEX_PRIVATE_FLAG | FUTEX_COMMAND, command))
        for command in sorted(set(range(FUTEX_LAST + 1)) - set(FUTEX_SHARED_WAITS)):  # wakes, PI, requeues
            rule("futex", eperm, _masked(1, FUTEX_PRIVATE_FLAG | FUTEX_COMMAND, command))
        for command in FCNTL_ALLOWED:  # the kernel reads the command as 32 bits
            rule("fcntl", SCMP_ACT_ALLOW, _masked(1, 0xFFFFFFFF, command))
            rule("fcntl64", SCMP_ACT_ALLOW, _masked(1, 0xFFFFFFFF, command))
        for command in (5, 6, 7, 36, 37, 38, 1024, 1025, 1026, 8, 9, 10, 11, 15, 16):
            rule("fcntl", eperm, _masked(1, 0xFFFFFFFF, command))
            rule("fcntl64", eperm, _masked(1, 0xFFFFFFFF, command))
        for request in IOCTL_ALLOWED:  # the kernel reads the request as 32 bits
            rule("ioctl", SCMP_ACT_ALLOW, _masked(1, 0xFFFFFFFF, request))
        rule("ioctl", eperm, _masked(1, 0xFFFFFFFF, TIOCSTI))
        _check(lib.seccomp_load(ctx), "seccomp_load")
    finally:
        lib.seccomp_release(ctx)


#: what a provider's program may not call (:func:`install_program`): every other call is its own. It may
#: start processes, run programs and open sockets (its device may be across the network), but never reach
#: into another process, make or enter a namespace, mount, open a file by handle (past the paths Landlock
#: checks) or use the kernel's own large interfaces
#: (changing identity is left to the kernel: as ``nobody`` with no capability it has none to change to)
PROGRAM_MAY = (
    "fork", "vfork", "execve", "execveat", "socket", "set_tid_address", "flock", "pidfd_open",
    "pidfd_send_signal", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid",
    "setfsgid", "capset",
)  # fmt: skip
PROGRAM_DENIED = tuple(name for name in DENIED if name not in PROGRAM_MAY) + ("clone3",)
#: ``socket(..., IPPROTO_MPTCP)``: a multipath TCP socket, which Landlock's TCP rules do not filter and
#: which falls back to plain TCP with a server that knows nothing of it (the program's ports held by
#: Landlock would be no bound at all)
IPPROTO_MPTCP = 262


def install_program() -> None:
    """Load, for good, the filter of a provider's program (issue 35): every call allowed but those of
    :data:`PROGRAM_DENIED` (EPERM; ``clone3`` ENOSYS, so that the C library falls back to ``clone``,
    whose flags seccomp reads), ``clone`` with any namespace of its own and a multipath TCP socket
    (:data:`IPPROTO_MPTCP`, EPERM)."""
    lib = _library()
    if lib is None:
        raise ConfinementError(errno.ENOENT, "seccomp: libseccomp (libseccomp.so.2) cannot be loaded")
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise ConfinementError(errno.ENOMEM, "seccomp: seccomp_init failed")
    try:
        eperm = _fail_with(errno.EPERM)

        def rule(name: str, action: int, *conditions: _ArgCmp) -> None:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                return
            array = (_ArgCmp * len(conditions))(*conditions) if conditions else None
            added = lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array)
            _check(added, f"a rule for {name}")

        for name in PROGRAM_DENIED:
            rule(name, _fail_with(errno.ENOSYS) if name == "clone3" else eperm)
        for flag in CLONE_NAMESPACES:
            rule("clone", eperm, _masked(0, flag, flag))
        rule("ioctl", eperm, _masked(1, 0xFFFFFFFF, TIOCSTI))
        rule("socket", eperm, _masked(2, 0xFFFFFFFF, IPPROTO_MPTCP))
        _check(lib.seccomp_load(ctx), "seccomp_load")
    finally:
        lib.seccomp_release(ctx)


__all__ = ["ALLOWED", "DENIED", "PROGRAM_DENIED", "available", "install", "install_program"]
