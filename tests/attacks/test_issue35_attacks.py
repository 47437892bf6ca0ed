"""A tester's attacks on issue 35 as merged (process providers confined, answers bounded as decoded, a
provider job's wait held to its limit), as a hostile provider program or endpoint would, each a finding
that fails today and passes once mended (``xfail(strict=True)``).

- the paths a provider's command names are checked by the platform and bound again, by path, by the
  launcher: a symlink swapped between the two (by a second instance of the same provider, which writes
  that folder) gives the program ``QSOLVE_HOME`` read and write (the host's seed read, a file planted
  in ``keys/``);
- a path its command names that does not exist makes its folder writable; the program plants a symlink
  there under that name, and its next run is given whatever the symlink points at (the operator's
  ``~/.aws``) read and write;
- the launcher's first process dies with the *thread* that started it (``PR_SET_PDEATHSIG``): a
  provider started from a thread that then ends is killed while its client still holds it (§2.2: it
  runs until its standard input ends);
- an HTTP answer of empty gzip members, streamed, decodes to nothing, so the answer's deadline is never
  looked at: it holds the client past its time-out for as long as it streams;
- so does an answer whose header lines drip a few bytes at a time (httpx's time-out is a read's, and
  the answer's own deadline is looked at only in its body);
- an answer with 1,500 nested content codings ends ``qsolve providers describe`` in a RecursionError's
  traceback, not one line;
- a job's ``result`` exchange is not held to the job's limit: a provider that says ``done`` and then
  hangs keeps ``qsolve run`` for its own time-out past the limit, and the message names no limit.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from qsolve.cli import main
from qsolve.providers import confined
from qsolve.providers.confined import Confinement
from qsolve.providers.jobs import StillRunning
from qsolve.providers.over_http import MAX_CODINGS, HttpTransport
from qsolve.providers.over_process import ProcessTransport
from qsolve.providers.transport import TransportError, TransportTimeout
from tests.qsolve.providers.test_misbehaving import (  # noqa: F401 - the fixtures, by name
    SHOTS,
    Process,
    bell,
    home,
    process_session,
    sessions,
)

DESCRIBE = {"protocol": "wai.quantum.provider/1", "op": "describe"}

#: a provider that reads what it can of QSOLVE_HOME and tries to plant a file in its keys/
READER = r"""
import json, os, sys

home = sys.argv[1]

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return f"refused: {e.strerror}"

got = {"seed": read(os.path.join(home, "keys", "seed"))}
try:
    with open(os.path.join(home, "keys", "planted"), "w") as f:
        f.write("planted by a provider")
    got["planted"] = True
except OSError as e:
    got["planted"] = f"refused: {e.strerror}"
for line in sys.stdin:
    print(json.dumps({"ok": True, "got": got}), flush=True)
"""


@pytest.fixture
def seeded(tmp_path):
    qsolve_home = tmp_path / "home"
    (qsolve_home / "keys").mkdir(parents=True)
    (qsolve_home / "keys" / "seed").write_text("HOST-SEED-SECRET")
    return qsolve_home


def test_a_symlink_swapped_after_the_check_gives_the_program_no_qsolve_home(seeded, tmp_path, monkeypatch):
    lab = tmp_path / "lab"
    lab.mkdir()
    log = lab / "log"  # a log file its command names: its own to write
    log.write_text("")
    script = tmp_path / "reader.py"
    script.write_text(READER)
    checked = confined.readable

    def raced(*args, **kwargs):
        out = checked(*args, **kwargs)
        # what a second instance of the same provider, which writes lab/, does while this one starts
        log.unlink()
        log.symlink_to(seeded)
        return out

    monkeypatch.setattr(confined, "readable", raced)
    argv = [sys.executable, str(script), str(log)]
    transport = ProcessTransport(argv, confinement=Confinement(), home=seeded)
    try:
        got = transport.exchange(DESCRIBE, 60)["got"]
    except TransportError:  # refused to start it: nothing read, nothing planted
        got = {}
    finally:
        transport.close()
    assert "HOST-SEED-SECRET" not in json.dumps(got)
    assert sorted(p.name for p in (seeded / "keys").iterdir()) == ["seed"]


PLANTER = r"""
import json, os, sys

named, target = sys.argv[1], bytes.fromhex(sys.argv[2]).decode()  # not a path on its command line
got = {}
if not os.path.lexists(named):  # the first run: the folder of the path its command names is writable
    try:
        os.symlink(target, named)
        got["planted"] = True
    except OSError as e:
        got["planted"] = f"refused: {e.strerror}"
else:  # the next run: the path its command names is now the operator's folder
    try:
        with open(os.path.join(named, "credentials")) as f:
            got["read"] = f.read()
    except OSError as e:
        got["read"] = f"refused: {e.strerror}"
for line in sys.stdin:
    print(json.dumps({"ok": True, "got": got}), flush=True)
