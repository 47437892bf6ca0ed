"""The host's budget of concurrent jobs' memory (issue 35, item 4): claims that hold across threads and
processes, a job that does not fit waits and says so once, and a holder's death releases its claim."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from qsolve.errors import PlatformStopped
from qsolve.runtime import admission
from qsolve.runtime.stopping import stopping

HOLD = """\
import sys, time
from pathlib import Path
from qsolve.runtime.admission import admitted
with admitted(Path(sys.argv[1]), int(sys.argv[2]), "the other job", print, budget=1000):
    print("admitted", flush=True)
    time.sleep(600)
"""


def holding(folder: Path, mb: int) -> subprocess.Popen:
    """Another process that claims ``mb`` and holds it until it is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder), str(mb)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline() == "admitted\n"
    return proc


def test_a_job_that_does_not_fit_waits_saying_so_once_until_another_process_releases(tmp_path) -> None:
    folder = tmp_path / "claims"
    other = holding(folder, 700)
    said: list[str] = []
    got: list[float] = []

    def job() -> None:
        with admission.admitted(folder, 400, "case 2 heavy", said.append, budget=1000) as waited:
            got.append(waited)

    try:
        waiting = threading.Thread(target=job)
        waiting.start()
        time.sleep(1.0)
        assert not got and waiting.is_alive()  # 700 + 400 > 1000: it waits
        other.send_signal(signal.SIGKILL)  # the kernel releases a dead holder's lock
        other.wait()
        waiting.join(30)
        assert got and got[0] >= 1.0
    finally:
        other.kill()
        other.wait()
    assert said == [
        "case 2 heavy waits for memory: its budget of 400 MB and the 700 MB held by 1 running job are more "
        "than this host's 1000 MB for jobs at once (QSOLVE_JOBS_MEMORY_MB); it starts when enough is "
        "released"
    ]
    assert list(folder.glob("*.claim")) == []  # the dead holder's claim removed, the job's released


def test_claims_that_fit_are_admitted_at_once_and_count_across_threads(tmp_path) -> None:
    folder = tmp_path / "claims"
    said: list[str] = []
    ran = threading.Event()

    def third() -> None:
        with admission.admitted(folder, 500, "three", said.append, budget=1000):
            ran.set()

    with admission.admitted(folder, 300, "one", said.append, budget=1000) as a:
        with admission.admitted(folder, 300, "two", said.append, budget=1000) as b:
            assert a < 0.1 and b < 0.1  # 600 of 1000: at once
            assert len(list(folder.glob("*.claim"))) == 2
            waiting = threading.Thread(target=third)
            waiting.start()
            time.sleep(0.8)
            assert not ran.is_set()  # 300 + 300 + 500 > 1000, claimed from this thread
        waiting.join(30)  # 300 + 500: it runs once "two" is released
        assert ran.is_set()
    assert said == [
        "three waits for memory: its budget of 500 MB and the 600 MB held by 2 running jobs are more than "
        "this host's 1000 MB for jobs at once (QSOLVE_JOBS_MEMORY_MB); it starts when enough is released"
    ]


def test_a_job_larger_than_the_whole_budget_runs_alone(tmp_path) -> None:
    folder = tmp_path / "claims"
    with admission.admitted(folder, 5000, "huge", print, budget=1000) as waited:
        assert waited < 0.1  # nothing else runs: it does, alone


def test_a_platform_stop_ends_the_wait(tmp_path) -> None:
    folder = tmp_path / "claims"
    other = holding(folder, 900)
    try:
        with stopping() as stop:
            threading.Timer(0.5, stop.set, args=("SIGTERM",)).start()
            with (
                pytest.raises(PlatformStopped, match="ended because SIGTERM, while it waited for memory"),
                admission.admitted(folder, 400, "case 0", lambda line: None, budget=1000),
            ):
                pass
    finally:
        other.kill()
        other.wait()


def test_the_budget_is_a_setting_with_a_default_from_the_machines_memory(monkeypatch) -> None:
    monkeypatch.delenv(admission.VARIABLE, raising=False)
    assert admission.budget_mb() == int(admission.machine_mb() * admission.SHARE) > 0
    monkeypatch.setenv(admission.VARIABLE, "3072")
    assert admission.budget_mb() == 3072
    monkeypatch.setenv(admission.VARIABLE, "lots")
    with pytest.raises(admission.BudgetSettingInvalid, match="JOBS_MEMORY_MB='lots' is not a positive whole"):
        admission.budget_mb()


# ---- where the claims are: the user's on the host, whatever its QSOLVE_HOME ----------------------------

