"""Hardware quotes on ``ibm:`` through the real qiskit-ibm-runtime client, against the local IBM Quantum
stand-in (issue 13): quote (the cost unknown, the device asked its status), confirm, run, the row filed
with sampler-v2 receipts that verify; a device that is down is refused at the quote; one that goes down
mid-run ends the run ``backend_unavailable``, unrecorded, charged only for the jobs it ran; the key is in
no output, log, file or artifact."""

from __future__ import annotations

import json
import logging

import pytest

from qsolve.cli import main
from qsolve.receipts import verify
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import QuoteRefused, RunStatus, connect
from qsolve_pipeline.tasks.hardware import HardwareRefused, request_quotes, run_quote
from tests.flows.hardware_setup import publish
from tests.qsolve.providers.test_credential_nowhere import found_in
from tests.qsolve.receipts.roots import endorse_all, trust_root
from tests.qsolve.targets import test_ibm
from tests.qsolve.targets.test_ibm import API_KEY, DEVICE, TARGET

standin, home = test_ibm.standin, test_ibm.home  # the stand-in, and a home whose credential store has its key


def quoted(home, published: bool = False):
    if not published:
        publish(home, home.parent)
    with connect(home=home) as db:
        db.grant("dev", 100)
        _, (quote,) = request_quotes(db, "hw-max-cut", "dev", target=TARGET, home=home)
    return quote


def test_quote_confirm_run_on_ibm_files_the_row_with_sampler_v2_receipts(
    home, standin, caplog, capsys, monkeypatch
):
    caplog.set_level(logging.DEBUG)
    quote = quoted(home)
    assert quote.unknown_cost and quote.estimate["device"]["cost"] == "unknown"
    assert standin.job_bodies() == []  # priced: nothing sent
    with connect(home=home) as db:
        with pytest.raises(QuoteRefused, match="unknown"):
            db.confirm_quote(quote.id, "dev")  # not shown that the cost is unknown
        db.confirm_quote(quote.id, "dev", seen_unknown=True)
        outcome = run_quote(db, quote.id, home=home)
        assert outcome.status == "finished" and outcome.recorded, outcome
        assert len(outcome.receipts) == len(standin.job_bodies()) >= 1
        run = db.get_run(quote.run_id)
        assert run.filed_at is not None and db.get_hold(run.id).closed
        assert {j.provider for j in db.list_provider_jobs()} == {"ibm"}
        endorse_all(db, trust_root(monkeypatch))  # the operator's root endorses the host's key
    blobs = BlobStore(home)
    for digest in outcome.receipts:
        text = blobs.get(digest)
        verdict = verify(text)
        assert verdict.valid, verdict.reasons
        result = json.loads(text)["result"]
        assert result["provider"]["kind"] == "sampler-v2" and result["provider"]["name"] == "ibm"
        assert result["cost"]["confirmed"] is True and result["execution"]["twirling"] == "off"
    capsys.readouterr()
    assert main(["page", "hw-max-cut", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    # the stand-in is not IBM's own service: its counts are never shown as measured by a device, and its
    # row is among the simulated devices' (its receipts seal the class simulated), not on_hardware's
    assert page["on_hardware"] == [] and [r["target"] for r in page["on_simulators"]] == [TARGET]
    assert page["on_simulators"][0]["measured"] is False
    assert page["receipts"][quote.run_id] == f"{len(outcome.receipts)} receipts verify; simulated"
    # the key went to the stand-in's IAM only: no log, output or file of the home holds it
    assert not found_in(caplog.text.encode(), API_KEY)
    for path in home.rglob("*"):
        if path.is_file() and "credentials" not in path.relative_to(home).parts:
            assert not found_in(path.read_bytes(), API_KEY), path


def test_a_device_that_is_down_is_refused_at_the_quote(home, standin):
    standin.down.add(DEVICE)
    publish(home, home.parent)
    with connect(home=home) as db:
        with pytest.raises(HardwareRefused, match="backend_unavailable.*not operational"):
            request_quotes(db, "hw-max-cut", "dev", target=TARGET, home=home)
        assert db.list_quotes(workflow="hw-max-cut") == []
    standin.down.clear()
    quoted(home, published=True)  # no batch was left open by the refusal


def test_a_device_that_goes_down_mid_run_ends_it_backend_unavailable_unrecorded(home, standin):
    quote = quoted(home)
    assert quote.estimate["circuits"] >= 2
    standin.down_after = 1  # it takes one job, then goes into maintenance
    with connect(home=home) as db:
        db.confirm_quote(quote.id, "dev", seen_unknown=True)
        outcome = run_quote(db, quote.id, home=home)
        assert outcome.reason == "backend_unavailable" and not outcome.recorded, outcome
        assert "not available" in outcome.detail
        run = db.get_run(quote.run_id)
        assert run.status is RunStatus.FAILED and run.filed_at is None
        hold = db.get_hold(run.id)
        (ran,) = db.list_provider_jobs()  # the one job the device took, charged; nothing else
        assert hold.closed and run.actual_credits == db.estimate_price(TARGET, 1, ran.shots) < hold.amount
    assert len(standin.job_bodies()) == 1
    files = list((home / "trackrecord").rglob("*.parquet"))
    assert files == []  # nothing recorded


def test_the_ibm_key_and_a_providers_credential_are_in_no_output_file_log_or_artifact(
    home, standin, prefect, capfd, caplog, monkeypatch, tmp_path
):
    """The hardware flow on Prefect runs a quote on IBM and one on a provider that needs a credential;
    then every Prefect artifact and log line, every file of the home but the credential store, and
    everything printed is searched for either secret: neither is anywhere."""
    from prefect.client.orchestration import get_client

    from qsolve_pipeline.flows.hardware import hardware_flow
    from tests.qsolve.providers.test_credential_nowhere import PLANTED, secure_reference

    caplog.set_level(logging.DEBUG)
    context = secure_reference.__wrapped__(tmp_path)
    url, _, _ = next(context)
    try:
        monkeypatch.setenv("SEC_TOKEN", PLANTED)
        assert main(["providers", "add", "sec", "--http", url, "--credential-env", "SEC_TOKEN"]) == 0
        ibm_quote = quoted(home)
        with connect(home=home) as db:
            db.confirm_quote(ibm_quote.id, "dev", seen_unknown=True)
        (ibm_run,) = hardware_flow(quote=ibm_quote.id)
        with connect(home=home) as db:
            batch = db.get_batch(ibm_quote.batch_id)
            db.batch_status(batch.id)  # the IBM batch ended: another may be asked for
            _, (sec_quote,) = request_quotes(db, "hw-max-cut", "dev", target="provider:sec", home=home)
            db.confirm_quote(sec_quote.id, "dev")
        (sec_run,) = hardware_flow(quote=sec_quote.id)
    finally:
        next(context, None)
    assert ibm_run.recorded and sec_run.recorded and ibm_run.receipts and sec_run.receipts
    with get_client(sync_client=True) as client:
        seen = [json.dumps(a.data) + (a.description or "") for a in client.read_artifacts()]
        seen += [log.message for log in client.read_logs()]
    got = capfd.readouterr()
    seen += [got.out, got.err, caplog.text]
    for secret in (API_KEY, PLANTED):
        for text in seen:
            assert not found_in(text.encode(), secret)
        for path in home.rglob("*"):
            if path.is_file() and "credentials" not in path.relative_to(home).parts:
                assert not found_in(path.read_bytes(), secret), path
