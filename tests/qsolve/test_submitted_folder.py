"""Hostile workflow folders against the platform's own reads (issue 22, item 1): the one way in.

A folder links to a secret outside it (a git repository can carry a link), with an input schema the
secret's values break, so that any check that read the target would print them; a FIFO where a file
should be would hang any read that waits on it. Each command runs as a user runs it, a new process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from qsolve.errors import WorkflowInvalid
from qsolve.workflow import reading
from qsolve.workflow.reading import NO_LINK, Refused, kind, open_beneath, read_bytes
from tests.conftest import REPO, WorkflowDir

SECRET = "ibm-token-" + uuid.uuid4().hex
#: long enough for any command, short enough that a hang is seen as one
COMMAND_S = 240


def qsolve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "qsolve.cli", *args], capture_output=True, text=True, cwd=REPO,
        timeout=COMMAND_S,
    )


def secret_file(tmp_path: Path) -> Path:
    """A file laid out like ``~/.qiskit/qiskit-ibm.json``, readable by its owner only."""
    folder = tmp_path / "home" / ".qiskit"
    folder.mkdir(parents=True)
    path = folder / "qiskit-ibm.json"
    path.write_text(json.dumps({"default-ibm-quantum": {"token": SECRET, "channel": "ibm_quantum"}}))
    path.chmod(0o600)
    return path


@pytest.fixture
def linked(wf: WorkflowDir, tmp_path: Path) -> WorkflowDir:
    """``examples/k.json`` and a case's ``input_file`` link to the secret; its values break the input
    schema, so a check that read it would quote them."""
    secret = secret_file(tmp_path)
    os.symlink(secret, wf.path("examples/k.json"))
    os.symlink(secret.parent, wf.path("benchmarks/inputs"))  # a folder link, then a file beneath it
    wf.cases["cases"].append({"name": "leak", "input_file": "benchmarks/inputs/qiskit-ibm.json"})
    wf.save()
    return wf


def test_a_link_to_a_secret_is_refused_by_name_and_the_secret_is_printed_nowhere(linked: WorkflowDir) -> None:
    root = str(linked.root)
    lint = qsolve("lint", root)
    check = qsolve("check", root)
    test = qsolve("test", root)
    as_json = qsolve("test", root, "--json")
    for name, ran in (("lint", lint), ("check", check), ("test", test), ("test --json", as_json)):
        assert SECRET not in ran.stdout + ran.stderr, f"qsolve {name} printed the secret"
        assert "ibm_quantum" not in ran.stdout + ran.stderr, f"qsolve {name} printed the secret file"
    assert check.returncode == 1
    assert "benchmarks/inputs/qiskit-ibm.json" in check.stdout and "follows no link" in check.stdout
    report = json.loads(as_json.stdout)
    assert report["checks"]["ok"] is False
    assert any("follows no link" in e for e in report["checks"]["errors"])


def test_the_checks_name_the_link_and_not_its_content(wf: WorkflowDir, tmp_path: Path) -> None:
    """The checks read the folder once, whole (the snapshot the gates and publication use): a link
    anywhere in it fails the checks, named, before any gate runs on it."""
    os.symlink(secret_file(tmp_path), wf.path("examples/k.json"))
    ran = qsolve("test", str(wf.root), "--json")
    assert SECRET not in ran.stdout + ran.stderr
    report = json.loads(ran.stdout)
    assert report["gates"] == [] and not report["checks"]["ok"], report
    assert any(e.startswith(f"examples/k.json: {NO_LINK}") for e in report["checks"]["errors"]), report


@pytest.fixture
def fifo(wf: WorkflowDir) -> WorkflowDir:
    os.mkfifo(wf.path("examples/p.json"))
    return wf


@pytest.mark.parametrize("command", ["lint", "check", "test"])
def test_a_fifo_ends_each_command_with_a_message_naming_it(fifo: WorkflowDir, command: str) -> None:
    if command == "check":  # the checks read the cases' inputs: one names the FIFO
        fifo.cases["cases"].append({"name": "pipe", "input_file": "examples/p.json"})
        fifo.save()
    ran = qsolve(command, str(fifo.root))  # a read that waited on the FIFO would never return
    assert ran.returncode == 1, ran.stdout + ran.stderr
    out = ran.stdout + ran.stderr
    assert "examples/p.json" in out and "a FIFO" in out, out


@pytest.fixture(params=["openat2", "O_NOFOLLOW per component"])
def resolution(request, monkeypatch) -> str:
    """Both ways of resolving beneath the folder: the kernel's openat2, and the fallback without it."""
    if request.param != "openat2":
        monkeypatch.setattr(reading, "_openat2_works", [False])
    return request.param