#: an admission in a process of its own under another QSOLVE_HOME: its platform stop is set after 1.5 s
OTHER_HOME = """\
import threading
from qsolve.errors import PlatformStopped
from qsolve.runtime.stopping import stopping
from qsolve.validation.jobs import Limits, admitted
with stopping() as stop:
    threading.Timer(1.5, stop.set, ["the test stopped it"]).start()
    try:
        with admitted(Limits(timeout_s=60, memory_mb=1000), "the second job", lambda l: print("said:", l)):
            print("admitted", flush=True)
    except PlatformStopped as e:
        print("stopped:", e, flush=True)
"""


def test_by_default_every_home_of_a_user_shares_the_claims_in_its_runtime_folder(
    tmp_path, monkeypatch
) -> None:
    from qsolve.validation.jobs import Limits
    from qsolve.validation.jobs import admitted as job_admitted

    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    monkeypatch.delenv(admission.FOLDER_VARIABLE)  # no setting: the user's default folder
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv(admission.VARIABLE, "2000")
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "worker-home"))
    env = {**os.environ, "QSOLVE_HOME": str(tmp_path / "person-home")}
    with job_admitted(Limits(timeout_s=60, memory_mb=1000), "the first job", lambda line: None):
        claims = runtime / "qsolve" / "jobs-memory"
        assert len(list(claims.glob("*.claim"))) == 1
        assert (
            stat.S_IMODE(claims.stat().st_mode) == stat.S_IMODE((runtime / "qsolve").stat().st_mode) == 0o700
        )
        done = subprocess.run(
            [sys.executable, "-c", OTHER_HOME], capture_output=True, text=True, timeout=60, env=env
        )
    assert "admitted" not in done.stdout and "said:" in done.stdout and "stopped:" in done.stdout, done.stderr
    assert not (tmp_path / "worker-home" / "run").exists() and not (tmp_path / "person-home" / "run").exists()


def test_the_default_folder_is_the_users_own_on_the_host(tmp_path) -> None:
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    assert admission.default_base(os.geteuid(), str(runtime)) == runtime / "qsolve"
    runtime.chmod(0o755)  # not a runtime folder of the user's own: not used
    assert admission.default_base(1000, str(runtime)) == Path("/tmp/qsolve-1000")
    assert admission.default_base(1000, "") == Path("/tmp/qsolve-1000")
    assert admission.default_base(0, "relative/xdg") == Path("/run/qsolve")


def _refused(monkeypatch, runtime: Path) -> str:
    monkeypatch.delenv(admission.FOLDER_VARIABLE)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    with pytest.raises(admission.ClaimsFolderUnsafe) as caught:
        admission.claims_folder()
    return str(caught.value)


def test_a_link_planted_for_the_claims_folder_is_never_followed(tmp_path, monkeypatch) -> None:
    runtime, elsewhere = tmp_path / "xdg", tmp_path / "attackers"
    runtime.mkdir(mode=0o700)
    elsewhere.mkdir()
    (runtime / "qsolve").symlink_to(elsewhere)  # as another user could in /tmp, before the first job
    said = _refused(monkeypatch, runtime)
    assert "is not a folder of its own" in said and admission.FOLDER_VARIABLE in said
    assert list(elsewhere.iterdir()) == []  # nothing made there


def test_another_users_claims_folder_is_not_used(tmp_path, monkeypatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    (runtime / "qsolve").mkdir(mode=0o777)
    os.chown(runtime / "qsolve", 65534, 65534)  # made first by another user, open to all
    said = _refused(monkeypatch, runtime)
    assert "is user 65534's, not this user's" in said
    assert not (runtime / "qsolve" / "jobs-memory").exists()


def test_a_named_folder_is_the_operators_and_closed_to_others(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(admission.FOLDER_VARIABLE, "relative/claims")
    with pytest.raises(admission.ClaimsFolderUnsafe, match="is not an absolute path"):
        admission.claims_folder()
    named = tmp_path / "shared" / "claims"
    named.mkdir(parents=True, mode=0o777)
    named.chmod(0o777)
    monkeypatch.setenv(admission.FOLDER_VARIABLE, str(named))
    assert admission.claims_folder() == named and stat.S_IMODE(named.stat().st_mode) == 0o700
    (tmp_path / "link").symlink_to(named)
    monkeypatch.setenv(admission.FOLDER_VARIABLE, str(tmp_path / "link"))
    with pytest.raises(admission.ClaimsFolderUnsafe, match="not a folder of its own"):
        admission.claims_folder()
