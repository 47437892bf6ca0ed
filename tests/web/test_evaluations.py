"""The evaluation pages (issue 16, item 5) with the test client: the run list, a run's detail (six
answers as returned and as parsed, figures, tokens with the 90% flag, verdicts and their form), the
compare page, the scores; and what a stranger, a non-reviewer or a forged form gets (nothing).

The runs are real: judged by the classical judge and by a local OpenAI-compatible stand-in
(``tests/qsolve/evaluation/model_server.py``), on calibration results made by the calibration core,
once per session; each test gets its own copy of that home."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from markupsafe import escape

from qsolve.evaluation.drafts import DraftStore, task_archive
from qsolve.evaluation.runs import RunRequest, execute_run, request_run
from qsolve_pipeline.storage.calibration import open_store
from qsolve_pipeline.storage.state import connect
from tests.qsolve.calibration.calibration_runs import calibrated, made
from tests.qsolve.evaluation.model_server import HEALTHY, ModelServer, answer

REPO = Path(__file__).resolve().parents[2]
SWEEP = "Status: SWEEP_TOO_SHORT\nSuggested range: (0, 2400) [us]\nNotes: the decay is still falling."
HOSTILE = "<script>alert('answer')</script>"


@dataclass(frozen=True)
class Seeded:
    """Three runs over the same three entities of CheckT1 on fake:fez: Q00 (a healthy result), Q01 (its
    sweep too short: true status SWEEP_TOO_SHORT) and Q02 (no figure: skipped)."""

    classical: str  # the classical judge, reading a knowledge draft: the published CheckT1 zipped
    model: str  # the model, SUCCESS for both, no examples
    other: str  # the model with examples: Q00 SUCCESS with another range (content), Q01 SWEEP_TOO_SHORT
    records: dict[str, dict[str, str]]  # run -> qid -> record id
    figures: dict[str, bytes]  # the figures' bytes by SHA-256


def _declare(models: Path, server: ModelServer) -> None:
    spec = server.spec()
    doc = {"version": 1, "models": [spec.model_dump(mode="json", exclude_none=True, exclude={"kind"})]}
    models.write_text(yaml.safe_dump(doc))


def _model_run(folder: Path, script: dict, *, with_examples: bool) -> str:
    with ModelServer(script) as server:
        _declare(folder / "seed-models.yaml", server)
        with open_store(folder) as store:
            run = request_run(
                store.db, store, RunRequest(task="CheckT1", chip="fake:fez", with_examples=with_examples)
            )
            execute_run(store.db, store, run.id, workers=1)  # one record at a time: the script's order
    return run.id


def seed_runs(folder: Path) -> Seeded:
    """The three runs, made in ``folder`` (a QSOLVE_HOME)."""
    good, short = calibrated("CheckT1", 0), calibrated("CheckT1", 1, "sweep_too_short")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QSOLVE_HOME", str(folder))
        mp.setenv("QSOLVE_EVALUATION_CONFIG", str(folder / "seed-models.yaml"))
        for name in ("QCALEVAL_MODEL", "QSOLVE_TASK_KNOWLEDGE", "QSOLVE_DATABASE_URL"):
            mp.delenv(name, raising=False)
        (folder / "seed-models.yaml").write_text("version: 1\nmodels: []\n")
        with open_store(folder) as store:
            store.record_all(
                [(good.result, good.figures), (short.result, short.figures), made("Q02", figure=None)]
            )
            draft = DraftStore(folder).store(task_archive(REPO / "task-knowledge" / "CheckT1"), "CheckT1.zip")
            asked = RunRequest(task="CheckT1", chip="fake:fez", knowledge_draft_id=draft.id)
            classical = request_run(store.db, store, asked, home=folder)
            execute_run(store.db, store, classical.id, home=folder)
        script = {k: answer(v) for k, v in HEALTHY.items()}
        script["calibration_diagnosis"] = answer(f"Status: SUCCESS\nSuggested range: none\nNotes: {HOSTILE}")
        model = _model_run(folder, script, with_examples=False)
        script["calibration_diagnosis"] = [
            answer("Status: SUCCESS\nSuggested range: (0, 400) [us]\nNotes: fine.", prompt_tokens=15000),
            answer(SWEEP, prompt_tokens=15000),
        ]
        other = _model_run(folder, script, with_examples=True)
        (folder / "seed-models.yaml").unlink()
        with connect(home=folder) as db:
            records = {
                run: {r.qid: r.id for r in db.evaluation_records(run)} for run in (classical.id, model, other)
            }
    return Seeded(classical.id, model, other, records, {**good.figures, **short.figures})


_SEEDS: dict[str, tuple[Path, Seeded]] = {}


def seeded(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """The session's runs, copied into ``home``."""
    if "runs" not in _SEEDS:
        folder = tmp_path_factory.mktemp("evaluation-seed")
        _SEEDS["runs"] = (folder, seed_runs(folder))
    folder, runs = _SEEDS["runs"]
    shutil.copytree(folder, home, dirs_exist_ok=True)
    return runs


