"""Two hosts on one state database (issue 26, item 3): two homes (separate folders, nothing shared on disk)
on one PostgreSQL schema, each command in a process of its own, as two machines would run them.

A receipt sealed on A verifies on B through the keys the operator's root endorsed (issue 33; the root's
public key configured on both, its private key in a file on neither's home), and through the trust list B
prints, as the standalone verifier takes it; a key retired on B still vouches for what it sealed, and A
moves to a new key, which verifies once endorsed; a key revoked on B is refused on A. Prices and limits
set once on A price alike on B.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from qsolve.receipts.root import ROOT_VARIABLE
from qsolve_pipeline.storage.state import connect
from tests.conftest import REPO
from tests.qsolve.receipts.roots import ROOT, root_file
from tests.s3server import S3Server, serving
from tests.storage.state.conftest import postgres_schema

SEAL = """
import json, sys
from qsolve_pipeline.storage.state import connect
from qsolve.receipts.seal import seal
from tests.qsolve.receipts.builders import request, result
with connect() as db:
    key = db.signing_key(tell=lambda line: print(line, file=sys.stderr))
print(json.dumps(seal(request(), result(), key)))
"""


@dataclass(frozen=True)
class Host:
    name: str
    home: Path
    env: dict[str, str]

    def run(self, *args: str, code: int = 0) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "qsolve.cli", *args],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == code, (args, done.returncode, done.stdout, done.stderr)
        return done

    def seal(self) -> tuple[dict, str]:
        done = subprocess.run(
            [sys.executable, "-c", SEAL], env=self.env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), done.stderr


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    yield from serving(tmp_path_factory.mktemp("moto") / "moto.log")


@pytest.fixture
def hosts(tmp_path: Path, s3_server: S3Server) -> Iterator[tuple[Host, Host]]:
    """Homes A and B on one fresh PostgreSQL schema and one bucket (two homes on one database with
    storage of their own would be refused: the split issue 26 makes an error)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("QSOLVE_", "PREFECT_API_URL", "AWS_"))}
    base |= s3_server.environment(s3_server.new_bucket())
    with postgres_schema("qsolve_hosts") as url:
        made = []
        for name in ("host-a", "host-b"):
            home = tmp_path / name
            home.mkdir()
            env = {
                **base,
                "QSOLVE_HOME": str(home),
                "QSOLVE_DATABASE_URL": url,
                "QSOLVE_HOST_NAME": name,
                "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                "PYTHONPATH": str(REPO),
                ROOT_VARIABLE: ROOT.public_hex,
            }
            made.append(Host(name, home, env))
        yield made[0], made[1]


def _verify(host: Host, job: dict, *flags: str, code: int) -> dict:
    path = host.home / f"job-{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps(job))
    return json.loads(host.run("verify", str(path), "--json", *flags, code=code).stdout)


def test_a_receipt_sealed_on_a_verifies_on_b_and_a_revocation_on_b_holds_on_a(hosts, tmp_path: Path) -> None:
    a, b = hosts
    root = str(root_file(tmp_path))  # the operator's, on neither host's home
    job, _ = a.seal()  # A's key: made in A's home, registered on first use with its proof of possession
    key_a = job["result"]["receipt"]["key"]
    assert (a.home / "keys").is_dir() and not (b.home / "keys").exists()  # nothing of A's on B's disk
    assert _verify(b, job, "--registered", code=1)["reasons"] == ["key_untrusted"]  # not endorsed yet
    said = b.run("receipt-key", "endorse", key_a[:16], "--root", root).stdout
    assert said.startswith(f"endorsed {key_a[:16]} (host-a)")
    verdict = _verify(b, job, "--registered", code=0)
    assert verdict["valid"] is True and verdict["trust"]["listed"] is True

    shown = json.loads(b.run("receipt-key", "--json").stdout)  # B registers its own key as well
    assert shown["host"] == "host-b" and shown["key"] != key_a and shown["endorsed"] is False
    b.run("receipt-key", "endorse", shown["key"][:16], "--root", root)
    listing = json.loads(b.run("receipt-key", "--json").stdout)["trust_list"]
    assert [(e["host"], e["key"]) for e in listing["keys"]] == [("host-a", key_a), ("host-b", shown["key"])]
    assert all(e["key_id"] == e["key"][:16] and e["endorsed_ms"] > 0 for e in listing["keys"])
    keys = b.home / "keys.json"  # the set as a file: the form the standalone verifier takes
    keys.write_text(b.run("receipt-key", "--trust-list").stdout)
    assert json.loads(keys.read_text()) == listing
    assert _verify(b, job, "--trust", str(keys), code=0)["trust"]["listed"] is True

    said = b.run("receipt-key", "retire", key_a[:16], "--note", "rotated", "--root", root).stdout
    assert said.startswith(f"retired {key_a[:16]} (host-a): its host signs with a new key")
    assert _verify(a, job, "--registered", code=0)["valid"] is True  # what a retired key sealed stands
    again, told = a.seal()  # A's next seal: a new key, registered, not endorsed until the operator says
    key_a2 = again["result"]["receipt"]["key"]
    assert key_a2 != key_a and f"receipt key {key_a[:16]} is retired" in told
    assert _verify(b, again, "--registered", code=1)["reasons"] == ["key_untrusted"]
    b.run("receipt-key", "endorse", key_a2[:16], "--root", root)
    assert _verify(b, again, "--registered", code=0)["valid"] is True

    said = b.run("receipt-key", "revoke", key_a[:16], "--root", root).stdout
    assert said.startswith(f"revoked {key_a[:16]} (host-a) from 0 ms")
    refused = _verify(a, job, "--registered", code=1)
    assert refused["valid"] is False and "key_revoked" in refused["reasons"]
    assert refused["trust"] == {
        "listed": True,
        "not_before_ms": None,
        "not_after_ms": None,
        "revoked_from_ms": 0,
    }
    assert _verify(a, again, "--registered", code=0)["valid"] is True  # A's new key is not touched


def test_prices_set_once_on_a_price_alike_on_b(hosts) -> None:
    a, b = hosts
    a.run("credits", "price", "provider:", "--per-circuit", "0.2", "--per-shot", "0.001")
    a.run("credits", "limit", "7")
    shown_a, shown_b = (json.loads(h.run("credits", "show", "--json").stdout) for h in (a, b))
    assert shown_a == shown_b
    assert shown_b["limits"]["per_run_limit"] == "7"
    assert shown_b["prices"]["provider:"] == {"per_circuit": "0.2", "per_shot": "0.001", "set": True}
    for host in (a, b):  # the quote's price on either host: the database's table
        with connect(host.env["QSOLVE_DATABASE_URL"], home=host.home) as db:
            assert db.estimate_price("provider:ref", 3, 600) == Decimal("1.2")
            assert db.limits("hardware").credits == 7
    (b.home / "credits.toml").write_text("per_run_limit = 50\n")  # a file left on one machine: refused
    refused = b.run("credits", "show", code=2).stderr.strip()
    assert refused == (
        f"qsolve: {b.home / 'credits.toml'}: credit prices and limits are kept in the state database now, "
        f"alike for every machine: run `qsolve credits import {b.home / 'credits.toml'}` once (it takes the "
        "file in and sets it aside)"
    )
