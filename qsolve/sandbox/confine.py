"""The workflow process confines itself, for good, before any workflow code is imported (issue 10).

In this order, each step the kernel's own (docs/validation.md, "The sandbox"):

1. a filesystem made for it becomes its root, in its own mount namespace (:mod:`qsolve.sandbox.rootfs`):
   what it may read, bound read-only, and its scratch folder as a ``tmpfs`` of :data:`SCRATCH_MB`, the
   cap on all it may write; nothing of the host's or of ``QSOLVE_HOME`` is there to ``stat`` or watch;
2. root becomes ``nobody`` (uid 65534) keeping only ``CAP_DAC_READ_SEARCH``, so that it can read the
   Python runtime wherever it is installed; what it may read is Landlock's to say;
3. Landlock: read only the paths of the job (its copy, the Python runtime, the platform's package),
   write only its scratch folder, no TCP, no abstract unix socket and no signal outside itself;
4. seccomp: an allowlist of the calls Python, NumPy and Qiskit make; among those refused, no new
   process, no exec, no namespace, no mount, no ptrace, no socket, no file lock, no inotify
   (:mod:`qsolve.sandbox.seccomp`);
5. limits: address space (what is mapped before workflow code runs, plus the manifest's ``memory_mb``),
   open files, file size, no core dumps (last:
   loading the seccomp library needs address space the cap may not leave). What it holds and how many
   threads it runs are its cgroups' to bound, made by the platform before it started
   (:mod:`qsolve.runtime.cgroups`); ``RLIMIT_NPROC`` only where no cgroup counts its threads.

What could not be had is listed in :attr:`Protections.missing`; the platform decides whether it may
still run the job (:class:`qsolve.sandbox.remote.RemoteCode` refuses, unless
``QSOLVE_ACCEPT_UNCONFINED_CODE=1``).
"""

from __future__ import annotations

import os
import resource

from pydantic import BaseModel, ConfigDict, Field

from qsolve.runtime.cgroups import THREADS

SCRATCH_MB = 256
OPEN_FILES = 256
FILE_MB = 64
UNPRIVILEGED = 65534
HOSTNAME = "qsolve-sandbox"  # in place of the host's name, which its UTS namespace starts with
LANDLOCK_SCOPES_ABI = 6  # signals and abstract unix sockets scoped from this ABI on


class Job(BaseModel):
    """What the platform tells the workflow process before it confines itself."""

    model_config = ConfigDict(extra="forbid")

    root: str
    module: str
    scratch: str
    memory_mb: int
    read: list[str]
    write: list[str]
    require: bool = False  # import no workflow code unless every protection held
    threads_counted: bool = False  # a pids cgroup of its own counts its threads (else RLIMIT_NPROC, per uid)


class Protections(BaseModel):
    """What held in the workflow process, as it said before workflow code ran and, where ``/proc``
    shows it, as the platform saw from outside (``checked``)."""

    model_config = ConfigDict(extra="forbid")

    landlock_abi: int = 0
    seccomp: bool = False
    no_new_privs: bool = False
    uid: int | None = None
    pid: int | None = None  # the process's pid as the platform sees it
    namespaces: list[str] = Field(default_factory=list)  # its own: net, pid, ipc, mnt
    own_root: bool = False  # a filesystem made for it (its copy, the runtime, its scratch), no more
    scratch_mb: int | None = None  # the cap on all it may write, where there is one
    memory_mb: int | None = None
    address_space_mb: int | None = None  # the cap: what was mapped before workflow code, plus memory_mb
    cgroups: list[str] = Field(default_factory=list)  # its own, as the platform made them: memory, pids
    open_files: int | None = None
    file_mb: int | None = None
    checked: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)

    @property
    def confined(self) -> bool:
        return not self.missing

    def summary(self) -> str:
        if not self.confined:
            return "NOT CONFINED: " + "; ".join(self.missing)
        parts = [
            f"Landlock ABI {self.landlock_abi}",
            "seccomp",
            f"uid {self.uid}",
            "namespaces " + ",".join(self.namespaces) if self.namespaces else "no namespaces",
            f"{self.memory_mb} MB",
        ]
        if self.own_root:
            parts.append("own root")
        if self.scratch_mb:
            parts.append(f"scratch {self.scratch_mb} MiB")
        return "confined: " + ", ".join(parts)


def _limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (value, value))


def _mapped_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def own_mount_namespace() -> bool:
    """Whether this process has mount and UTS namespaces other than its parent's (what it mounts, and
    the name it gives its host, stay its own). Asked by the workflow process's first process, before
    it forks."""
    try:
        return all(
            os.readlink(f"/proc/self/ns/{kind}") != os.readlink(f"/proc/{os.getppid()}/ns/{kind}")
            for kind in ("mnt", "uts")
        )
    except OSError:
        return False


def confine(job: Job, own_mounts: bool = False) -> Protections:
    """Confine this process as :mod:`this module <qsolve.sandbox.confine>` says; what held.
    ``own_mounts``: whether it is in a mount namespace of its own (:func:`own_mount_namespace`)."""
    from qsolve.sandbox import landlock, privileges, rootfs, seccomp

    p = Protections(pid=int(os.readlink("/proc/self")))
    missing = p.missing
    root = os.geteuid() == 0
    if root and own_mounts:
        new_root = os.path.join(os.path.dirname(os.path.abspath(job.scratch)), "root")
        try:
            os.makedirs(new_root, exist_ok=True)
            rootfs.make_root(new_root, job.read, job.write, job.scratch, SCRATCH_MB, UNPRIVILEGED)
            rootfs.name_host(HOSTNAME)
            p.own_root, p.scratch_mb = True, SCRATCH_MB
        except Exception as e:
            missing.append(f"no filesystem of its own: {e}")
    elif root:
        missing.append("no filesystem of its own: no mount namespace of its own")
    else:
        missing.append("no filesystem of its own: only root can build it")
    if root and not p.own_root:
        os.chown(job.scratch, UNPRIVILEGED, UNPRIVILEGED)
    try:
        if root:
            privileges.drop_root(UNPRIVILEGED, UNPRIVILEGED)
            if not job.threads_counted:  # counted per uid, every workflow process's together
                _limit(resource.RLIMIT_NPROC, THREADS)
        p.uid = os.geteuid()
    except Exception as e:
        missing.append(f"could not leave root: {e}")
    if p.uid == 0:
        missing.append("runs as root")
    try:
        p.landlock_abi = landlock.restrict(job.read, job.write)
        p.no_new_privs = True
        if p.landlock_abi < LANDLOCK_SCOPES_ABI:
            missing.append(f"Landlock ABI {p.landlock_abi}: signals and abstract sockets not scoped")
    except Exception as e:
        missing.append(f"no Landlock: {e}")
    try:
        seccomp.install()
        p.seccomp = p.no_new_privs = True
    except Exception as e:
        missing.append(f"no seccomp filter: {e}")
    # last: loading libseccomp needs room the cap may not leave. Qiskit reserves about 1.1 GB of address
    # space it barely touches, so the cap is what is mapped now plus the job's memory_mb
    mapped = _mapped_bytes()
    _limit(resource.RLIMIT_AS, mapped + job.memory_mb * 2**20)
    p.address_space_mb = (mapped >> 20) + job.memory_mb
    _limit(resource.RLIMIT_NOFILE, OPEN_FILES)
    _limit(resource.RLIMIT_FSIZE, FILE_MB * 2**20)
    _limit(resource.RLIMIT_CORE, 0)
    p.memory_mb, p.open_files, p.file_mb = job.memory_mb, OPEN_FILES, FILE_MB
    return p
