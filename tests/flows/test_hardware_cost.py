"""The provider's own price, shown, confirmed and held to (issue 21, items 1-2; quantum-provider-protocol
§1.2, §7): a provider whose ``describe`` says its device is free while every ``estimate`` says 99.00 EUR a
job, billed by the shot, over a process and over HTTP. The quote shows 99.00 EUR a job and the total in
that currency and unit, ``qsolve quote --json`` gives them as ``provider_cost``, confirming authorises
that, and the run sends every job within it; a job whose estimate rose between the quote and the run is
not sent, and the run stops naming the job, the amount and what was authorised.

Prefect is imported here, when the tests are collected, not inside a test that captures its output: its
console logger keeps the stream it was set up with, and a test's own capture is closed when it ends."""

from __future__ import annotations

import json
import sys
from decimal import Decimal

import pytest

from qsolve.cli import main
from qsolve.receipts import verify
from qsolve_pipeline.flows.hardware import HardwareStopped, _shown, hardware_flow, quote_flow
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import RunStatus, connect
from qsolve_pipeline.tasks.hardware import request_quotes, run_quote
from tests.flows.hardware_setup import REPO, publish
from tests.flows.priced_provider import PricedServer, ops, process_command

JOBS = 10  # max-cut's estimate() for the hardware case: grid 3 squared, maxiter 0, and the final circuit


@pytest.fixture(params=["process", "http"])
def trap(request, tmp_path):
    """``provider:trap`` added, over the transport the test is given: ``(price file, record file)``."""
    price, record = tmp_path / "price.txt", tmp_path / "received.jsonl"
    price.write_text("99.00")
    if request.param == "process":
        command = process_command(tmp_path, price, record)
        writes = ["--allow-write", str(record)]
        assert main(["providers", "add", "trap", "--process", *writes, "--", *command]) == 0
        yield price, record
        return
    server = PricedServer(price, record)
    try:
        assert main(["providers", "add", "trap", "--http", server.url]) == 0
        yield price, record
    finally:
        server.stop()