@pytest.fixture
def runs(home: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Seeded:
    for name in ("QSOLVE_EVALUATION_CONFIG", "QCALEVAL_MODEL", "QSOLVE_TASK_KNOWLEDGE"):
        monkeypatch.delenv(name, raising=False)
    return seeded(home, tmp_path_factory)


def part(page: str, attribute: str, value: str, tag: str = "tr") -> str:
    """The element ``<tag ... attribute="value">...</tag>`` of a page (not nested in its own kind)."""
    found = re.search(rf'<{tag}\b[^>]*\b{attribute}="{re.escape(value)}"[^>]*>(.*?)</{tag}>', page, re.S)
    assert found is not None, f"no <{tag} {attribute}={value!r}> in the page"
    return found.group(1)


def esc(text: str) -> str:
    """Text as the pages write it (Jinja's autoescape)."""
    return str(escape(text))


def cli_json(capsys: pytest.CaptureFixture, *argv: str):
    from qsolve.cli import main

    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# --- the run list ------------------------------------------------------------------------------------


def test_the_run_list_shows_every_run_with_its_state_model_counts_and_times(
    client, runs, home, capsys
) -> None:
    page = client.get("/evaluations")
    assert page.status_code == 200
    listed = cli_json(capsys, "evaluations", "list")  # what the command line lists, on the same home
    assert {r["id"] for r in listed} == {runs.classical, runs.model, runs.other}
    for r in listed:
        row = part(page.text, "data-run", r["id"])
        assert f'href="/evaluations/{r["id"]}"' in row and r["status"] in row and r["model"] in row
        assert "2 completed" in row and "154 skipped" in row  # Q02 with no figure, the chip's 153 with none
        assert f"{r['wall_seconds']:.1f} s" in row and f"{r['model_seconds']:.1f} s" in row
    assert "classical-judge" in part(page.text, "data-run", runs.classical)
    assert "with examples" in part(page.text, "data-run", runs.other)
    assert 'action="/evaluations/compare"' in page.text  # the compare form


def test_an_empty_list_says_how_to_start_a_run(client) -> None:
    page = client.get("/evaluations")
    assert page.status_code == 200 and "No evaluation runs yet" in page.text


# --- a run's detail ----------------------------------------------------------------------------------


def test_a_run_shows_each_record_with_its_six_answers_as_returned_and_as_parsed(client, runs, home) -> None:
    page = client.get(f"/evaluations/{runs.other}")
    assert page.status_code == 200
    with connect(home=home) as db:
        records = db.evaluation_records(runs.other)
    assert len(records) == 2
    for record in records:
        section = part(page.text, "data-record", record.id, "section")
        assert f"{record.task} {record.qid}" in section
        for key, got in record.output["answers"].items():
            row = part(section, "data-question", key)
            assert esc(got["answer"]) in row  # as returned
            reading = got["reading"]
            shown = reading if isinstance(reading, str) else json.dumps(reading, indent=2, ensure_ascii=False)
            assert esc(shown) in row  # as parsed
        assert f"<strong>{record.output['diagnosis']['status']}</strong>" in section
    q01 = part(page.text, "data-record", runs.records[runs.other]["Q01"], "section")
    assert "SWEEP_TOO_SHORT" in q01 and "(0, 2400) [us]" in q01
    assert "Q02: no evaluable result" in part(page.text, "id", "skipped", "ul")  # skipped, with why


def test_tokens_show_the_largest_call_and_flag_it_at_90_percent_of_the_window(client, runs) -> None:
    flagged = client.get(f"/evaluations/{runs.other}").text
    q00 = part(flagged, "data-record", runs.records[runs.other]["Q00"], "section")
    assert "largest call 15030 tokens (calibration_diagnosis" in q00 and "16384-token window, 91.7%" in q00
    assert "at 90% of its window" in q00
    plain = part(
        client.get(f"/evaluations/{runs.model}").text,
        "data-record",
        runs.records[runs.model]["Q00"],
        "section",
    )
    assert "largest call 150 tokens" in plain and "at 90% of its window" not in plain
    classical = client.get(f"/evaluations/{runs.classical}").text
    assert "no token figure" in classical  # the classical judge reports no tokens
    assert "the classical judge reads no prompt" in classical


def test_a_model_answer_is_shown_as_text_never_as_markup(client, runs) -> None:
    for url in (f"/evaluations/{runs.model}", f"/evaluations/compare?a={runs.model}&b={runs.other}"):
        page = client.get(url).text
        assert HOSTILE not in page and esc(HOSTILE) in page


def test_each_record_shows_its_figures_and_serves_them_only_for_itself(client, runs, home) -> None:
    page = client.get(f"/evaluations/{runs.model}").text
    q00, q01 = runs.records[runs.model]["Q00"], runs.records[runs.model]["Q01"]
    shas = re.findall(rf"/evaluations/records/{q00}/figures/([0-9a-f]{{64}})", page)
    assert shas and set(shas) <= set(runs.figures)
    sha = shas[0]
    got = client.get(f"/evaluations/records/{q00}/figures/{sha}")
    assert got.status_code == 200 and got.headers["content-type"] == "image/png"
    assert got.content == runs.figures[sha] and hashlib.sha256(got.content).hexdigest() == sha
    # the same bytes, asked through a record that was never shown them: nothing
    other = client.get(f"/evaluations/records/{q01}/figures/{sha}")
    assert other.status_code == 404 and "shows no figure" in other.text and other.content != runs.figures[sha]
    assert client.get(f"/evaluations/records/{q00}/figures/{'0' * 64}").status_code == 404
    assert client.get(f"/evaluations/records/{q00}/figures/..%2F..%2Fstate.db").status_code == 404
    missing = client.get(f"/evaluations/records/nosuchrecord/figures/{sha}")
    assert missing.status_code == 404 and "nosuchrecord" in missing.text


def test_the_run_page_shows_each_records_judged_figure_inline(client, runs) -> None:
    import base64

    page = client.get(f"/evaluations/{runs.model}").text
    for qid in ("Q00", "Q01"):
        section = part(page, "data-record", runs.records[runs.model][qid], "section")
        (url,) = re.findall(r'<img class="ev-judged" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', section)
        data = base64.b64decode(url)
        assert (
            hashlib.sha256(data).hexdigest() in runs.figures
            and data == runs.figures[hashlib.sha256(data).hexdigest()]
        )


def test_the_run_page_shows_each_parameter_with_its_unit(client, runs) -> None:
    """The model answered {"t1": 49.1}; CheckT1's t1 is "T1 in microseconds": shown as t1 = 49.1 us."""
    page = client.get(f"/evaluations/{runs.model}").text
    section = part(page, "data-record", runs.records[runs.model]["Q00"], "section")
    assert '<dd class="ev-values">t1 = 49.1 us</dd>' in section


def test_a_figure_not_kept_as_an_asset_is_read_from_its_task_result(client, runs, home) -> None:
    with connect(home=home) as db, db.engine.begin() as connection:
        connection.exec_driver_sql("DELETE FROM evaluation_assets")
    q00 = runs.records[runs.classical]["Q00"]
    sha = next(
        s for s in runs.figures if f"/figures/{s}" in client.get(f"/evaluations/{runs.classical}").text
    )
    got = client.get(f"/evaluations/records/{q00}/figures/{sha}")
    assert got.status_code == 200 and got.content == runs.figures[sha]


def test_the_knowledge_draft_a_run_read_downloads_from_its_page(client, runs) -> None:
    page = client.get(f"/evaluations/{runs.classical}").text
    found = re.search(r'href="(/knowledge/drafts/([0-9a-f]{64})/archive)">CheckT1.zip</a>', page)
    assert found is not None
    archive = client.get(found.group(1))
    assert archive.status_code == 200 and archive.content == task_archive(REPO / "task-knowledge" / "CheckT1")
    assert hashlib.sha256(archive.content).hexdigest() == found.group(2)


def test_a_wrong_run_id_is_a_404_naming_it(client, runs) -> None:
    for url in ("/evaluations/0123abc", "/evaluations/0123abc/score"):
        page = client.get(url)
        assert page.status_code == 404 and "no evaluation run 0123abc" in page.text
    hostile = client.get("/evaluations/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    assert hostile.status_code == 404 and "<img src=x" not in hostile.text
    assert esc("no evaluation run <img src=x onerror=alert(1)>") in hostile.text


# --- verdicts ----------------------------------------------------------------------------------------


def _verdicts(home: Path, record: str) -> list:
    with connect(home=home) as db:
        return db.verdict_history(record)


def test_a_reviewer_adds_verdicts_and_the_record_keeps_their_history(
    client, runs, home, make_account, login, form_token
) -> None:
    record = runs.records[runs.model]["Q01"]
    anonymous = client.get(f"/evaluations/{runs.model}").text
    assert f'action="/evaluations/records/{record}/verdicts"' not in anonymous
    assert "as a reviewer to add a verdict" in anonymous
    login(client, "rita", make_account("rita", "reviewer"))
    token = form_token(client)
    page = client.get(f"/evaluations/{runs.model}").text
    assert f'action="/evaluations/records/{record}/verdicts"' in part(page, "data-record", record, "section")
    first = client.post(
        f"/evaluations/records/{record}/verdicts",
        data={"_token": token, "verdict": "disagree", "area": "status", "comment": "the decay is cut short",
              "reviewer": "mallory"},
    )  # fmt: skip
    assert first.status_code == 303
    assert first.headers["location"] == f"/evaluations/{runs.model}#record-{record}"
    second = client.post(
        f"/evaluations/records/{record}/verdicts", data={"_token": token, "verdict": "unsure"}
    )
    assert second.status_code == 303
    history = _verdicts(home, record)
    assert [(v.reviewer, v.verdict, v.area) for v in history] == [
        ("rita", "disagree", "status"),
        ("rita", "unsure", None),
    ]
    section = part(client.get(f"/evaluations/{runs.model}").text, "data-record", record, "section")
    assert "<strong>rita</strong>: unsure" in section  # the current verdict
    assert "History (2 entries)" in section and "the decay is cut short" in section
    assert "mallory" not in section  # the reviewer is the account, never a form field


@pytest.mark.parametrize(
    ("who", "roles", "with_token", "origin", "status"),
    [
        (None, (), True, None, 401),  # nobody logged in
        ("eddie", ("editor",), True, None, 403),  # not a reviewer
        ("rita", ("reviewer",), False, None, 403),  # no form token
        ("rita", ("reviewer",), "forged", None, 403),  # another token
        ("rita", ("reviewer",), True, "http://evil.example", 403),  # another site's form
    ],
)
def test_no_verdict_without_a_reviewer_and_the_pages_own_token(
    client, runs, home, make_account, login, form_token, who, roles, with_token, origin, status
) -> None:
    record = runs.records[runs.model]["Q00"]
    data = {"verdict": "agree"}
    if who is not None:
        login(client, who, make_account(who, *roles))
        if with_token is True:
            data["_token"] = form_token(client)
        elif with_token:
            data["_token"] = with_token
    headers = {"origin": origin} if origin else {}
    got = client.post(f"/evaluations/records/{record}/verdicts", data=data, headers=headers)
    assert got.status_code == status
    assert _verdicts(home, record) == []


def test_a_verdict_is_never_added_by_a_get(client, runs, home, make_account, login) -> None:
    record = runs.records[runs.model]["Q00"]
    login(client, "rita", make_account("rita", "reviewer"))
    got = client.get(f"/evaluations/records/{record}/verdicts?verdict=agree")
    assert got.status_code == 405 and _verdicts(home, record) == []


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"verdict": "maybe"}, "verdict"),
        ({"verdict": ""}, "verdict"),
        ({"verdict": "agree", "area": "everything"}, "area"),
        ({"verdict": "agree", "comment": "x" * 4001}, "comment"),
    ],
)
def test_a_verdict_that_does_not_read_is_a_422_and_nothing_is_written(
    client, runs, home, make_account, login, form_token, form, field
) -> None:
    record = runs.records[runs.model]["Q00"]
    login(client, "rita", make_account("rita", "reviewer"))
    got = client.post(f"/evaluations/records/{record}/verdicts", data={"_token": form_token(client), **form})
    assert got.status_code == 422 and f"{field}:" in got.text and "nothing was recorded" in got.text
    assert _verdicts(home, record) == []