"""


def test_a_symlink_it_planted_does_not_give_its_next_run_the_operators_home(seeded, tmp_path, monkeypatch):
    operator = tmp_path / "operator"
    (operator / ".aws").mkdir(parents=True)
    (operator / ".aws" / "credentials").write_text("aws_secret_access_key = OPERATOR-AWS-SECRET")
    monkeypatch.setenv("HOME", str(operator))
    lab = tmp_path / "lab"
    lab.mkdir()
    script = tmp_path / "planter.py"
    script.write_text(PLANTER)
    argv = [sys.executable, str(script), str(lab / "state"), str(operator / ".aws").encode().hex()]
    seen = []
    for _ in range(2):
        transport = ProcessTransport(argv, confinement=Confinement(), home=seeded)
        try:
            seen.append(transport.exchange(DESCRIBE, 60)["got"])
        except TransportError as e:
            seen.append({"refused": str(e)})
        finally:
            transport.close()
    assert "OPERATOR-AWS-SECRET" not in json.dumps(seen)


ECHO = "import sys\nfor line in sys.stdin:\n    print('{\"ok\": true}', flush=True)\n"


def test_a_provider_started_from_a_thread_outlives_that_thread(seeded):
    transport = ProcessTransport([sys.executable, "-c", ECHO], confinement=Confinement(), home=seeded)
    first: list = []
    try:
        worker = threading.Thread(target=lambda: first.append(transport.exchange(DESCRIBE, 60)))
        worker.start()
        worker.join()
        assert first == [{"ok": True}]
        time.sleep(0.5)  # the thread has ended; its client has not
        assert transport.exchange(DESCRIBE, 60) == {"ok": True}
    finally:
        transport.close()


# ---- HTTP endpoints ------------------------------------------------------------------------------------


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client that went away: nothing to say
        pass


class _Endpoint:
    def __init__(self, respond) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with contextlib.suppress(OSError):  # the client went away
                    respond(self)

            def log_message(self, *args) -> None:
                pass

        self.httpd = _Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint():
    made: list[_Endpoint] = []

    def make(respond) -> str:
        made.append(_Endpoint(respond))
        return made[-1].url

    yield make
    for e in made:
        e.close()


STREAM_S = 4.0  # how long the endpoint streams; the client's time-out is a quarter of it


def _empty_gzip_members(handler) -> None:
    """``Content-Encoding: gzip``, chunked: empty gzip members for :data:`STREAM_S`, then the end. Every
    byte is valid gzip, and none of it decodes to anything."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    empty = gzip.compress(b"") * 64
    until = time.monotonic() + STREAM_S
    while time.monotonic() < until:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(empty), empty))
        handler.wfile.flush()
        time.sleep(0.02)
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def test_an_answer_that_decodes_to_nothing_is_still_held_to_its_time_out(endpoint):
    transport = HttpTransport(endpoint(_empty_gzip_members))
    try:
        # it streamed four times the time-out: whatever the machine's load, that is past it
        with pytest.raises(TransportTimeout):
            transport.exchange(DESCRIBE, STREAM_S / 4)
    finally:
        transport.close()


def _dripped_headers(handler) -> None:
    """A ``200`` whose header lines come a few bytes at a time, each well within the time-out, for
    :data:`STREAM_S`; then an empty body. No byte of an answer ever decodes, so nothing looks at the
    answer's deadline."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    handler.wfile.flush()
    until = time.monotonic() + STREAM_S
    while time.monotonic() < until:
        for part in (b"X-Drip", b": a\r\n"):
            handler.wfile.write(part)
            handler.wfile.flush()
            time.sleep(0.1)
    handler.wfile.write(b"Content-Length: 0\r\n\r\n")
    handler.wfile.flush()


def test_an_answer_whose_headers_drip_is_still_held_to_its_time_out(endpoint):
    transport = HttpTransport(endpoint(_dripped_headers))
    try:
        with pytest.raises(TransportTimeout):  # four times the time-out: past it whatever the load
            transport.exchange(DESCRIBE, STREAM_S / 4)
    finally:
        transport.close()


NESTED = 1500


def _nested_codings(handler) -> None:
    body = json.dumps({"ok": True}).encode()
    for _ in range(NESTED):
        body = gzip.compress(body)
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Encoding", ", ".join(["gzip"] * NESTED))
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_an_answer_of_a_thousand_nested_codings_ends_in_one_line(endpoint, home, capsys):  # noqa: F811
    url = endpoint(_nested_codings)
    assert main(["providers", "add", "deep", "--http", url]) == 0
    capsys.readouterr()
    code = main(["providers", "describe", "deep"])
    err = capsys.readouterr().err
    # 1: a provider failed (the command's exit codes; a transport's refusal is one, as test_edges says)
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and "deep" in err
    assert "Traceback" not in err
    assert f"at most {MAX_CODINGS}" in err  # refused for its codings, before any is decoded


# ---- a job's wait ---------------------------------------------------------------------------------------


def test_a_result_that_hangs_is_held_to_the_jobs_limit(home, sessions, tmp_path):  # noqa: F811
    timeout = 10.0
    provider = Process(tmp_path, "slowresult", "hang:result", timeout=timeout)
    session = process_session(sessions, provider)
    compiled = session.compile(bell(), 3)  # started, described and compiled before the job's clock starts
    session.hold_to(1.0)
    began = time.monotonic()
    with pytest.raises(StillRunning) as caught:
        session.run(bell(), SHOTS, seed=3, compiled=compiled)
    took = time.monotonic() - began
    assert "result" in provider.ops  # it was done, and its counts were asked
    assert "the job's time limit of 1 s" in str(caught.value)
    assert took < timeout * 0.7  # the limit (1 s) and much slack; not the provider's own 10 s