def test_the_quote_shows_the_providers_price_and_confirming_authorises_it(home, tmp_path, trap, capsys):
    _, record = trap
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
    capsys.readouterr()
    assert main(["quote", "hw-max-cut", "--target", "provider:trap", "--account", "dev", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["quotes"]
    cost = {"amount": "990.00", "currency": "EUR", "jobs": JOBS, "each": "99.00", "unit": "shot"}
    assert listed["provider_cost"] == cost  # in its own currency and billing unit
    assert "submit" not in ops(record)  # a quote sends nothing
    with connect(home=home) as db:
        quote = db.get_quote(listed["id"])
    assert not quote.unknown_cost and quote.estimate["device"]["cost"] == "priced"
    form = _shown(quote, Decimal(50))  # the quote flow's confirmation form
    assert "99.00 EUR a job, 990.00 EUR for 10 jobs, billed by the shot" in form
    authorised = "at most 990.00 EUR of the provider's money (99.00 EUR a job, 10 jobs, billed by the shot)"
    assert authorised in form
    assert "It assumes 10 jobs" in form

    assert main(["confirm", quote.id, "--yes", "--no-run", "--account", "dev"]) == 0
    said = capsys.readouterr()
    assert "99.00 EUR a job, 990.00 EUR for 10 jobs, billed by the shot" in said.err  # before confirming
    assert authorised in said.err
    assert "it can spend your money" in said.err
    assert "990.00 EUR of the provider's money authorised" in said.out

    with connect(home=home) as db:
        outcome = run_quote(db, quote.id, home=home)
        assert outcome.status == "finished" and len(outcome.receipts) == JOBS, outcome
        jobs = db.list_provider_jobs("trap")
    assert ops(record).count("submit") == JOBS
    assert {j.context["cost"]["confirmed_by"] for j in jobs} == {f"quote {quote.id}"}
    blobs = BlobStore(home)
    for digest in outcome.receipts:
        job = json.loads(blobs.get(digest))
        cost = job["result"]["cost"]
        assert cost["free"] is False and cost["confirmed"] is True
        assert cost["estimate"]["amount"] == "99.00" and cost["estimate"]["currency"] == "EUR"
        assert cost["estimate"]["unit"] == "shot"
        assert verify(blobs.get(digest)).valid


def test_a_job_whose_estimate_rose_after_the_quote_is_not_sent(home, tmp_path, trap):
    price, record = trap
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
        _, (quote,) = request_quotes(db, "hw-max-cut", "dev", target="provider:trap", home=home)
        db.confirm_quote(quote.id, "dev")
        price.write_text("120.00")  # between the quote and the run
        outcome = run_quote(db, quote.id, home=home)
        assert outcome.reason == "run_too_large" and not outcome.recorded, outcome
        assert db.get_run(quote.run_id).status is RunStatus.FAILED
        assert db.list_provider_jobs("trap") == [] and db.get_hold(quote.run_id).closed
    assert "submit" not in ops(record) and "estimate" in ops(record)
    detail = outcome.detail
    assert "job 1 of the run was not sent" in detail and "120.00 EUR" in detail, detail
    assert f"quote {quote.id} authorised at most 990.00 EUR" in detail and "99.00 EUR a job" in detail
    assert outcome.credits == Decimal(0)


def test_a_free_billing_with_no_estimate_asked_is_no_longer_free(home, tmp_path, trap, capsys):
    """The finding as it was: "the device is free" printed for a device whose every job costs 99.00 EUR."""
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
    capsys.readouterr()
    assert main(["quote", "hw-max-cut", "--target", "provider:trap", "--account", "dev"]) == 0
    out = capsys.readouterr().out
    assert "the device is free" not in out
    assert "the provider's price: 99.00 EUR a job, 990.00 EUR for 10 jobs, billed by the shot" in out
    assert "it assumes 10 jobs" in out and "a cap" in out


def test_a_hardware_run_its_provider_stopped_ends_failed_in_one_line(home, tmp_path, prefect):
    """Issue 21, item 6: through Prefect's own engine entry (what a served or worker run calls), a run
    stopped for a provider's reason ends Failed with one line naming the provider, the operation and
    where its log is; no engine traceback is logged (the old data, a list, raised a TypeError there)."""
    import logging

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.flow_engine import run_flow

    price, record = tmp_path / "price.txt", tmp_path / "received.jsonl"
    price.write_text("99.00")
    command = process_command(tmp_path, price, record)
    writes = ["--allow-write", str(record)]
    assert main(["providers", "add", "trap", "--process", *writes, "--", *command]) == 0
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
        _, (quote,) = request_quotes(db, "hw-max-cut", "dev", target="provider:trap", home=home)
        db.confirm_quote(quote.id, "dev")
    price.write_text("150.00")

    class Kept(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    kept, logger = Kept(), logging.getLogger("prefect.flow_runs")
    logger.addHandler(kept)
    try:
        with pytest.raises(HardwareStopped) as stopped:
            run_flow(hardware_flow, parameters={"quote": quote.id}, error_logger=logger)
    finally:
        logger.removeHandler(kept)
    (outcome,) = stopped.value.outcomes
    assert outcome.reason == "run_too_large" and "submit" not in ops(record)
    with get_client(sync_client=True) as client:
        (run, *_) = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["hardware"])), sort=FlowRunSort.START_TIME_DESC
        )
    message = run.state.message
    assert run.state.is_failed() and "\n" not in message
    assert "provider trap: estimate: job 1 of the run was not sent" in message and "150.00 EUR" in message
    assert str(home / "providers" / "logs" / "trap.log") in message
    assert not [r for r in kept.records if r.exc_info], [r.getMessage() for r in kept.records if r.exc_info]
    assert any(r.getMessage() == f"flow run ended Failed: {message}" for r in kept.records)


