"""A receipt belongs to its row (issue 34, item 3): a hardware row's receipts count as verified only when
each one's sealed request is that row's run (its id, workflow, version, case and target), its seal holds
under a key the operator's root endorsed, and its counts are the ones the row's numbers came from; the
page says which failed, and a device row's class (measured, simulated) comes from its receipts alone.

Each attack acts as the bucket (or folder) writer, or the database writer, would: a row planted naming
another run's receipts, a receipt re-signed by a key nobody endorsed, numbers or counts changed. The rows
are filed as the platform files a batch, so that what is shown is this check's alone (the readers' own
checks of the files are item 1's). The receipts are the seeded home's real ones (a quoted, confirmed run
on the reference provider, tests/web/seeding.py), or made from them with the real sealing code.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from markupsafe import escape
from rich.console import Console

from qsolve.providers.sealing import RUN, run_member
from qsolve.receipts.keys import HostKey, load_host_key
from qsolve.receipts.seal import seal
from qsolve_pipeline.storage.blobs import BlobStore
from qsolve_pipeline.storage.state import connect
from qsolve_pipeline.storage.trackrecord import TrackRecordRow, file_rows
from qsolve_pipeline.storage.trackrecord.published import published_page
from qsolve_pipeline.storage.trackrecord.workflow_page import render_page
from tests.s3server import S3Server, serving

NOBODY = HostKey(bytes(range(1, 33)))  # a key no operator endorsed
FORGED = "f0000000000000000000000000000001"


def section(html: str, name: str) -> str:
    found = re.search(rf'<section id="{name}"[^>]*>(.*?)</section>', html, re.S)
    assert found, f"no section {name}"
    return found.group(1)


def html_row(html: str, run_id: str) -> str:
    found = re.search(
        rf'<tr data-case="[^"]*" data-run="{run_id}">(.*?)</tr>', section(html, "on-hardware"), re.S
    )
    assert found, f"no row of run {run_id}"
    return found.group(1)


@pytest.fixture(scope="module")
def filed_row(seeded_template, tmp_path_factory: pytest.TempPathFactory) -> TrackRecordRow:
    """The seeded hardware run's row, as the platform filed it: read once per module, from a copy of the
    seeded home of its own (every test's home is another copy of the same)."""
    from tests.qsolve.receipts.roots import trust_root
    from tests.web.seeding import copy

    with pytest.MonkeyPatch.context() as m:
        m.delenv("QSOLVE_DATABASE_URL", raising=False)
        trust_root(m)
        seeded = copy(seeded_template, tmp_path_factory.mktemp("row-receipts") / "home")
        m.setenv("QSOLVE_HOME", str(seeded.home))
        p, checked = published_page(seeded.workflow, home=seeded.home)
    (row,) = [r for r in p.on_simulators if r.run_id == seeded.hardware_run]
    assert checked[row.run_id].ok and checked[row.run_id].kind == "simulated"  # the reference: a simulator
    return row


def real_row(seeded, filed_row: TrackRecordRow) -> TrackRecordRow:
    """The seeded hardware run's row, as the platform filed it (``seeded`` is a copy of the same home)."""
    assert filed_row.run_id == seeded.hardware_run and filed_row.workflow == seeded.workflow
    return filed_row


def job_of(home: Path, digest: str) -> dict:
    return json.loads(BlobStore(home).get(digest))


def resealed(home: Path, digest: str, key: HostKey, request=None, result=None) -> str:
    """The receipt ``digest``'s job sealed again by ``key`` (its request or result changed where given),
    kept as a blob: its digest."""
    job = job_of(home, digest)
    body = {k: v for k, v in (result or job["result"]).items() if k != "receipt"}
    return BlobStore(home).put(json.dumps(seal(request or job["request"], body, key)).encode())


def refile(rows: list[TrackRecordRow], home: Path) -> None:
    """File ``rows`` as a batch of its own (a batch's name follows its run ids: a sim-cpu row of another
    workflow beside them gives it a new one), as a writer who plants a copy of a run does."""
    from tests.storage.trackrecord.builders import row

    file_rows([*rows, row(uuid.uuid4().hex, workflow="filler")], home)


def page_of(name: str, home: Path):
    """The page as ``qsolve page NAME`` builds and prints it (wide, so that no label folds)."""
    p, checked = published_page(name, home=home)
    console = Console(width=400, file=io.StringIO(), color_system=None)
    render_page(p, console)
    return p, checked, console.file.getvalue()


def assert_not_verified(p, checked, text: str, html: str, run_id: str, said: str) -> None:
    """The row of ``run_id`` is shown as not verified, saying ``said``, on both surfaces: never in the
    hardware or simulated sections, never with a class, never "receipts verify"."""
    assert run_id not in {r.run_id for r in [*p.on_hardware, *p.on_simulators]}
    assert run_id in {r.run_id for r in p.unverified_devices}
    c = checked[run_id]
    assert not c.ok and c.kind is None and said in c.label, c.label
    assert p.receipts[run_id] == c.label
    assert said in text and "not verified" in text
    row = html_row(html, run_id)
    assert str(escape(said)) in row  # as the page escapes it
    assert '<td class="measured"><span class="fail">not verified</span></td>' in row
    assert ">measured<" not in row and ">simulated<" not in row and "receipts verify" not in row


# --- the found attack: a forged hardware row naming another workflow's run's receipt ---------------------


def plant_for_victim(seeded, filed_row) -> TrackRecordRow:
    """A forged "On quantum hardware" row of ``victim``, which never had a hardware run, naming one
    receipt of max-cut's run; its circuits and shots are that receipt's, so only where it belongs fails."""
    real = real_row(seeded, filed_row)
    digest = seeded.receipts[0]
    shots = job_of(seeded.home, digest)["result"]["shots"]
    forged = real.model_copy(
        update={
            "workflow": "victim",
            "run_id": FORGED,
            "measured": True,
            "passed": True,
            "status": "passed",
            "accuracy": 1.0,
            "receipt_digest": digest,
            "circuits": 1,
            "shots": shots,
        }
    )
    refile([forged], seeded.home)
    return forged


def test_a_row_planted_with_another_workflows_receipt_is_not_verified_nor_measured(filed_row, seeded, client):
    plant_for_victim(seeded, filed_row)
    p, checked, text = page_of("victim", seeded.home)
    html = client.get("/workflows/victim").text
    assert_not_verified(p, checked, text, html, FORGED, "1 receipt belongs to another run")
    assert checked[FORGED].label == "0 of 1 verify: 1 receipt belongs to another run; not verified"
    assert "1 receipts verify" not in html
    cards = client.get("/workflows").text  # its card counts no result on quantum hardware either
    card = re.search(r'<article class="card" data-workflow="victim">(.*?)</article>', cards, re.S)
    assert card and "on quantum hardware" not in card.group(1)
    assert "On quantum hardware (not in the headline): none" in text
    assert "On devices, not verified" in text
    # the real run's row is as it was: its receipts are its own
    real = published_page(seeded.workflow, home=seeded.home)[1][seeded.hardware_run]
    assert real.ok and real.verified == len(seeded.receipts)


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    yield from serving(tmp_path_factory.mktemp("moto") / "moto.log")


def test_the_same_attack_in_a_bucket(filed_row, seeded, s3_server, client, monkeypatch):
    """The seeded home's blobs moved to a bucket on a local S3 server (the state database stays), its
    real row filed there, and the forged row planted there."""
    real = real_row(seeded, filed_row)
    blobs = {p.name: p.read_bytes() for p in (seeded.home / "blobs").rglob("*") if p.is_file()}
    for variable, value in s3_server.environment(s3_server.new_bucket()).items():
        monkeypatch.setenv(variable, value)
    shutil.rmtree(seeded.home / "blobs")
    shutil.rmtree(seeded.home / "trackrecord")
    for data in blobs.values():
        BlobStore(seeded.home).put(data)
    refile([real], seeded.home)
    assert not (seeded.home / "blobs").exists()
    assert published_page(seeded.workflow, home=seeded.home)[1][seeded.hardware_run].ok
    plant_for_victim(seeded, filed_row)
    p, checked, text = page_of("victim", seeded.home)
    html = client.get("/workflows/victim").text
    assert_not_verified(p, checked, text, html, FORGED, "1 receipt belongs to another run")
    assert "On quantum hardware (not in the headline): none" in text


# --- a receipt of the same workflow, of another case, target or run -------------------------------------


@pytest.mark.parametrize(
    "changed",
    [
        {"run_id": FORGED},  # another run of the same case and target
        {"run_id": FORGED, "case_name": "hardware-triangle"},  # another case
        {"target": "provider:lab"},  # the run's own id, another target
        {"case_name": "hardware-triangle"},  # the run's own id, another case
        {"version": "0.9.0"},  # the run's own id, another version
    ],
    ids=["run", "run-and-case", "target", "case", "version"],
)
def test_a_receipt_of_the_same_workflow_but_another_run_case_or_target(filed_row, seeded, client, changed):
    real = real_row(seeded, filed_row)
    forged = real.model_copy(update=changed | {"recorded_at": real.recorded_at.replace(year=2099)})
    refile([forged], seeded.home)
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    n = len(seeded.receipts)
    assert_not_verified(p, checked, text, html, forged.run_id, f"{n} receipts belong to another run")


# --- the seal: a key the operator did not endorse -------------------------------------------------------


def test_a_receipt_signed_by_a_key_not_endorsed_does_not_verify(filed_row, seeded, client):
    real = real_row(seeded, filed_row)
    first, *rest = seeded.receipts
    other = resealed(seeded.home, first, NOBODY)
    assert job_of(seeded.home, other)["request"][RUN]["id"] == real.run_id  # it names the row's run
    forged = real.model_copy(
        update={
            "receipt_digest": ",".join([other, *rest]),
            "recorded_at": real.recorded_at.replace(year=2099),
        }
    )
    refile([forged], seeded.home)
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    assert_not_verified(p, checked, text, html, real.run_id, "1 receipt is signed by a key not endorsed now")
    assert checked[real.run_id].verified == len(rest)


def test_a_receipt_whose_seal_was_broken_does_not_verify(filed_row, seeded, client):
    """A receipt's sealed counts changed after sealing (a new blob under its new name)."""
    real = real_row(seeded, filed_row)
    first, *rest = seeded.receipts
    job = job_of(seeded.home, first)
    outcome, n = next(iter(job["result"]["counts"].items()))
    job["result"]["counts"][outcome] = n + 1
    broken = BlobStore(seeded.home).put(json.dumps(job).encode())
    refile(
        [
            real.model_copy(
                update={
                    "receipt_digest": ",".join([broken, *rest]),
                    "recorded_at": real.recorded_at.replace(year=2099),
                }
            )
        ],
        seeded.home,
    )
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    assert_not_verified(p, checked, text, html, real.run_id, "1 receipt does not verify")


# --- the counts: the row's numbers came from other counts -----------------------------------------------


def test_a_row_whose_circuits_or_shots_are_not_its_receipts_is_not_verified(filed_row, seeded, client):
    real = real_row(seeded, filed_row)
    forged = real.model_copy(
        update={"shots": real.shots * 2, "recorded_at": real.recorded_at.replace(year=2099)}
    )
    refile([forged], seeded.home)
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    n = len(seeded.receipts)
    said = f"the row's {n} circuits and {real.shots * 2} shots are not its receipts' {n} and {real.shots}"
    assert_not_verified(p, checked, text, html, real.run_id, said)
    assert checked[real.run_id].verified == n  # each receipt holds; the row's numbers do not


def test_a_receipt_whose_counts_are_not_those_its_job_gave_is_not_verified(seeded, client):
    """As the database writer: the platform's record of a job's answer no longer matches the counts its
    receipt seals (so the row's numbers did not come from them)."""
    from qsolve_pipeline.storage.state._tables import provider_jobs

    first = seeded.receipts[0]
    with connect(home=seeded.home) as db:
        job = db.receipt_jobs([first])[first]
        answer = dict(job.answer)
        outcome, n = next(iter(answer["counts"].items()))
        answer["counts"] = {**answer["counts"], outcome: n + 1}
        with db._write() as connection:
            connection.execute(
                provider_jobs.update().where(provider_jobs.c.id == job.id).values(answer=answer)
            )
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    said = "1 receipt seals counts other than its job's"
    assert_not_verified(p, checked, text, html, seeded.hardware_run, said)


def test_a_receipt_named_twice_counts_once(filed_row, seeded, client):
    """A row naming one of its run's receipts twice (its circuits one more) is not verified."""
    real = real_row(seeded, filed_row)
    first = seeded.receipts[0]
    shots = job_of(seeded.home, first)["result"]["shots"]
    named = ",".join([*seeded.receipts, first])
    later = real.recorded_at.replace(year=2099)
    forged = {"receipt_digest": named, "circuits": real.circuits + 1, "shots": real.shots + shots}
    refile([real.model_copy(update=forged | {"recorded_at": later})], seeded.home)
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    assert_not_verified(p, checked, text, html, real.run_id, "1 receipt is named again")


# --- receipts sealed before requests named their run ----------------------------------------------------


def test_a_receipt_that_names_no_run_is_the_rows_only_by_the_platforms_record_of_its_job(
    filed_row, seeded, client
):
    """An older receipt (its request names no run): the row's where the state database recorded its job
    for the row's run; another row naming it belongs to another run; with no record, it names no run."""
    from qsolve_pipeline.storage.state._tables import provider_jobs

    real = real_row(seeded, filed_row)
    host = load_host_key(seeded.home)  # the home's own key, endorsed
    older = {}
    for digest in seeded.receipts:
        request = {k: v for k, v in job_of(seeded.home, digest)["request"].items() if k != RUN}
        older[digest] = resealed(seeded.home, digest, host, request=request)
    with connect(home=seeded.home) as db, db._write() as connection:
        for digest, old in older.items():
            connection.execute(
                provider_jobs.update().where(provider_jobs.c.receipt == digest).values(receipt=old)
            )
    later = real.recorded_at.replace(year=2099)
    refile(
        [real.model_copy(update={"receipt_digest": ",".join(older.values()), "recorded_at": later})],
        seeded.home,
    )
    p, checked, _ = page_of(seeded.workflow, seeded.home)
    assert checked[real.run_id].ok and real.run_id in {r.run_id for r in p.on_simulators}
    # the same older receipts named by a row of another run
    named = ",".join(older.values())
    refile(
        [
            real.model_copy(
                update={"run_id": FORGED, "receipt_digest": named, "recorded_at": later.replace(year=2100)}
            )
        ],
        seeded.home,
    )
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    n = len(seeded.receipts)
    assert_not_verified(p, checked, text, html, FORGED, f"{n} receipts belong to another run")
    # and with no record of their jobs, they show no run at all
    with connect(home=seeded.home) as db, db._write() as connection:
        connection.execute(provider_jobs.update().values(receipt=None))
    refile(
        [real.model_copy(update={"receipt_digest": named, "recorded_at": later.replace(year=2101)})],
        seeded.home,
    )
    p, checked, text = page_of(seeded.workflow, seeded.home)
    html = client.get(f"/workflows/{seeded.workflow}").text
    assert_not_verified(p, checked, text, html, real.run_id, f"{n} receipts name no run of this row")


def test_a_platform_run_seals_its_run_in_each_request(seeded, client):
    with connect(home=seeded.home) as db:
        run = db.get_run(seeded.hardware_run)
    want = run_member(run.id, run.workflow, run.version, run.case_name, run.target)
    assert want == {
        "id": seeded.hardware_run,
        "workflow": "max-cut",
        "version": "1.0.0",
        "case": "hardware-single-edge",
        "target": "provider:ref",
    }
    for digest in seeded.receipts:
        assert job_of(seeded.home, digest)["request"][RUN] == want
    page = client.get(f"/runs/{seeded.hardware_run}/receipts").text  # each receipt: sealed for this run
    assert page.count('<td class="sealed-run"><span class="pass">this run</span></td>') == len(
        seeded.receipts
    )
