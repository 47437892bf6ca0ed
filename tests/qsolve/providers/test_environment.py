"""What a provider receives (issue 21, item 3): a process provider an allowlisted environment and its own
credential, an HTTP provider its messages and its own credential, and nothing else of qsolve's
environment, however it was started. Providers that record what they get (tests/.../bent.py ``record``)
are added and described through ``qsolve providers``, with cloud keys and another provider's credential
variable in qsolve's environment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve.providers.over_process import ProcessTransport
from qsolve.providers.program_env import CREDENTIAL_ENV, provider_environment
from qsolve.providers.registry import ProviderEntry
from qsolve.providers.transport import TransportError

BENT = [sys.executable, str(Path(__file__).with_name("bent.py"))]
OWN = "own-credential-4d1e"
#: what qsolve's environment holds that no provider may see: value -> what it is
SECRETS = {
    "ibm-key-9a8b7c": "QISKIT_IBM_TOKEN",
    "aws-secret-5f6e7d": "AWS_SECRET_ACCESS_KEY",
    "other-providers-key-1a2b": "OTHER_LAB_KEY",
    "stale-provider-credential-3c4d": CREDENTIAL_ENV,
    "postgresql://u:pw-8e9f@127.0.0.1/x": "QSOLVE_DATABASE_URL_SHADOW",
}
ALLOWED = {"PATH", "LANG", "TZ", "HOME", "TMPDIR", CREDENTIAL_ENV, "LAB_REGION"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    for value, name in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OWN_KEY", OWN)
    monkeypatch.setenv("LAB_REGION", "eu-1")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    return home


def ok(*argv: str) -> None:
    assert main(list(argv)) == 0, argv


def test_a_process_provider_gets_the_allowlist_and_its_own_credential(home, tmp_path, capsys):
    report = tmp_path / "env.json"
    report.touch()  # what it writes: made here, and allowed by name (nothing else is writable)
    ok("providers", "add", "other", "--process", "--credential-env", "OTHER_LAB_KEY", "--", *BENT,
       "--stdio", "record", str(tmp_path / "other.json"))  # fmt: skip
    ok("providers", "add", "rec", "--process", "--credential-env", "OWN_KEY", "--env", "LAB_REGION",
       "--allow-write", str(report), "--", *BENT, "--stdio", "record", str(report))  # fmt: skip
    added = capsys.readouterr().out
    assert "its environment: PATH, LANG, LC_*, TZ, a scratch HOME and TMPDIR, LAB_REGION" in added
    ok("providers", "describe", "rec")
    env = json.loads(report.read_text())["environment"]
    assert set(env) - {"LC_ALL"} <= ALLOWED and "LC_ALL" in env, sorted(env)
    assert env[CREDENTIAL_ENV] == OWN and env["LAB_REGION"] == "eu-1"
    text = json.dumps(env)
    assert not [what for value, what in SECRETS.items() if value in text]
    assert env["HOME"] == env["TMPDIR"] and not env["HOME"].startswith(str(home))
    assert not Path(env["HOME"]).exists()  # the scratch folder went with the process


def test_without_a_credential_it_gets_none_not_a_stale_one(home, tmp_path):
    report = tmp_path / "env.json"
    report.touch()
    ok("providers", "add", "rec", "--process", "--allow-write", str(report), "--", *BENT, "--stdio", "record",
       str(report))  # fmt: skip
    ok("providers", "describe", "rec")
    env = json.loads(report.read_text())["environment"]
    assert CREDENTIAL_ENV not in env and "LAB_REGION" not in env
    assert not [what for value, what in SECRETS.items() if value in json.dumps(env)]


def test_an_http_provider_gets_its_messages_and_its_own_credential_only(home, tmp_path):
    report = tmp_path / "requests.json"
    proc = subprocess.Popen([*BENT, "--http", "record", str(report)], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        ok("providers", "add", "web", "--http", url, "--credential-env", "OWN_KEY")
        ok("providers", "describe", "web")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
    requests = json.loads(report.read_text())["requests"]
    assert requests and all(r["headers"]["Authorization"] == f"Bearer {OWN}" for r in requests)
    text = json.dumps(requests)
    assert not [what for value, what in SECRETS.items() if value in text]
    assert "eu-1" not in text


def test_the_environment_is_built_from_the_allowlist_only():
    source = {"PATH": "/bin", "LANG": "C", "LC_TIME": "C", "TZ": "UTC", "HOME": "/home/x", "A": "1",
              "B": "2", CREDENTIAL_ENV: "stale", "PYTHONPATH": "/x"}  # fmt: skip
    env = provider_environment(source, ["A", "MISSING"], scratch="/tmp/s", credential="c")
    assert env == {"PATH": "/bin", "LANG": "C", "LC_TIME": "C", "TZ": "UTC", "A": "1", "HOME": "/tmp/s",
                   "TMPDIR": "/tmp/s", CREDENTIAL_ENV: "c"}  # fmt: skip
    assert CREDENTIAL_ENV not in provider_environment(source, scratch="/tmp/s")
    with pytest.raises(TransportError, match="HOME is set by qsolve"):
        ProcessTransport(["prog"], pass_env=["HOME"])


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"transport": "http", "url": "https://lab.example/", "env": ["A"]}, "only a process provider"),
        ({"transport": "process", "command": ["p"], "env": ["WAI_PROVIDER_CREDENTIAL"]}, "set by qsolve"),
        ({"transport": "process", "command": ["p"], "env": ["TMPDIR"]}, "set by qsolve"),
        ({"transport": "process", "command": ["p"], "env": ["A=B"]}, "not the name"),
    ],
)
def test_an_entry_names_only_variables_it_may_pass_on(entry, words):
    with pytest.raises(ValueError, match=words):
        ProviderEntry.model_validate(entry)


def test_the_credentials_variable_is_not_passed_on_by_name(home, capsys):
    code = main(["providers", "add", "rec", "--process", "--credential-env", "OWN_KEY", "--env", "OWN_KEY",
                 "--", "prog"])  # fmt: skip
    assert code == 2
    assert "as WAI_PROVIDER_CREDENTIAL only" in capsys.readouterr().err
    assert not (home / "providers.yaml").exists()