def test_a_provider_a_hardware_run_starts_gets_the_allowlist_and_never_the_ibm_key(
    home, tmp_path, prefect, monkeypatch
):
    """docs/hardware.md, the operator's path: the serve process or a worker holds QISKIT_IBM_TOKEN and the
    rest of its environment; a process provider its hardware run starts (through Prefect's own engine
    entry, as a served or worker run is) gets only the allowlist, its entry's env: names and its own
    credential as WAI_PROVIDER_CREDENTIAL (docs/providers.md, "What a provider process receives")."""
    from prefect.flow_engine import run_flow

    secrets = {  # what the serve process or worker holds, that no provider may see
        "QISKIT_IBM_TOKEN": "ibm-key-9a8b7c",
        "QISKIT_IBM_INSTANCE": "crn:ibm-instance-2f3e",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-5f6e7d",
        "OTHER_LAB_KEY": "other-providers-key-1a2b",
        "WAI_PROVIDER_CREDENTIAL": "stale-provider-credential-3c4d",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OWN_KEY", "own-credential-4d1e")
    monkeypatch.setenv("LAB_REGION", "eu-1")
    report = tmp_path / "env.json"
    report.touch()  # what it writes: made here, and allowed by name (nothing else is writable)
    bent = [sys.executable, str(REPO / "tests" / "qsolve" / "providers" / "bent.py")]
    assert main(["providers", "add", "other", "--process", "--credential-env", "OTHER_LAB_KEY", "--",
                 *bent, "--stdio", "record", str(tmp_path / "other.json")]) == 0  # fmt: skip
    assert main(["providers", "add", "rec", "--process", "--credential-env", "OWN_KEY", "--env",
                 "LAB_REGION", "--allow-write", str(report), "--", *bent, "--stdio", "record",
                 str(report)]) == 0  # fmt: skip
    publish(home, tmp_path)
    with connect(home=home) as db:
        db.grant("dev", 100)
        _, (quote,) = request_quotes(db, "hw-max-cut", "dev", target="provider:rec", home=home)
        db.confirm_quote(quote.id, "dev")
    report.write_text("")  # written again by the process the run starts

    run_flow(hardware_flow, parameters={"quote": quote.id})
    with connect(home=home) as db:
        assert db.get_quote(quote.id).run_id and len(db.list_provider_jobs("rec")) == JOBS
    env = json.loads(report.read_text())["environment"]
    allowed = {"PATH", "LANG", "TZ", "HOME", "TMPDIR", "WAI_PROVIDER_CREDENTIAL", "LAB_REGION"}
    assert {k for k in env if not k.startswith("LC_")} <= allowed, sorted(env)
    assert env["WAI_PROVIDER_CREDENTIAL"] == "own-credential-4d1e" and env["LAB_REGION"] == "eu-1"
    assert not [name for name, value in secrets.items() if value in json.dumps(env)]
    assert env["HOME"] == env["TMPDIR"] and not env["HOME"].startswith(str(home))
    assert not any(k.startswith(("PREFECT_", "QSOLVE_")) for k in env), sorted(env)


def test_the_commands_and_deployments_that_can_spend_say_so():
    """Issue 21, item 9 (§7: a tool that can submit a job that is not free says it can spend the person's
    money): qsolve confirm and qsolve run, the quote and hardware deployments, their flows."""
    import yaml

    from qsolve.cli import build_parser

    helps = {a.dest: a.help for a in build_parser()._subparsers._group_actions[0]._choices_actions}
    assert "can spend your money" in helps["confirm"] and "can spend money" in helps["run"]
    listed = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    deployments = {d["name"]: d["description"] for d in listed}
    for name in ("quote", "hardware"):
        assert "can spend the developer's money" in deployments[name]
    for flow in (quote_flow, hardware_flow):
        assert "can spend the" in flow.description