def test_the_reader_refuses_links_at_every_level_and_special_files(tmp_path: Path, resolution: str) -> None:
    root = tmp_path / "w"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.json").write_text("{}")
    (root / "in-link").symlink_to(root / "a")  # a link that stays inside: refused too
    os.mkfifo(root / "p")
    assert read_bytes(root, "a/f.json") == b"{}"
    for path in ("in-link/f.json", "in-link"):
        with pytest.raises(Refused):
            os.close(open_beneath(root, path))
        assert kind(root, path) == "link"
    for path, said in (("../w/a/f.json", "contains '..'"), ("/etc/passwd", "is absolute"), ("p", "a FIFO")):
        with pytest.raises((Refused, WorkflowInvalid), match=said):
            read_bytes(root, path)
    (root / "big").write_bytes(b"x" * 2000)
    with pytest.raises(WorkflowInvalid, match="larger than"):
        read_bytes(root, "big", limit=1000)


def test_yaml_aliases_that_expand_to_a_billion_values_are_refused_before_any_walk(wf: WorkflowDir) -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9)
    )
    wf.write("benchmarks/cases.yaml", laughs + "hardware_cases: *j\n")
    ran = qsolve("lint", str(wf.root))
    assert ran.returncode == 1
    said = "benchmarks/cases.yaml: holds more than 1,000,000 values once its aliases are written out"
    assert said in ran.stdout


# Found by the independent test of issue 22 (items 1 and 2): each a hostile folder the reader let through.


def test_a_hard_link_to_a_0600_secret_is_refused_by_name_and_the_secret_is_printed_nowhere(
    wf: WorkflowDir, tmp_path: Path
) -> None:
    """A hard link is a regular file beneath the folder, so openat2 reads it: root can link a 0600 token
    in (``fs.protected_hardlinks`` does not hold for root), and its values broke the input schema."""
    os.link(secret_file(tmp_path), wf.path("examples/k.json"))
    wf.cases["cases"].append({"name": "leak", "input_file": "examples/k.json"})
    wf.save()
    lint, check = qsolve("lint", str(wf.root)), qsolve("check", str(wf.root))
    for name, ran in (("lint", lint), ("check", check)):
        assert ran.returncode == 1, ran.stdout + ran.stderr
        assert SECRET not in ran.stdout + ran.stderr, f"qsolve {name} printed the secret"
        said = "examples/k.json: " if name == "lint" else "input_file 'examples/k.json' "
        assert said + reading.HARD_LINK in ran.stdout, ran.stdout
    with pytest.raises(WorkflowInvalid, match="hard links"):
        read_bytes(wf.root, "examples/k.json")


def test_a_socket_is_refused_as_a_socket(wf: WorkflowDir) -> None:
    import socket

    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(wf.path("examples/s.json")))
        ran = qsolve("lint", str(wf.root))
    assert ran.returncode == 1
    assert "examples/s.json: is a socket: the platform reads regular files only" in ran.stdout


def test_a_file_name_with_a_newline_and_a_terminal_escape_is_shown_escaped(wf: WorkflowDir) -> None:
    """The name could forge a line of lint's output (``E002 ...``) or colour the terminal."""
    wf.write("examples/a\nE002 forged\x1b[31m.json", "{not json")
    ran = qsolve("lint", str(wf.root))
    assert ran.returncode == 1
    assert "\x1b" not in ran.stdout + ran.stderr
    assert not any(line.startswith("E002 forged") for line in ran.stdout.splitlines()), ran.stdout
    assert "examples/a\\nE002 forged\\x1b[31m.json: is not JSON" in ran.stdout


