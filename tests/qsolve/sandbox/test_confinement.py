"""Kernel confinement (Landlock, seccomp, leaving root) holds against a hostile program.

Confining is irreversible, so each test confines a fresh child Python, which then attacks and prints
what it got as one JSON line; the test asserts it got nothing. The child loads only the three modules
under test (the sandbox package's own ``__init__`` is not run), so each child takes a fraction of a
second.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from qsolve.sandbox import landlock, privileges, seccomp

REPO = Path(__file__).resolve().parents[3]
PYTHON_READ = [sys.prefix, sys.base_prefix, "/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/dev/urandom"]
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
# raw system call numbers the attacks use
SYS = {
    "x86_64": {"fork": 57, "clone": 56, "clone3": 435, "pidfd_open": 434, "pidfd_send_signal": 424},
    "aarch64": {"clone": 220, "clone3": 435, "pidfd_open": 434, "pidfd_send_signal": 424},
}.get(platform.machine(), {})

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < 6 or not seccomp.available() or not SYS,
    reason="needs Landlock ABI 6+, libseccomp and x86_64 or aarch64",
)

PRELUDE = """\
import ctypes, errno, json, os, sys, types
for _name in ("qsolve", "qsolve.sandbox"):  # bare packages: load only the modules under test
    _package = sys.modules[_name] = types.ModuleType(_name)
    _package.__path__ = [os.path.join({repo!r}, *_name.split("."))]
from qsolve.sandbox import landlock, privileges, seccomp

ARGS = json.loads(sys.argv[1])
SYS = ARGS["sys"]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def check(result):
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def sys_call(name, *args):
    ctypes.set_errno(0)
    return check(libc.syscall(ctypes.c_long(SYS[name]), *(ctypes.c_long(a) for a in args)))


def attempt(action):
    "'ok', the errno name of the OSError raised, or the exception's type."
    try:
        action()
    except OSError as e:
        return errno.errorcode.get(e.errno, type(e).__name__)
    except Exception as e:
        return type(e).__name__
    return "ok"


result = {{}}
{before}
if ARGS["drop_root"]:
    privileges.drop_root()
if ARGS["read"] is not None:
    landlock.restrict([*ARGS["read"], f"/proc/{{os.getpid()}}"], ARGS["write"])