def test_a_verdict_on_a_wrong_record_is_a_404(client, runs, make_account, login, form_token) -> None:
    login(client, "rita", make_account("rita", "reviewer"))
    got = client.post(
        "/evaluations/records/nosuch/verdicts", data={"_token": form_token(client), "verdict": "agree"}
    )
    assert got.status_code == 404 and "no evaluation record nosuch" in got.text


# --- compare -----------------------------------------------------------------------------------------


def test_compare_flags_the_differing_settings_and_tells_decision_from_content(
    client, runs, home, capsys
) -> None:
    page = client.get(f"/evaluations/compare?a={runs.model}&b={runs.other}")
    assert page.status_code == 200
    c = cli_json(capsys, "evaluations", "compare", runs.model, runs.other)
    for s in c["settings"]:
        assert f'data-setting="{s["setting"]}" data-differs="{"yes" if s["differs"] else "no"}"' in page.text
    assert 'data-setting="with_examples" data-differs="yes"' in page.text
    assert 'data-setting="model" data-differs="no"' in page.text
    content = part(page.text, "data-entity", "CheckT1 Q00", "details")
    decision = part(page.text, "data-entity", "CheckT1 Q01", "details")
    assert 'data-kind="content"' in re.search(
        r'<details[^>]*data-entity="CheckT1 Q00"[^>]*>', page.text
    ).group(0)
    assert 'data-kind="decision"' in re.search(
        r'<details[^>]*data-entity="CheckT1 Q01"[^>]*>', page.text
    ).group(0)
    assert "content: notes, suggested_range" in content
    assert "decision: success, status" in decision
    # the expanded row: the diagnosis as a diff, the changed status line paired left and right
    left, right = esc('"status": "SUCCESS"'), esc('"status": "SWEEP_TOO_SHORT"')
    changed = re.search(rf'<tr class="changed">[^\n]*?{left}[^\n]*?{right}[^\n]*?</tr>', decision)
    assert changed is not None
    # and the prompts: the examples change three of them, not the other three
    assert 'class="ev-kind content">differs' in part(
        decision, "data-question", "calibration_diagnosis", "div"
    )
    assert 'class="ev-kind same">same' in part(decision, "data-question", "technical_description", "div")
    totals = part(page.text, "id", "totals", "table")
    ta, tb = c["totals"]["a"], c["totals"]["b"]
    assert f"{ta['success']}</td>" in totals and f"{ta['completed']}/{ta['records']}" in totals
    assert (ta["success"], tb["success"]) == (2, 1)
    tokens = part(totals, "data-row", "tokens")
    assert (
        f"{c['tokens']['a']['total_tokens']} of 16384" in tokens
        and "15030 of 16384" in tokens
        and "⚠ 90%" in tokens
    )


