"""Who the sandbox job runs as: leaving root for good, with Linux capabilities (prctl, capset; ctypes only).

:func:`drop_root` turns a root process into ``nobody`` that keeps only ``CAP_DAC_READ_SEARCH`` (the Python
runtime may live in a folder only root can read; what may be read is Landlock's to decide, not the file
modes). Every other capability leaves the bounding set, so none can be had again.
"""

from __future__ import annotations

import ctypes
import errno
import os
from functools import cache

from qsolve.sandbox.landlock import ConfinementError

CAP_DAC_READ_SEARCH = 2
CAP_LAST_CAP_FALLBACK = 40
PR_SET_PDEATHSIG, PR_GET_PDEATHSIG = 1, 2
PR_SET_KEEPCAPS = 8
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE, PR_CAP_AMBIENT_CLEAR_ALL = 2, 4
CAP_DAC_OVERRIDE = 1
LINUX_CAPABILITY_VERSION_3 = 0x20080522
NOBODY = 65534


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg: int = 0, what: str = "prctl") -> None:
    args = (ctypes.c_ulong(a) for a in (arg, 0, 0, 0))
    if _libc().prctl(ctypes.c_int(option), *args) != 0:
        code = ctypes.get_errno()
        raise ConfinementError(code, f"{what} failed: {os.strerror(code)}")


def _prctl2(option: int, arg: int, arg2: int) -> None:
    args = (ctypes.c_ulong(a) for a in (arg, arg2, 0, 0))
    if _libc().prctl(ctypes.c_int(option), *args) != 0:
        code = ctypes.get_errno()
        raise ConfinementError(code, f"raising ambient capability {arg2} failed: {os.strerror(code)}")


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return CAP_LAST_CAP_FALLBACK


def capabilities() -> dict[str, int]:
    """CapEff, CapPrm, CapInh, CapBnd and CapAmb of this process, as ints (from /proc/self/status)."""
    caps = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"):
                caps[key] = int(value, 16)
    return caps


def drop_root(uid: int = NOBODY, gid: int = NOBODY, *, ambient: tuple[int, ...] = ()) -> int | None:
    """When running as root, become ``uid``/``gid`` for good keeping only CAP_DAC_READ_SEARCH (effective
    and permitted; bounding set reduced to it; no inheritable or ambient), and the capabilities of
    ``ambient`` besides, kept as ambient ones too: a program it then runs has them (a provider's
    program: where it may read and write is its own root's and Landlock's to say, not the files'
    modes). Returns the new uid, or ``None`` (having done nothing) when not root. The parent-death
    signal, which the kernel clears on a change of credentials, is set again as it was."""
    if os.geteuid() != 0:
        return None
    death_signal = ctypes.c_int(0)
    _prctl(PR_GET_PDEATHSIG, ctypes.addressof(death_signal), "PR_GET_PDEATHSIG")
    kept_caps = {CAP_DAC_READ_SEARCH, *ambient}
    for cap in range(_last_cap() + 1):
        if cap in kept_caps:
            continue
        try:
            _prctl(PR_CAPBSET_DROP, cap, f"dropping capability {cap} from the bounding set")
        except ConfinementError as e:
            if e.errno != errno.EINVAL:  # EINVAL: a capability this kernel does not have
                raise
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "clearing the ambient capabilities")
    _prctl(PR_SET_KEEPCAPS, 1, "PR_SET_KEEPCAPS")
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as e:
        raise ConfinementError(e.errno, f"cannot become uid {uid}, gid {gid}: {e.strerror}") from None
    keep = sum(1 << cap for cap in kept_caps)
    inherit = sum(1 << cap for cap in ambient)
    header = _CapHeader(version=LINUX_CAPABILITY_VERSION_3, pid=0)
    data = (_CapData * 2)(_CapData(effective=keep, permitted=keep, inheritable=inherit), _CapData())
    if _libc().capset(ctypes.byref(header), data) != 0:
        code = ctypes.get_errno()
        raise ConfinementError(code, f"capset failed: {os.strerror(code)}")
    _prctl(PR_SET_KEEPCAPS, 0, "PR_SET_KEEPCAPS")
    for cap in ambient:
        _prctl2(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap)
    _prctl(PR_SET_PDEATHSIG, death_signal.value, "PR_SET_PDEATHSIG")
    caps = capabilities()
    kept = caps["CapEff"] == caps["CapPrm"] == keep and caps["CapBnd"] | keep == keep
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (gid,) * 3 or not kept:
        raise ConfinementError(errno.EPERM, f"root was not left as asked: {os.getresuid()}, {caps}")
    return uid


__all__ = ["capabilities", "drop_root"]
