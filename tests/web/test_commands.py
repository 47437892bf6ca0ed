"""``qsolve accounts add|list|token`` and ``qsolve serve``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import httpx

from qsolve.cli import main
from qsolve_pipeline.storage.state import connect


def test_accounts_add_prints_the_token_once_and_keeps_its_hash(home, capsys):
    assert main(["accounts", "add", "dev", "--role", "developer", "--workflow", "max-cut"]) == 0
    out = capsys.readouterr().out
    token = re.search(r"access token \(shown once; it is kept only as a hash\): (\S+)", out).group(1)
    assert "developer of max-cut" in out
    with connect(home=home) as db:
        assert db.check_login("dev", token).workflows == {"max-cut"}
    assert main(["accounts", "add", "dev", "--role", "reviewer"]) == 1
    assert "already has a login" in capsys.readouterr().err
    assert main(["accounts", "add", "bob", "--role", "reviewer", "--workflow", "max-cut"]) == 2
    assert "--role developer" in capsys.readouterr().err
    assert main(["accounts", "add", "bob", "--role", "owner"]) == 2  # argparse's choices
    capsys.readouterr()
    assert main(["accounts", "list"]) == 0
    listed = capsys.readouterr().out
    assert "dev: developer of max-cut" in listed and token not in listed
    assert main(["accounts", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"name": "dev", "roles": ["developer"], "workflows": ["max-cut"]}
    ]


def test_accounts_token_issues_a_new_one(home, capsys):
    assert main(["accounts", "add", "rev", "--role", "reviewer", "--json"]) == 0
    old = json.loads(capsys.readouterr().out)["token"]
    assert main(["accounts", "token", "rev"]) == 0
    new = capsys.readouterr().out.rsplit(" ", 1)[1].strip()
    with connect(home=home) as db:
        assert db.check_login("rev", old) is None and db.check_login("rev", new) is not None
    assert main(["accounts", "token", "nobody"]) == 1


def test_serve_listens_on_loopback_and_shows_the_pages(home):
    env = dict(os.environ, QSOLVE_HOME=str(home))
    process = subprocess.Popen(
        [sys.executable, "-m", "qsolve.cli", "serve", "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300  # a busy machine: importing and migrating first
        url = None
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
            if found := re.search(r"at (http://127\.0\.0\.1:\d+/)", line):
                url = found.group(1)
        assert url, "qsolve serve did not say where it listens"
        # the first page opens (and migrates) the state database: a busy machine takes its time
        wait = 300
        page = None
        while page is None:
            try:
                page = httpx.get(url + "workflows", timeout=wait)
            except httpx.ConnectError:
                assert process.poll() is None, "qsolve serve ended"
                time.sleep(0.05)
        assert page.status_code == 200 and "Workflows" in page.text
        local = httpx.get(url.replace("127.0.0.1", "localhost") + "workflows", timeout=wait)
        assert local.status_code == 200
        # a page of another site whose name was rebound to 127.0.0.1 comes with its own Host: refused
        rebound = httpx.get(url + "workflows", headers={"Host": "evil.example"}, timeout=wait)
        assert rebound.status_code == 400 and "Workflows" not in rebound.text
    finally:
        process.terminate()
        process.wait(60)


def test_serve_refuses_a_port_that_is_not_one(home, capsys):
    assert main(["serve", "--port", "70000"]) == 2
    assert "not a port" in capsys.readouterr().err