def test_the_compare_page_shows_the_results_each_row_joined(client, runs, home, capsys) -> None:
    c = cli_json(capsys, "evaluations", "compare", runs.model, runs.other)
    page = client.get(f"/evaluations/compare?a={runs.model}&b={runs.other}").text
    for row in c["rows"]:
        shown = part(page, "data-entity", f"{row['task']} {row['qid']}", "details")
        results = part(shown, "class", "ev-results", "span")
        assert row["same_result"] and "same result" in results and row["a"]["task_result_id"][:8] in results
    assert len(re.findall(r'<details class="ev-row" ', page)) == len(c["rows"]) == c["totals"]["a"]["records"]


def test_a_run_compared_with_itself_has_no_difference(client, runs) -> None:
    page = client.get(f"/evaluations/compare?a={runs.other}&b={runs.other}").text
    assert 'data-differs="yes"' not in page
    assert re.findall(r'data-kind="(\w+)"', page) == ["same", "same"]


def test_compare_against_the_classical_judge_shows_it_read_no_prompts(client, runs) -> None:
    page = client.get(f"/evaluations/compare?a={runs.classical}&b={runs.model}")
    assert page.status_code == 200
    assert 'data-setting="model" data-differs="yes"' in page.text
    assert 'data-setting="knowledge_draft_id" data-differs="yes"' in page.text
    row = part(page.text, "data-entity", "CheckT1 Q00", "details")
    assert '<tr class="added">' in row  # b's prompts, with nothing on a's side