@pytest.mark.parametrize("command", ["lint", "check"])
def test_yaml_nested_a_hundred_thousand_deep_is_refused_by_name_not_a_traceback(
    wf: WorkflowDir, command: str
) -> None:
    wf.write("benchmarks/cases.yaml", "[" * 100_000 + "]" * 100_000)
    ran = qsolve(command, str(wf.root))
    assert ran.returncode == 1
    assert "Traceback" not in ran.stderr and "RecursionError" not in ran.stdout + ran.stderr
    assert "benchmarks/cases.yaml: is not YAML the platform reads: it is nested too deeply" in ran.stdout


def test_a_case_name_of_a_mebibyte_is_quoted_as_a_short_excerpt(wf: WorkflowDir) -> None:
    """A 60 MiB name made 63 MB of ``qsolve check`` output, once a message."""
    wf.cases["cases"].append({"name": "n" * 2**20})  # neither input nor input_file: an error naming it
    wf.save()
    ran = qsolve("check", str(wf.root))
    assert ran.returncode == 1
    assert "has neither `input` nor `input_file`" in ran.stdout
    assert len(ran.stdout) < 4000, f"{len(ran.stdout)} characters"


def test_forty_cases_whose_pattern_backtracks_are_checked_at_once_each_named_with_its_key(
    wf: WorkflowDir,
) -> None:
    """``^(a|a)+$`` against 40 ``a``'s and a ``!``: Python's ``re`` backtracks for centuries; each case
    stopped at SCHEMA_S, and 40 such cases kept ``qsolve check`` over 400 s. Patterns are matched by
    RE2 now: each case fails at once, named, with the key whose value the pattern refused."""
    import time

    from qsolve.runtime import worker
    from qsolve.validation.checks import check_submission

    backtracking = {"type": "string", "pattern": "^(a|a)+$"}
    wf.write("schemas/input.json", {"type": "object", "properties": {"x": backtracking}})
    wf.cases["cases"] = [{"name": f"c{i}", "input": {"x": "a" * 40 + "!"}} for i in range(40)]
    wf.cases["hardware_cases"] = []
    wf.save()
    began = time.monotonic()
    report = check_submission(wf.root)
    took = time.monotonic() - began
    assert len(report.errors) == 40, report.errors
    for i, error in enumerate(report.errors):
        assert f"cases[{i}] (c{i}): input does not match schemas/input.json at $.x: " in error, error
        assert "does not match '^(a|a)+$'" in error and "properties/x/pattern" in error, error
    assert took < worker.SCHEMA_S, f"the checks took {took:.1f} s for 40 cases"


def test_the_checks_of_many_costly_cases_share_one_bound(wf: WorkflowDir, monkeypatch) -> None:
    """A schema need not backtrack to be costly: 30 levels of ``anyOf`` of two ``$ref`` to the next,
    none of which matches, is 2^30 validations. Each case's validation is bounded at SCHEMA_S; the
    checks of all the cases share one bound too (CHECKS_S), and every case past it is named."""
    import time

    from qsolve.runtime import worker
    from qsolve.validation import checks

    monkeypatch.setattr(worker, "SCHEMA_S", 1.0)  # the bound of one validation, shortened
    monkeypatch.setattr(checks, "CHECKS_S", 2.0)  # the bound of them all, shortened
    from tests.qsolve.runtime.test_worker import costly_schema

    wf.write("schemas/input.json", costly_schema(key="x"))
    wf.cases["cases"] = [{"name": f"c{i}", "input": {"x": "s"}} for i in range(12)]
    wf.cases["hardware_cases"] = []
    wf.save()
    began = time.monotonic()
    report = checks.check_submission(wf.root)
    took = time.monotonic() - began
    assert not report.ok and all("stopped validating" in e for e in report.errors), report.errors
    assert all(any(f"cases[{i}] (c{i})" in e for e in report.errors) for i in range(12)), report.errors
    assert any("reached their bound of 2 s" in e for e in report.errors), report.errors
    assert took < 4 * worker.SCHEMA_S, f"the checks took {took:.1f} s for 12 cases"


