"""Issue 35, item 1: a process provider's program runs confined. A hostile program reads what it can of
the host (``/proc/PPID/environ``, ``QSOLVE_HOME/keys``, the credentials folder, another provider's
credential, the host's environment), tries to signal the host and leaves a child in a session of its own:
it gets its own credential and nothing else, and nothing it started outlives its client."""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import time
from pathlib import Path

import pytest
import yaml

from qsolve.cli import main
from qsolve.providers import confined
from qsolve.providers.connect import open_client

HOSTILE = r"""
import json, os, subprocess, sys

home, marker, out = sys.argv[1], sys.argv[2], sys.argv[3]

def read(path):
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("latin-1")
    except OSError as e:
        return f"refused: {e.strerror}"

def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        return f"refused: {e.strerror}"

got = {"pid": os.getpid(), "uid": os.getuid(), "procs": listing("/proc")}
got["parent_environ"] = read(f"/proc/{os.getppid()}/environ")
got["environs"] = [read(f"/proc/{p}/environ") for p in os.listdir("/proc") if p.isdigit()]
got["home"] = listing(home)
got["keys"] = [read(os.path.join(home, "keys", n)) for n in ("host.key", "seed")]
got["credentials"] = listing(os.path.join(home, "credentials"))
got["other"] = read(os.path.join(home, "credentials", "other"))
got["env"] = dict(os.environ)
try:
    os.kill(int(sys.argv[4]), 0)
    got["signal"] = "reached the host"
except OSError as e:
    got["signal"] = f"refused: {e.strerror}"
with open(out, "w") as f:  # a file its entry allows it to write (--allow-write)
    f.write("written")
# a child in a session of its own, which would outlive its parent
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker], start_new_session=True)
for line in sys.stdin:
    print(json.dumps({"ok": True, "got": got}), flush=True)
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "keys").mkdir(parents=True)
    (home / "keys" / "seed").write_text("HOST-SEED-SECRET")
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "HOST-BUCKET-SECRET")
    monkeypatch.setenv("QISKIT_IBM_TOKEN", "HOST-IBM-SECRET")
    monkeypatch.setenv("OTHER_KEY", "OTHER-PROVIDER-SECRET")
    monkeypatch.setenv("OWN_KEY", "ITS-OWN-CREDENTIAL")
    return home


def _running(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_hostile_process_provider_gets_its_own_credential_and_nothing_else(home, tmp_path):
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    marker = f"qsolve-hostile-{secrets.token_hex(8)}"
    out = tmp_path / "out.txt"  # beside QSOLVE_HOME: its own to write, as its entry allows by name
    out.touch()
    other = ["providers", "add", "other", "--process", "--credential-env", "OTHER_KEY", "--", "prog"]
    assert main(other) == 0
    argv = [sys.executable, str(script), str(home), marker, str(out), str(os.getpid())]
    own = ["--credential-env", "OWN_KEY", "--allow-write", str(out)]
    assert main(["providers", "add", "evil", "--process", *own, "--", *argv]) == 0
    assert (home / "credentials" / "other").exists()  # what the attacker is after is there, on the host
    client, _ = open_client("evil")
    try:
        got = client.transport.exchange({"protocol": "wai.quantum.provider/1", "op": "describe"}, 30)["got"]
        assert client.transport.confined["missing"] == []
    finally:
        client.close()
    seen = json.dumps(got)
    for secret in ("HOST-SEED-SECRET", "HOST-BUCKET-SECRET", "HOST-IBM-SECRET", "OTHER-PROVIDER-SECRET"):
        assert secret not in seen
    assert got["env"]["WAI_PROVIDER_CREDENTIAL"] == "ITS-OWN-CREDENTIAL"  # its own, as §2.2 says
    assert got["pid"] == 1 and got["procs"].count("1") == 1  # its own PID namespace: no other process
    assert not [p for p in got["procs"] if p.isdigit() and int(p) > 10]
    assert got["uid"] == 65534
    assert got["home"] == "refused: No such file or directory"  # not there: nothing beside it is bound
    assert got["credentials"] == "refused: No such file or directory"
    assert got["signal"] == "refused: No such process"  # the host's pid is not in its namespace
    assert out.read_text() == "written"
    until = time.monotonic() + 10
    while _running(marker) and time.monotonic() < until:
        time.sleep(0.05)
    assert _running(marker) == []  # its child in a new session ended with it


def test_its_program_may_not_be_given_qsolve_home_or_the_keychain(home, tmp_path, capsys):
    argv = ["providers", "add", "x", "--process", "--allow-read"]
    for path in (home / "keys", home, tmp_path, Path.home(), Path("/")):
        assert main([*argv, str(path), "--", sys.executable, "-c", "pass"]) == 2
        err = capsys.readouterr().err
        assert "a provider's program may not read it" in err and len(err.strip().splitlines()) == 1
    assert not (home / "providers.yaml").exists()


def test_accepting_it_unconfined_names_the_provider(home, capsys):
    argv = ["providers", "add", "x", "--process", "--accept-unconfined", "y", "--", sys.executable]
    assert main(argv) == 2
    assert "--accept-unconfined y: name the provider itself, x" in capsys.readouterr().err


def test_what_it_may_write_is_named_and_never_reached_through_a_link(home, tmp_path, capsys):
    argv = ["providers", "add", "x", "--process"]
    missing = tmp_path / "not-yet"
    assert main([*argv, "--allow-write", str(missing), "--", sys.executable, "-c", "pass"]) == 2
    err = capsys.readouterr().err
    assert "--allow-write" in err and "does not exist" in err and len(err.strip().splitlines()) == 1
    for path in (home, home / "keys"):
        assert main([*argv, "--allow-write", str(path), "--", sys.executable, "-c", "pass"]) == 2
        err = capsys.readouterr().err
        assert "a provider's program may not read it" in err and len(err.strip().splitlines()) == 1
    link = tmp_path / "state"
    link.symlink_to(home)  # what a program could plant in a folder it may write, for its next run
    for named in (["--allow-write", str(link), "--", sys.executable], ["--", sys.executable, str(link)]):
        assert main([*argv, *named]) == 2
        err = capsys.readouterr().err
        assert "never given a path through a symbolic link" in err and len(err.strip().splitlines()) == 1
    assert not (home / "providers.yaml").exists()


# ---- its network: TCP to its ports only (Landlock), no bind, no multipath TCP (seccomp) ----------------

NETWORK = r"""
import json, socket, sys

