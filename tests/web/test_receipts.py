"""Receipts: a run's receipts listed and downloadable byte for byte, and the page that runs ``qsolve
verify``'s verifier on a dropped job file, every reason named; bad input says what is wrong."""

from __future__ import annotations

import json
import re

from qsolve.cli import main
from qsolve.web.receipts import PAGE_READS_BYTES


def verify(client, job: bytes | None, *, name: str = "job.json", trust: bytes | None = None, **fields):
    files = {}
    if job is not None:
        files["job"] = (name, job, "application/json")
    if trust is not None:
        files["trust"] = ("keys.json", trust, "application/json")
    return client.post("/verify", files=files or {"job": ("", b"", "application/json")}, data=fields)


def test_a_runs_receipts_are_listed_each_verified_and_downloadable(seeded, client, tmp_path, capsys):
    page = client.get(f"/runs/{seeded.hardware_run}/receipts")
    assert page.status_code == 200
    assert page.text.count('<span class="pass">valid</span>') == len(seeded.receipts)
    assert "hardware-single-edge on provider:ref" in page.text
    out = tmp_path / "out"
    assert main(["receipts", seeded.hardware_run, "--out", str(out)]) == 0
    said = capsys.readouterr().err  # which version's run they seal (issue 33: every receipt names it)
    run = f"run {seeded.hardware_run} (max-cut 1.0.0: hardware-single-edge on provider:ref)"
    assert f"{len(seeded.receipts)} receipts of {run}" in said
    for digest in seeded.receipts:
        assert f'href="/runs/{seeded.hardware_run}/receipts/{digest}.json"' in page.text
        got = client.get(f"/runs/{seeded.hardware_run}/receipts/{digest}.json")
        assert got.status_code == 200 and got.headers["content-type"] == "application/json"
        assert f'filename="{digest}.json"' in got.headers["content-disposition"]
        assert got.content == (out / f"{digest}.json").read_bytes()  # as qsolve receipts writes it


def test_wrong_ids_are_404s_naming_them(seeded, client):
    page = client.get("/runs/no-such-run/receipts")
    assert page.status_code == 404 and "no-such-run" in page.text
    other = seeded.receipts[0]
    page = client.get(f"/runs/{seeded.hardware_run}/receipts/{'0' * 64}.json")
    assert page.status_code == 404 and "has no receipt 000" in page.text
    assert client.get(f"/runs/no-such-run/receipts/{other}.json").status_code == 404


def test_a_run_with_no_device_job_says_so(seeded, client):
    import sqlalchemy as sa

    from qsolve_pipeline.storage.state import connect

    with connect(home=seeded.home) as db, db.engine.connect() as c:
        run_id = c.execute(sa.text("SELECT id FROM runs WHERE status = 'failed' LIMIT 1")).scalar()
    page = client.get(f"/runs/{run_id}/receipts")
    assert page.status_code == 200 and "sealed no device job" in page.text


def test_a_receipt_whose_key_the_database_revoked_fails_here_on_the_page_and_in_qsolve_page(
    seeded, client, capsys
):
    """Finding (issue 26 tester), fixed: the receipts page, the workflow page and ``qsolve page`` checked
    each receipt's seal only, so a receipt sealed by a key the operator had revoked (a stolen host key)
    still read "valid" there while ``qsolve verify --registered`` refused it. They hold each receipt to
    the host keys the operator's root endorsed, as ``--registered`` does; the revocation signed by the
    root (issue 33)."""
    from qsolve_pipeline.storage.state import connect
    from tests.qsolve.receipts.roots import ROOT
    from tests.web.test_workflows import section

    n = len(seeded.receipts)
    with connect(home=seeded.home) as db:
        for record in db.host_keys():
            db.revoke_host_key(record.key, ROOT, note="stolen")
    page = client.get(f"/runs/{seeded.hardware_run}/receipts")
    assert page.status_code == 200 and '<span class="pass">valid</span>' not in page.text
    assert len(re.findall(r'<span class="fail">not valid: [^<]*key_revoked', page.text)) == n, page.text
    hardware = section(client.get("/workflows/max-cut").text, "on-hardware")
    assert f"0 of {n} verify" in hardware
    capsys.readouterr()
    assert main(["page", "max-cut", "--json"]) == 0
    labels = json.loads(capsys.readouterr().out)["receipts"]
    said = f"0 of {n} verify: {n} receipts are signed by a key not endorsed now; not verified"
    assert labels[seeded.hardware_run] == said


