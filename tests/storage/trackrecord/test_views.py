"""The views' meaning on a hand-built track record (builders.scenario), however it was filed: one batch,
many batches with runs filed twice, compacted in the middle or at the end."""

from __future__ import annotations

import pytest

from qsolve_pipeline.storage.trackrecord import compact, connect, ensure_views, file_rows, page

from .builders import EXPECTED, EXPECTED_CARDS, scenario


def file_scenario(home, how: str) -> None:
    rows = scenario()
    if how == "one batch":
        file_rows(rows, home)
        return
    for i in range(0, len(rows), 3):
        file_rows(rows[max(0, i - 1) : i + 3], home)  # each batch repeats the previous batch's last run
        if how == "compacted midway" and i == 6:
            compact(home)
    if how == "compacted":
        compact(home)


LAYOUTS = ["one batch", "overlapping batches", "compacted midway", "compacted"]


@pytest.fixture(scope="module", params=LAYOUTS)
def con(request, tmp_path_factory):
    """The views over the scenario, filed one way; read only, so shared by the module's tests."""
    home = tmp_path_factory.mktemp("home")
    file_scenario(home, request.param)
    c = connect(home)
    yield c
    c.close()


def ids(con, view: str) -> set[str]:
    found = [r[0] for r in con.sql(f"SELECT run_id FROM {view}").fetchall()]
    assert len(found) == len(set(found)), f"{view} shows a run twice"
    return set(found)


@pytest.mark.parametrize("view", sorted(EXPECTED))
def test_view_holds_the_expected_runs(con, view):
    assert ids(con, view) == EXPECTED[view]


def test_current_is_the_latest_row_per_workflow_version_case_and_target(con):
    brute = con.sql(
        "SELECT run_id FROM rows QUALIFY row_number() OVER"
        " (PARTITION BY workflow, version, case_name, target ORDER BY recorded_at DESC, run_id DESC) = 1"
    ).fetchall()
    assert ids(con, "current") == {r[0] for r in brute}
    assert ids(con, "current") | ids(con, "history") == ids(con, "rows")
    assert not ids(con, "current") & ids(con, "history")


def test_current_version_is_the_newest_published(con):
    current = dict(con.sql("SELECT workflow, version FROM versions WHERE is_current").fetchall())
    # max-cut 1.0.0 has the latest row of all (a hardware run at minute 40) but was published first
    assert current == {"max-cut": "1.1.0", "qubo": "2"}


def test_hardware_rows_keep_their_version_until_replaced(con):
    hw = dict(con.sql("SELECT run_id, version FROM on_hardware").fetchall())
    assert hw == {"r11": "1.1.0", "r13": "1.0.0", "r21": "2"}


def test_earlier_results_say_which_section(con):
    sections = dict(con.sql("SELECT run_id, section FROM earlier_results").fetchall())
    assert sections == {"r08": "track_record", "r05": "on_hardware", "r06": "on_hardware"}


def test_workflow_cards_count_sim_targets_only_with_the_median_headline(con):
    cards = {
        w: (v, p, t, pytest.approx(h))
        for w, v, p, t, h in con.sql(
            "SELECT workflow, current_version, passed, total, headline_accuracy FROM workflow_cards"
        ).fetchall()
    }
    assert cards == EXPECTED_CARDS


@pytest.mark.parametrize("how", ["overlapping batches", "compacted"])
def test_the_page_agrees_with_the_views(home, how):
    file_scenario(home, how)
    p = page("max-cut", home=home)
    assert (p.version, p.current_version, p.versions) == ("1.1.0", "1.1.0", ["1.0.0", "1.1.0"])
    assert (p.passed, p.total, p.headline_accuracy) == (2, 3, pytest.approx(0.95))
    con = connect(home)
    for section in ["track_record", "noise_model_estimate", "on_hardware", "earlier_results"]:
        rows = con.sql(f"SELECT run_id FROM {section} WHERE workflow = 'max-cut'").fetchall()
        assert {r.run_id for r in getattr(p, section)} == {r[0] for r in rows}, section
    con.close()
    assert [r.case_name for r in p.track_record] == ["k5", "ring-6", "tiny"]
    assert [r.verdict for r in p.track_record] == [
        "Below the best classical answer",
        "Matches the best classical answer",
        "Below the best classical answer",
    ]


def test_the_page_of_an_earlier_version(home):
    file_scenario(home, "compacted midway")
    p = page("max-cut", version="1.0.0", home=home)
    assert (p.version, p.current_version) == ("1.0.0", "1.1.0")
    assert {r.run_id for r in p.track_record} == {"r02", "r03"}
    assert {r.run_id for r in p.noise_model_estimate} == {"r04"}
    assert {r.run_id for r in p.on_hardware} == {"r11", "r13"}  # the workflow's, whatever the version
    assert {(r.run_id, r.section) for r in p.earlier_results} == {
        ("r01", "track_record"),
        ("r05", "on_hardware"),
        ("r06", "on_hardware"),
    }
    assert (p.passed, p.total, p.headline_accuracy) == (1, 2, pytest.approx(0.9))


def test_unknown_workflow_or_version(home):
    from qsolve_pipeline.storage.trackrecord import UnknownWorkflow

    file_scenario(home, "one batch")
    with pytest.raises(UnknownWorkflow, match="no track record for nope"):
        page("nope", home=home)
    with pytest.raises(UnknownWorkflow, match=r"max-cut version 9.*1\.0\.0, 1\.1\.0"):
        page("max-cut", version="9", home=home)


def test_the_database_is_in_a_storage_version_duckdb_1x_reads(home):
    """DuckDB 1.x opens storage versions 64 to 68 (its own error names them); 2.x writes 69 by default."""
    import struct

    file_rows(scenario(), home)
    ensure_views(home)  # what any reading command does: a filing leaves the database as it was
    header = (home / "trackrecord.duckdb").read_bytes()[:20]
    assert header[8:12] == b"DUCK"
    assert 64 <= struct.unpack("<Q", header[12:20])[0] <= 68