if ARGS["seccomp"]:
    seccomp.install()
{body}
print(json.dumps(result))
"""


def confined(
    body: str,
    *,
    read: tuple = (),
    write: tuple = (),
    with_landlock: bool = True,
    with_seccomp: bool = True,
    drop_root: bool = False,
    before: str = "",
    cwd: Path | None = None,
    **args,
) -> dict:
    """Run ``body`` in a fresh Python confined to reading Python, its own /proc entry, ``read`` and
    ``write``, and to writing ``write`` and /dev/null; ``before`` runs ahead of the confinement. ``args``
    reach it as ``ARGS``. Returns its ``result``."""
    config = {
        "read": [*PYTHON_READ, *map(str, read)] if with_landlock else None,
        "write": ["/dev/null", *map(str, write)],
        "seccomp": with_seccomp,
        "drop_root": drop_root,
        "sys": SYS,
        **args,
    }
    program = PRELUDE.format(repo=str(REPO), before=textwrap.dedent(before), body=textwrap.dedent(body))
    proc = subprocess.run(
        [sys.executable, "-c", program, json.dumps(config, default=str)],
        env=ENV,
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines, proc.stderr or "no result: did the program exec another?"
    return json.loads(lines[-1])


def test_abi_and_library_are_seen():
    assert landlock.abi_version() >= 6
    assert seccomp.available()
    assert issubclass(landlock.ConfinementError, OSError)
    assert set(privileges.capabilities()) == {"CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"}


def test_reads_only_what_is_listed(tmp_path):
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "a.txt").write_text("allowed")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "s.txt").write_text("secret")
    result = confined(
        """
        result["allowed"] = open(os.path.join(ARGS["tmp"], "allowed", "a.txt")).read()
        for name, path in [
            ("secret", os.path.join(ARGS["tmp"], "secret", "s.txt")),
            ("shadow", "/etc/shadow"),
            ("passwd", "/etc/passwd"),
            ("hostname", "/etc/hostname"),
        ]:
            result[name] = attempt(lambda: open(path).read())
        for name, path in [("list_secret", os.path.join(ARGS["tmp"], "secret")), ("list_root", "/")]:
            result[name] = attempt(lambda: os.listdir(path))
        """,
        read=(tmp_path / "allowed",),
        tmp=tmp_path,
    )
    assert result.pop("allowed") == "allowed"
    assert result == dict.fromkeys(result, "EACCES")


def test_writes_only_inside_the_write_folder(tmp_path):
    out, keep, outside = tmp_path / "out", tmp_path / "keep", tmp_path / "outside"
    for folder in (out, keep, outside):
        folder.mkdir()
    (keep / "file.txt").write_text("original")
    (out / "linkme.txt").write_text("link")
    (out / "moveme.txt").write_text("move")
    result = confined(
        """
        import sqlite3
        out, keep, outside = ARGS["out"], ARGS["keep"], ARGS["outside"]
        kept = os.path.join(keep, "file.txt")


        def at_dir_fd():
            fd = os.open(keep, os.O_RDONLY | os.O_DIRECTORY)
            os.open("made.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd)


        def database(folder):  # with no file lock (seccomp refuses them): SQLite's unix-none VFS
            db = sqlite3.connect(f"file:{os.path.join(folder, 'db.sqlite')}?vfs=unix-none", uri=True)
            db.execute("create table t (x)")
            db.commit()


        attacks = {
            "create": lambda: open(os.path.join(keep, "new.txt"), "w"),
            "create_outside": lambda: open(os.path.join(outside, "new.txt"), "w"),
            "overwrite": lambda: open(kept, "r+"),
            "append": lambda: open(kept, "a"),
            "truncate": lambda: os.truncate(kept, 0),
            "dir_fd": at_dir_fd,
            "link": lambda: os.link(os.path.join(out, "linkme.txt"), os.path.join(keep, "linked.txt")),
            "rename": lambda: os.rename(os.path.join(out, "moveme.txt"), os.path.join(keep, "moved.txt")),
            "rename_in": lambda: os.rename(kept, os.path.join(out, "stolen.txt")),
            "symlink": lambda: os.symlink("/etc/passwd", os.path.join(keep, "sym")),
            "mkdir": lambda: os.mkdir(os.path.join(keep, "d")),
            "mkfifo": lambda: os.mkfifo(os.path.join(keep, "fifo")),
            "remove": lambda: os.remove(kept),
            "sqlite": lambda: database(keep),
        }
        result["attacks"] = {name: attempt(action) for name, action in attacks.items()}


        def inside():
            with open(os.path.join(out, "new.txt"), "w") as f:
                f.write("written")
            os.rename(os.path.join(out, "new.txt"), os.path.join(out, "renamed.txt"))
            os.mkdir(os.path.join(out, "sub"))
            os.link(os.path.join(out, "linkme.txt"), os.path.join(out, "sub", "linked.txt"))
            database(out)


        result["inside"] = attempt(inside)
        """,
        read=(keep,),
        write=(out,),
        out=out,
        keep=keep,
        outside=outside,
    )
    attacks = result["attacks"]
    assert attacks.pop("sqlite") == "OperationalError"  # sqlite3: "unable to open database file"
    assert attacks == dict.fromkeys(attacks, "EACCES")
    assert result["inside"] == "ok"
    assert os.listdir(keep) == ["file.txt"] and (keep / "file.txt").read_text() == "original"
    assert os.listdir(outside) == []
    assert sorted(os.listdir(out)) == ["db.sqlite", "linkme.txt", "moveme.txt", "renamed.txt", "sub"]
    assert (out / "renamed.txt").read_text() == "written"


@pytest.fixture
def listeners(tmp_path):
    """A TCP listener on loopback, a unix listener on a path and one on an abstract name."""
    tcp = socket.create_server(("127.0.0.1", 0))
    path = socket.socket(socket.AF_UNIX)
    path.bind(str(tmp_path / "listen.sock"))
    abstract = socket.socket(socket.AF_UNIX)
    name = f"qsolve-confinement-{uuid.uuid4().hex}"
    abstract.bind(b"\0" + name.encode())
    sockets = {"tcp": tcp, "path": path, "abstract": abstract}
    for s in sockets.values():
        s.listen()
        s.setblocking(False)
    yield {"port": tcp.getsockname()[1], "path": str(tmp_path / "listen.sock"), "abstract": name}
    for s in sockets.values():  # nothing got through
        with pytest.raises(BlockingIOError):
            s.accept()
        s.close()


ALL_CONNECTS = ["tcp", "bind", "path", "abstract", "netlink", "udp6", "socketpair"]
CONNECT = """
import socket


def unix(address):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(address)


def pair():
    a, b = socket.socketpair()
    a.send(b"x")
    assert b.recv(1) == b"x"


attacks = {
    "tcp": lambda: socket.create_connection(("127.0.0.1", ARGS["port"]), timeout=5),
    "bind": lambda: socket.socket().bind(("127.0.0.1", 0)),
    "path": lambda: unix(ARGS["path"]),
    "abstract": lambda: unix("\\0" + ARGS["abstract"]),
    "netlink": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0),
    "udp6": lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM),
    "socketpair": pair,
}
result = {name: attempt(action) for name, action in attacks.items() if name in ARGS["attacks"]}
"""


def test_landlock_alone_denies_tcp_and_abstract_sockets(listeners):
    # not "path": Landlock (ABI 7) does not cover connecting to a unix socket by its path; seccomp does
    attacks = ["tcp", "bind", "abstract", "socketpair"]
    result = confined(CONNECT, with_seccomp=False, attacks=attacks, **listeners)
    assert result["tcp"] == result["bind"] == "EACCES"
    assert result["abstract"] == "EPERM"  # the abstract unix socket scope
    assert result["socketpair"] == "ok"


def test_seccomp_denies_every_socket(listeners):
    result = confined(CONNECT, attacks=ALL_CONNECTS, **listeners)
    assert result.pop("socketpair") == "ok"
    assert result == dict.fromkeys(result, "EPERM")


def test_no_new_process_or_program():
    result = confined(
        """
        import subprocess
        attacks = {
            "fork": lambda: os.fork() or os._exit(0),  # a child that got through leaves at once
            "subprocess": lambda: subprocess.run(["/bin/true"]),
            "posix_spawn": lambda: os.posix_spawn("/bin/true", ["true"], {}),
            "raw_clone": lambda: sys_call("clone", 17, 0, 0, 0, 0) or os._exit(0),  # SIGCHLD: a process
            # a thread (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM) in a new network namespace
            "raw_clone_namespace": lambda: sys_call("clone", 0x10000 | 0x900 | 0x40000000, 0, 0, 0, 0),
            "raw_clone3": lambda: sys_call("clone3", 0, 0),
        }
        if "fork" in SYS:
            attacks["raw_fork"] = lambda: sys_call("fork") or os._exit(0)
        attacks["execv"] = lambda: os.execv("/bin/true", ["true"])  # last: it would end the program
        result = {name: attempt(action) for name, action in attacks.items()}
        """
    )
    assert result.pop("raw_clone3") == "ENOSYS"
    assert result == dict.fromkeys(result, "EPERM")


def test_other_processes_are_out_of_reach():
    received = []
    previous = signal.signal(signal.SIGTERM, lambda *_: received.append(True))
    sibling = subprocess.Popen(["sleep", "60"])
    try:
        result = confined(
            """
            import signal
            ppid = os.getppid()


            class Iovec(ctypes.Structure):
                _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


            def read_memory():
                buffer = ctypes.create_string_buffer(8)
                local = Iovec(ctypes.addressof(buffer), 8)
                remote = Iovec(id(ARGS), 8)
                check(libc.process_vm_readv(ppid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))


            attacks = {
                "kill_parent": lambda: os.kill(ppid, signal.SIGTERM),
                "kill_sibling": lambda: os.kill(ARGS["sibling"], signal.SIGKILL),
                "environ": lambda: open(f"/proc/{ppid}/environ", "rb").read(),
                "mem": lambda: open(f"/proc/{ppid}/mem", "rb").read(1),
                "open_netns": lambda: os.open(f"/proc/{ppid}/ns/net", os.O_RDONLY),
                "setns": lambda: check(libc.setns(netns, 0x40000000)),
                "unshare": lambda: check(libc.unshare(0x10000000 | 0x40000000)),  # user + net
                "ptrace": lambda: check(libc.ptrace(16, ppid, 0, 0)),  # PTRACE_ATTACH
                "process_vm_readv": read_memory,
                "pidfd_open": lambda: sys_call("pidfd_open", ppid, 0),
                "pidfd_send_signal": lambda: sys_call("pidfd_send_signal", pidfd, signal.SIGTERM, 0, 0),
            }
            result = {name: attempt(action) for name, action in attacks.items()}
            """,
            before="""
            netns = os.open(f"/proc/{os.getppid()}/ns/net", os.O_RDONLY)  # fds the job might inherit
            pidfd = sys_call("pidfd_open", os.getppid(), 0)
            """,
            sibling=sibling.pid,
        )
        assert sibling.poll() is None and not received
    finally:
        sibling.kill()
        sibling.wait()
        signal.signal(signal.SIGTERM, previous)
    for name in ("environ", "mem", "open_netns"):
        assert result.pop(name) == "EACCES", name
    assert result == dict.fromkeys(result, "EPERM")


def test_threads_numpy_and_the_standard_library_still_work(tmp_path):
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "planted.py").write_text("X = 1\n")
    result = confined(
        """
        import threading
        box = []
        thread = threading.Thread(target=lambda: box.append(sum(range(10))))
        thread.start()
        thread.join()
        result["thread"] = box
        result["preloaded"] = [m for m in ("decimal", "fractions", "numpy") if m in sys.modules]
        import decimal, fractions, json, statistics
        result["stdlib"] = str(decimal.Decimal("1.10") + fractions.Fraction(1, 2).numerator)
        import numpy as np
        m = np.arange(16.0).reshape(4, 4)
        result["numpy"] = [(m @ m).tolist(), round(float(np.linalg.eigvalsh(m + m.T).sum()), 9)]
        sys.path.insert(0, ARGS["mods"])
        result["planted"] = attempt(lambda: __import__("planted"))
        """,
        mods=tmp_path / "mods",
    )
    assert result["thread"] == [45] and result["preloaded"] == []
    assert result["stdlib"] == "2.10"
    m = [[4.0 * i + j for j in range(4)] for i in range(4)]
    product = [[sum(m[i][k] * m[k][j] for k in range(4)) for j in range(4)] for i in range(4)]
    assert result["numpy"] == [product, 60.0]  # the trace of m + m.T
    assert result["planted"] == "ModuleNotFoundError"  # a folder outside the read list cannot be listed


@pytest.mark.skipif(os.geteuid() != 0, reason="leaving root needs root")
@pytest.mark.parametrize("stacked", [False, True], ids=["alone", "under-landlock-and-seccomp"])
def test_drop_root_keeps_only_dac_read_search(tmp_path, stacked):
    os.chown(tmp_path, 65534, 65534)
    result = confined(
        """
        import decimal  # the runtime under /root (0700) is still readable
        result["ids"] = [os.getresuid(), os.getresgid(), os.getgroups()]
        result["caps"] = privileges.capabilities()
        result["setuid"] = attempt(lambda: os.setuid(0))
        result["setresgid"] = attempt(lambda: os.setresgid(0, 0, 0))
        result["again"] = attempt(privileges.drop_root)
        with open(os.path.join(ARGS["tmp"], "nobody.txt"), "w") as f:
            f.write("mine")
        """,
        with_landlock=stacked,
        with_seccomp=stacked,
        drop_root=True,
        write=(tmp_path,),
        tmp=tmp_path,
    )
    assert result["ids"] == [[65534] * 3, [65534] * 3, []]
    keep = 1 << privileges.CAP_DAC_READ_SEARCH
    assert result["caps"] == {"CapEff": keep, "CapPrm": keep, "CapInh": 0, "CapBnd": keep, "CapAmb": 0}
    assert result["setuid"] == result["setresgid"] == "EPERM"
    assert result["again"] == "ok"  # not root any more: nothing to do
    assert (tmp_path / "nobody.txt").stat().st_uid == 65534


def test_restrict_refuses_a_threaded_process_and_skips_missing_paths():
    result = confined(
        """
        import threading
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        try:
            landlock.restrict(["/usr"], [])
        except landlock.ConfinementError as e:
            result["threaded"] = str(e)
        stop.set()
        thread.join()
        # join() returns when the thread's Python state is done; the kernel ends the thread itself a
        # moment later, and restrict() rightly counts it until then
        import os, time
        for _ in range(30000):
            if len(os.listdir("/proc/self/task")) == 1:
                break
            time.sleep(0.001)
        result["abi"] = landlock.restrict([*ARGS["python"], "/no/such/path"], ["/no/such/folder"])
        result["after"] = attempt(lambda: open("/etc/hostname").read())
        """,
        with_landlock=False,
        with_seccomp=False,
        python=PYTHON_READ,
    )
    assert "2 threads" in result["threaded"]
    assert result["abi"] == landlock.abi_version()
    assert result["after"] == "EACCES"