allowed, other = int(sys.argv[1]), int(sys.argv[2])

def attempt(port, protocol=0):
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM, protocol) as s:
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            return "connected"
    except OSError as e:
        return f"refused: {e.strerror}"

got = {"allowed": attempt(allowed), "other": attempt(other), "mptcp": attempt(other, 262)}
try:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        got["bind"] = "bound"
except OSError as e:
    got["bind"] = f"refused: {e.strerror}"
for line in sys.stdin:
    print(json.dumps({"ok": True, "got": got}), flush=True)
"""


def _listening() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    return server


def test_its_program_connects_over_tcp_only_to_the_ports_its_entry_allows(home, tmp_path):
    script = tmp_path / "network.py"
    script.write_text(NETWORK)
    with _listening() as allowed, _listening() as other:  # two services of this host, on loopback
        a, o = allowed.getsockname()[1], other.getsockname()[1]
        argv = ["providers", "add", "net", "--process", "--allow-port", str(a), "--"]
        assert main([*argv, sys.executable, str(script), str(a), str(o)]) == 0
        assert yaml.safe_load((home / "providers.yaml").read_text())["providers"]["net"]["allow_port"] == [a]
        client, _ = open_client("net")
        try:
            got = client.transport.exchange({"protocol": "wai.quantum.provider/1", "op": "describe"}, 60)[
                "got"
            ]
            held = client.transport.confined
        finally:
            client.close()
    assert held["missing"] == [] and held["tcp_ports"] == sorted({443, a})
    assert got["allowed"] == "connected"
    assert got["other"] == "refused: Permission denied"  # Landlock: not its port
    assert got["mptcp"] == "refused: Operation not permitted"  # seccomp: multipath TCP is not filtered
    assert got["bind"] == "refused: Permission denied"


@pytest.mark.parametrize(
    ("port", "said"),
    [
        ("0", "not a TCP port"),
        ("65536", "not a TCP port"),
        ("https", "not a TCP port"),
        ("5432", "PostgreSQL's"),
        ("4200", "Prefect's"),
        ("6543", "the state database's (QSOLVE_DATABASE_URL)"),
        ("4321", "the Prefect API's (PREFECT_API_URL)"),
    ],
)
def test_allow_port_is_a_port_and_never_one_of_the_platforms_own_services(
    home, monkeypatch, capsys, port, said
):
    monkeypatch.setenv("QSOLVE_DATABASE_URL", "postgresql+psycopg://qsolve:pw@127.0.0.1:6543/qsolve")
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4321/api")
    argv = ["providers", "add", "x", "--process", "--allow-port", port, "--", sys.executable, "-c", "pass"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--allow-port {port!r}" in err or f"--allow-port {port}:" in err
    assert said in err and len(err.strip().splitlines()) == 1
    assert not (home / "providers.yaml").exists()


def test_a_port_that_became_the_platforms_own_is_not_given_at_start(home, tmp_path, monkeypatch):
    from qsolve.providers.transport import TransportError

    script = tmp_path / "network.py"
    script.write_text(NETWORK)
    assert (
        main(
            ["providers", "add", "n", "--process", "--allow-port", "6000", "--", sys.executable, str(script)]
        )
        == 0
    )
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:6000/api")  # a worker's settings, later
    client, _ = open_client("n")
    try:
        with pytest.raises(TransportError, match="--allow-port 6000: that is the Prefect API's"):
            client.transport.exchange({"protocol": "wai.quantum.provider/1", "op": "describe"}, 60)
    finally:
        client.close()


# ---- what only root may read: never in its root, though it reads past the files' modes ---------------

ROOT_ONLY = r"""
import json, os, site, stat, sys

