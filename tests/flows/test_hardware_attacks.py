"""The tester's attacks on a quote's run (issue 21), through the plain functions the hardware flow is
thin over (tasks.hardware), with a provider written apart from qsolve (tests/qsolve/providers/sly.py)
over a process: a huge price is quoted and confirmed as its exact digits, and a run whose provider
charged a job its estimate called free stops before the next job (run_too_large), its one job sealed."""

from __future__ import annotations

import json
import sys

import pytest

from qsolve.cli import main
from qsolve_pipeline.storage.state import RunStatus, connect
from qsolve_pipeline.tasks.hardware import request_quotes, run_quote
from tests.flows.hardware_setup import REPO, publish

SLY = REPO / "tests" / "qsolve" / "providers" / "sly.py"
DEVICE = {"qubits": 8}  # max-cut's hardware case needs more than sly's own two


@pytest.fixture
def sly(home, tmp_path):
    """``provider:sly`` added as a process: its configuration file and the file of what it received."""
    config, record = tmp_path / "sly.json", tmp_path / "sly.jsonl"
    config.write_text(json.dumps({"describe": DEVICE}))
    record.touch()  # what it writes: made here, and allowed by name (nothing else is writable)
    assert main(["providers", "add", "sly", "--process", "--allow-write", str(record), "--", sys.executable,
                 str(SLY), str(config), str(record), "--stdio"]) == 0  # fmt: skip
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
    return config, record


def submits(record) -> int:
    return sum(1 for line in record.read_text().splitlines() if json.loads(line).get("op") == "submit")


def test_a_huge_price_is_quoted_and_confirmed_as_its_digits(home, sly, capsys):
    config, record = sly
    huge = "1" + "0" * 40
    config.write_text(json.dumps({"describe": DEVICE, "estimate": {"free": False, "amount": huge,
                                                                   "currency": "EUR"}}))  # fmt: skip
    capsys.readouterr()
    assert main(["quote", "hw-max-cut", "--target", "provider:sly", "--account", "dev", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["quotes"]
    total = str(int(huge) * listed["provider_cost"]["jobs"])
    assert listed["provider_cost"]["amount"] == total  # was 1.000000000000000000000000000E+41
    assert main(["confirm", listed["id"], "--yes", "--no-run", "--account", "dev"]) == 0
    said = capsys.readouterr()
    assert f"at most {total} EUR of the provider's money" in said.err
    assert f"{total} EUR of the provider's money authorised" in said.out
    assert submits(record) == 0


def test_a_run_whose_provider_charged_a_free_job_stops_before_the_next(home, sly):
    config, record = sly
    with connect(home=home) as db:
        _, (quote,) = request_quotes(db, "hw-max-cut", "dev", target="provider:sly", home=home)
        assert quote.estimate["provider"]["cost"] == "free"
        db.confirm_quote(quote.id, "dev")
        charged = {"amount": "5000.00", "currency": "EUR"}
        config.write_text(json.dumps({"describe": DEVICE, "result": {"charged": charged}}))
        outcome = run_quote(db, quote.id, home=home)
        assert outcome.reason == "run_too_large" and not outcome.recorded, outcome
        assert db.get_run(quote.run_id).status is RunStatus.FAILED
        (job,) = db.list_provider_jobs("sly")
    assert submits(record) == 1 and len(outcome.receipts) == 1
    assert f"provider sly charged 5000.00 EUR for job record {job.id}, whose estimate said free" in (
        outcome.detail
    )