def test_a_key_whose_endorsement_a_database_writer_forged_is_shown_not_endorsed_everywhere(
    seeded, client, capsys
):
    """Issue 33: a database writer (every worker host has the URL) with no root key replaces the host key's
    endorsement with one signed by a key of their own: the receipts page shows the key not endorsed and
    each receipt key_untrusted, the workflow page and ``qsolve page`` count none verified."""
    from qsolve.receipts.endorsement import endorse
    from qsolve_pipeline.storage.state import connect
    from qsolve_pipeline.storage.state._tables import host_keys
    from tests.qsolve.receipts.roots import NOT_THE_ROOT
    from tests.web.test_workflows import section

    n = len(seeded.receipts)
    with connect(home=seeded.home) as db:
        (record,) = db.host_keys()
        forged = endorse(NOT_THE_ROOT, record.key, record.possession, 1)
        with db.engine.begin() as connection:
            connection.execute(host_keys.update().values(endorsement=forged))
    # as a machine that never read the root's real endorsement sees it (one that did keeps it, as
    # qsolve.receipts.newest says: the forgery takes nothing from it, and gives the writer's key nothing)
    (seeded.home / "keys" / "endorsements-seen.json").unlink(missing_ok=True)
    page = client.get(f"/runs/{seeded.hardware_run}/receipts")
    assert page.status_code == 200 and '<span class="pass">valid</span>' not in page.text
    assert len(re.findall(r'<span class="fail">not valid: [^<]*key_untrusted', page.text)) == n
    assert (
        len(
            re.findall(
                r'<td class="key-standing"><code>[0-9a-f]{16}</code> <span class="fail">not endorsed',
                page.text,
            )
        )
        == n
    )
    said = f"0 of {n} verify: {n} receipts are signed by a key not endorsed now; not verified"
    assert f'<span class="fail">{said}</span>' in section(
        client.get("/workflows/max-cut").text, "on-hardware"
    )
    capsys.readouterr()
    assert main(["page", "max-cut", "--json"]) == 0
    labels = json.loads(capsys.readouterr().out)["receipts"]
    assert labels[seeded.hardware_run] == said


def test_with_no_root_configured_the_pages_trust_no_key_and_say_why(seeded, client, monkeypatch):
    monkeypatch.delenv("QSOLVE_RECEIPT_ROOT")
    page = client.get(f"/runs/{seeded.hardware_run}/receipts")
    assert page.status_code == 200 and '<span class="pass">valid</span>' not in page.text
    assert 'id="no-root">no receipt root is configured on this machine' in page.text


def test_a_dropped_receipt_is_valid_held_to_the_hosts_key_and_a_time(seeded, client, capsys):
    job = client.get(f"/runs/{seeded.hardware_run}/receipts/{seeded.receipts[0]}.json").content
    capsys.readouterr()
    assert main(["receipt-key", "--json"]) == 0
    trust = json.dumps(json.loads(capsys.readouterr().out)["trust_list"]).encode()
    page = verify(client, job, trust=trust, at="now", skew_ms="1000")
    assert page.status_code == 200
    assert 'data-valid="true"' in page.text and "job.json: valid" in page.text
    assert "<td>listed</td>" in page.text and "allowance 1000 ms" in page.text
    # the command's own words, on the same verifier
    assert "job.json: valid" in re.search(r'<pre class="plain">(.*?)</pre>', page.text, re.S).group(1)


def test_a_tampered_receipt_names_every_reason(seeded, client):
    job = json.loads(client.get(f"/runs/{seeded.hardware_run}/receipts/{seeded.receipts[0]}.json").content)
    job["result"]["counts"] = {"0": 1}
    page = verify(
        client,
        json.dumps(job).encode(),
        trust=b'{"format": "wai.quantum.receipt-keys/1", "algorithm": "ed25519", "keys": []}',
    )
    assert page.status_code == 200 and 'data-valid="false"' in page.text
    reasons = re.findall(r'<li data-reason="([a-z_]+)">', page.text)
    assert "digest_mismatch" in reasons and "key_untrusted" in reasons and "counts" in reasons
    for code in reasons:
        assert f"<code>{code}</code> (§" in page.text  # each with its section and what it means


def test_a_job_that_does_not_read_is_a_422_with_its_reason(client):
    page = verify(client, b'{"request": {}, "result": {}, "request": 1}', name="../../etc/dup.json")
    assert page.status_code == 422 and '<li data-reason="unreadable">' in page.text
    assert "dup.json: not valid" in page.text and "../" not in page.text
    page = verify(client, b"[1, 2]")
    assert page.status_code == 422 and '<li data-reason="not_a_job">' in page.text
    page = verify(client, b" " * (PAGE_READS_BYTES + 1))
    assert page.status_code == 422 and '<li data-reason="too_large">' in page.text


def test_bad_input_is_refused_before_anything_is_judged(client):
    job = b'{"request": {}, "result": {}}'
    for fields, said in [
        ({"at": "soon"}, "not a whole number of milliseconds"),
        ({"at": "1.5"}, "not a whole number of milliseconds"),
        ({"skew_ms": "5"}, "give a time with it"),
    ]:
        page = verify(client, job, **fields)
        assert page.status_code == 422 and said in page.text and 'id="verdict"' not in page.text
    page = verify(client, job, trust=b"{not json")
    assert (
        page.status_code == 422
        and "keys.json: refused whole" in page.text
        and "nothing was judged" in page.text
    )
    page = verify(client, None)
    assert page.status_code == 422 and "drop a job file" in page.text
    page = client.post("/verify", data={"at": "x" * 100})
    assert page.status_code == 422 and "at:" in page.text


def test_verifying_needs_no_login_and_stores_nothing(home, client):
    before = sorted(p.name for p in home.rglob("*"))
    assert verify(client, b'{"request": {}, "result": {}}').status_code == 200
    assert sorted(p.name for p in home.rglob("*")) == before


def test_a_hostile_file_name_is_shown_as_text(client):
    page = verify(client, b"{}", name='<img src=x onerror="alert(1)">.json')
    assert "<img src=x" not in page.text and "&lt;img src=x" in page.text