def test_compare_needs_two_known_runs(client, runs) -> None:
    pick = client.get("/evaluations/compare")
    assert pick.status_code == 200 and 'name="a"' in pick.text and runs.other[:12] in pick.text
    one = client.get(f"/evaluations/compare?a={runs.model}")
    assert one.status_code == 422 and esc("b: give the run's id") in one.text
    wrong = client.get(f"/evaluations/compare?a={runs.model}&b=feedface")
    assert wrong.status_code == 404 and "no evaluation run feedface" in wrong.text


# --- scores ------------------------------------------------------------------------------------------


def cell(row: str, name: str) -> str:
    """The text of a score row's ``<td data-cell="name">``."""
    return re.sub(r"<[^>]+>", "", part(row, "data-cell", name, "td")).strip()


def test_the_scores_hold_each_run_to_the_known_answers(client, runs, home, capsys, monkeypatch) -> None:
    """Each run's tallies as ``qsolve evaluations score --json`` gives them, per task, in total and per
    set: the status right, the answers that state none (unread) and QCalEval's own reading of them; a
    run whose answers offer each status in doubt has every status unread and QCalEval's reading right."""
    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(home / "seed-models.yaml"))
    script = {k: answer(v) for k, v in HEALTHY.items()}
    script["calibration_diagnosis"] = [
        answer("Status: SUCCESS, I think\nSuggested range: none"),
        answer("Status: SWEEP_TOO_SHORT cannot be ruled out\nSuggested range: none"),
    ]
    doubting = _model_run(home, script, with_examples=False)
    for run, status_right, unread in ((runs.model, 1, 0), (runs.other, 2, 0), (doubting, 0, 2)):
        page = client.get(f"/evaluations/{run}/score")
        assert page.status_code == 200
        s = cli_json(capsys, "evaluations", "score", run)
        total = part(page.text, "data-task", "total")
        assert s["total"]["known"] == 2 and s["total"]["status"] == status_right
        assert s["total"]["status_unread"] == unread
        assert f"{status_right}/2" in total and f"{s['total']['outcome']}/2" in total
        assert f"{s['total']['fit_assessment']}/{s['total']['fit_known']}" in total
        rows = [("data-task", "total", s["total"]), ("data-task", "CheckT1", s["per_task"]["CheckT1"])]
        rows += [("data-set", key, s["per_set"][key]) for key in ("standard", "held_apart")]
        for attribute, value, t in rows:
            row = part(page.text, attribute, value)
            assert cell(row, "status").startswith(f"{t['status']}/{t['known']}"), (value, row)
            assert cell(row, "status_unread") == f"{t['status_unread']}/{t['known']}", (value, row)
            assert cell(row, "qcaleval_status").startswith(f"{t['qcaleval_status']}/{t['known']}"), row
            assert f"{t['outcome_unread']} unread" in cell(row, "outcome")
        assert s["per_set"]["standard"]["judged"] == 2 and s["per_set"]["held_apart"]["judged"] == 0
    assert s["total"]["qcaleval_status"] == 2  # the doubting run: QCalEval's scripts read both right


