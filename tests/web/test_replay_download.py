"""A version's page offers its replay bundle for download (issue 40, item 1): the same bytes every time
for the same track record, a bundle whose log, rows and receipts check offline; a version with no row
to replay, or none at all, is a 404 saying why."""

from __future__ import annotations

from qsolve.replay.bundle import read_bundle
from qsolve.replay.checks import check


def test_the_page_links_its_bundle_and_the_bundle_checks_offline(seeded, client) -> None:
    page = client.get("/workflows/max-cut/versions/1.0.0")
    assert page.status_code == 200
    url = "/workflows/max-cut/versions/1.0.0/replay.zip"
    assert f'href="{url}"' in page.text
    first, second = client.get(url), client.get(url)
    assert first.status_code == 200 and first.headers["content-type"] == "application/zip"
    assert "max-cut-1.0.0.replay.zip" in first.headers["content-disposition"]
    assert first.content == second.content
    bundle = read_bundle(first.content)
    assert (bundle.index.workflow, bundle.index.version) == ("max-cut", "1.0.0")
    found = check(bundle)
    assert not found.problems, found.problems
    assert seeded.hardware_run in {r.run_id for r in found.rows}
    assert set(bundle.receipts) == set(seeded.receipts)


def test_no_bundle_for_a_version_never_published(seeded, client) -> None:
    answer = client.get("/workflows/max-cut/versions/7.0.0/replay.zip")
    assert answer.status_code == 404 and "max-cut" in answer.text


def test_an_earlier_versions_bundle_holds_its_hardware_row_that_names_no_receipt(seeded, client) -> None:
    """0.9.0's ibm: row was filed with no receipt: the bundle still checks, and that row alone is one a
    replay cannot recompute, saying why."""
    answer = client.get("/workflows/max-cut/versions/0.9.0/replay.zip")
    assert answer.status_code == 200
    found = check(read_bundle(answer.content))
    assert not found.problems, found.problems
    (hardware,) = [r for r in found.rows if r.target.startswith("ibm:")]
    assert found.receipts[hardware.run_id].problems == [
        f"row {hardware.run_id[:12]} ({hardware.case_name} on {hardware.target}): names no receipt"
    ]


def test_a_download_never_makes_registers_or_rotates_the_hosts_key(seeded, client, home) -> None:
    """A GET changes nothing: with the host's key file gone, the download is refused in one line, and no
    key is made in the home or registered in the state database."""
    from qsolve.receipts.keys import key_path
    from qsolve_pipeline.storage.state import connect

    with connect(home=home) as db:
        before = sorted(r.key for r in db.host_keys())
    path = key_path(home)
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    try:
        answer = client.get("/workflows/max-cut/versions/1.0.0/replay.zip")
        assert answer.status_code == 404 and "no receipt key" in answer.text, answer.text[-500:]
        assert not path.exists(), "a GET made a host key"
        with connect(home=home) as db:
            assert sorted(r.key for r in db.host_keys()) == before, "a GET registered a host key"
    finally:
        aside.rename(path)
    assert client.get("/workflows/max-cut/versions/1.0.0/replay.zip").status_code == 200