found, bound = [], json.loads(sys.argv[1])  # what its root binds (the test's word: "/" is not listed)
# the runtime's installed packages are bound as installed: code, whatever their modes (Prefect's wheel ships
# its UI's files 0700, and its server copies them beside itself when it first serves the UI)
packages = tuple(os.path.join(p, "") for p in site.getsitepackages())

def closed(path):  # closed to others, yet in its root (an empty folder, one covered, holds nothing)
    if path.startswith(packages):
        return False
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or st.st_mode & stat.S_IROTH or st.st_uid == os.getuid():
        return False
    return not stat.S_ISDIR(st.st_mode) or bool(os.listdir(path))

for root in bound:
    if root.startswith(("/proc", "/sys")) or not os.path.lexists(root):
        continue
    if closed(root):
        found.append(root)
    if os.path.islink(root) or not os.path.isdir(root):
        continue
    for top, dirs, files in os.walk(root, onerror=lambda e: found.append(f"unlisted {e.filename}")):
        found += [p for p in (os.path.join(top, n) for n in [*dirs, *files]) if closed(p)]
# the kernel's own files in its /proc (slabinfo, timer_list, kpageflags...): root's, whatever the namespace
found += [p for p in (f"/proc/{n}" for n in os.listdir("/proc")) if os.path.isfile(p) and closed(p)]
for line in sys.stdin:
    print(json.dumps({"ok": True, "found": found, "uid": os.getuid()}), flush=True)
"""


def test_nothing_only_root_may_read_is_in_its_root(home, tmp_path):
    script = tmp_path / "root_only.py"
    script.write_text(ROOT_ONLY)
    bound = json.dumps(confined.readable([sys.executable, str(script)], [], home)[0])
    assert main(["providers", "add", "walker", "--process", "--", sys.executable, str(script), bound]) == 0
    client, _ = open_client("walker")
    try:
        got = client.transport.exchange({"protocol": "wai.quantum.provider/1", "op": "describe"}, 600)
        assert client.transport.confined["missing"] == []
    finally:
        client.close()
    assert got["uid"] == 65534
    assert got["found"] == []  # what it reads past the modes is only what every user may read