def test_the_scores_count_the_reviewers_current_verdicts(client, runs, home) -> None:
    record = runs.records[runs.model]["Q00"]
    with connect(home=home) as db:
        db.add_verdict(record, "rita", "disagree")
        db.add_verdict(record, "rita", "agree")  # rita changed her mind: one agreement
        db.add_verdict(record, "rob", "disagree")
    total = part(client.get(f"/evaluations/{runs.model}/score").text, "data-task", "total")
    cells = re.findall(r'<td class="num">(\d+)</td>', total)
    assert cells[-2:] == ["1", "1"]


# --- a real model's conventions, end to end (issue 25, item 5) ------------------------------------------


@pytest.mark.parametrize(
    ("convention", "declared"),
    [
        (  # vllm serve nvidia/Ising-Calibration-1-8B --max-model-len 16384 --limit-mm-per-prompt ...
            "vllm",
            {"id": "Ising-Calibration-1-8B", "model": "nvidia/Ising-Calibration-1-8B", "num_ctx": 16384},
        ),
        (  # ollama serve; the model pulled as qwen2.5vl:7b, num_ctx set in its Modelfile
            "ollama",
            {"id": "qwen2.5vl-7b", "model": "qwen2.5vl:7b", "num_ctx": 8192},
        ),
    ],
)
def test_a_local_vision_endpoint_and_the_classical_judge_judge_the_same_day(
    convention: str, declared: dict, client, home: Path, capsys, monkeypatch
) -> None:
    """Declared as docs/calibration.md says (base URL .../v1, the endpoint's own model id, no key), the
    same day judged by it and by the classical judge, scored and compared on the command line and the
    pages; the endpoint is the project's own loopback server, answering as a model does."""
    import base64

    monkeypatch.setenv("QSOLVE_EVALUATION_CONFIG", str(home / "evaluation.yaml"))
    for name in ("QCALEVAL_MODEL", "QSOLVE_TASK_KNOWLEDGE"):
        monkeypatch.delenv(name, raising=False)
    good, short = calibrated("CheckT1", 0), calibrated("CheckT1", 1, "sweep_too_short")
    script = {k: answer(v) for k, v in HEALTHY.items()}
    script["calibration_diagnosis"] = [answer("Status: SUCCESS\nSuggested range: none"), answer(SWEEP)]
    with ModelServer(script) as server:
        base_url = server.url  # http://127.0.0.1:PORT/v1, as vLLM's and Ollama's OpenAI-compatible APIs
        assert base_url.endswith("/v1")
        (home / "evaluation.yaml").write_text(
            yaml.safe_dump({"version": 1, "models": [{"base_url": base_url, "images": True, **declared}]})
        )
        with open_store(home) as store:
            store.record_all([(good.result, good.figures), (short.result, short.figures)])
            judge = request_run(store.db, store, RunRequest(day=good.result.day, model="classical-judge"))
            execute_run(store.db, store, judge.id)
            model = request_run(store.db, store, RunRequest(day=good.result.day, model=declared["id"]))
            execute_run(store.db, store, model.id, workers=1)
        bodies = [r.body for r in server.received]
    assert len(bodies) == 12 and {b["model"] for b in bodies} == {declared["model"]}
    assert all(b["temperature"] == 0.0 and len(b["messages"]) == 1 for b in bodies)  # single-turn, greedy
    images = [p for b in bodies for p in b["messages"][0]["content"] if p.get("type") == "image_url"]
    assert images and all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in images)
    sent = {
        hashlib.sha256(base64.b64decode(p["image_url"]["url"].split(",", 1)[1])).hexdigest() for p in images
    }
    assert sent == set(good.figures) | set(short.figures)  # each figure's own bytes
    scored = {run: cli_json(capsys, "evaluations", "score", run) for run in (judge.id, model.id)}
    assert all(s["total"]["known"] == 2 for s in scored.values())
    c = cli_json(capsys, "evaluations", "compare", judge.id, model.id)
    assert len(c["rows"]) == 2 and all(r["same_result"] for r in c["rows"])
    assert next(s for s in c["settings"] if s["setting"] == "model") == {
        "setting": "model", "a": "classical-judge", "b": declared["id"], "differs": True
    }  # fmt: skip
    page = client.get(f"/evaluations/compare?a={judge.id}&b={model.id}")
    assert page.status_code == 200 and esc(declared["id"]) in page.text
    for run in (judge.id, model.id):
        assert client.get(f"/evaluations/{run}/score").status_code == 200
    run_page = client.get(f"/evaluations/{model.id}").text
    assert run_page.count('class="ev-judged"') == 2  # each record's judged figure, inline