def test_a_pattern_re2_cannot_run_is_refused_by_name_when_the_schema_is_checked(wf: WorkflowDir) -> None:
    """A backreference: RE2 (the only engine the platform matches patterns with) has none; lint
    names the pattern and why, before any case is validated against it."""
    field = {"type": "string", "pattern": "^(a+)\\1$"}
    wf.write("schemas/input.json", {"type": "object", "properties": {"x": field}})
    ran = qsolve("lint", str(wf.root))
    assert ran.returncode == 1
    assert "E061" in ran.stdout and "schemas/input.json" in ran.stdout, ran.stdout
    assert "pattern '^(a+)\\\\1$': the platform matches patterns with RE2, which cannot run it" in ran.stdout


def test_a_file_nested_past_path_max_is_refused_by_name_not_left_out_of_the_listing(wf: WorkflowDir) -> None:
    """3,000 nested folders: the deep file's folder did not open, listed as empty, and the published
    archive and the sandbox's copy silently left the file out."""
    from qsolve.workflow.publication import PublicationError, listing

    fd = os.open(wf.root, os.O_RDONLY)
    for _ in range(500):
        os.mkdir("dddddddddd", dir_fd=fd)
        inner = os.open("dddddddddd", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("deep.py", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)
    with pytest.raises(PublicationError, match="its path is longer than 4,000 bytes"):
        listing(wf.root)


def test_a_pattern_that_costs_minutes_to_compile_is_stopped_by_name_not_compiled_by_the_platform(
    wf: WorkflowDir,
) -> None:
    """The metaschema's check compiles every ``pattern`` (``format: regex``): 400,000 groups took lint's
    own process 12.9 s and 451 MB, 1,600,000 groups minutes and gigabytes, with no deadline."""
    costly = "|".join(["(a)"] * 1_600_000)
    field = {"type": "string", "pattern": costly}
    wf.write("schemas/input.json", {"type": "object", "properties": {"x": field}})
    ran = qsolve("lint", str(wf.root))
    assert ran.returncode == 1
    assert "E061" in ran.stdout and "schemas/input.json: not a valid JSON Schema: the platform" in ran.stdout
    assert len(ran.stdout) < 4000


def test_a_remote_ref_in_a_schema_is_never_fetched(wf: WorkflowDir) -> None:
    """jsonschema's default registry fetches a remote ``$ref`` with urllib (a deprecation warning aside):
    the platform asked a server the schema named, from its own network, for every case it checked."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from qsolve.validation.checks import check_submission

    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            asked.append(self.path)
            body = b'{"type": "object"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        wf.write("schemas/input.json", {"$ref": f"http://127.0.0.1:{server.server_port}/leak.json"})
        report = check_submission(wf.root)
    finally:
        server.shutdown()
        server.server_close()
    assert asked == [], f"the platform fetched {asked}"
    assert not report.ok and any("Unresolvable" in e for e in report.errors), report.errors


def test_a_file_name_of_bytes_that_are_not_utf8_fails_the_checks_by_name(wf: WorkflowDir) -> None:
    """Finding (issue 22 tester): ``examples/<0xff>.txt`` (a name Linux allows, of bytes that are not
    UTF-8) made the snapshot's listing raise ``UnicodeEncodeError``: ``qsolve test`` ended in a
    traceback. The name is refused as a file that cannot be published, its bytes shown escaped."""
    from qsolve.validation.checks import check_submission

    os.close(os.open(os.fsencode(wf.root / "examples") + b"/\xff\n.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    report = check_submission(wf.root)
    assert report.errors == ["examples/\\xff\\n.txt: its name is not UTF-8; it cannot be published"]


def test_a_folder_of_too_many_files_is_refused_before_any_is_read(
    wf: WorkflowDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding (issue 22 tester), fixed: only bytes were bounded, so 50,000 empty files (0 bytes) took
    the snapshot 12 s with no deadline, and each workflow process's copy as many inodes; a million,
    minutes. The walk counts what it visits and stops past ``MAX_ENTRIES`` (made small here)."""
    from qsolve.validation.checks import check_submission

    monkeypatch.setattr(reading, "MAX_ENTRIES", 30)
    for i in range(40):
        wf.write(f"junk/{i}.txt", "")
    report = check_submission(wf.root)
    assert report.errors == ["the folder has more than 30 files and folders; it cannot be published"]
