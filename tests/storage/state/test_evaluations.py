"""Evaluation runs in the state database, on SQLite and PostgreSQL: one record per task result, each
claimed once, a stale heartbeat read as interrupted, retry and cancel, verdicts kept as history."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
import sqlalchemy as sa

from qsolve_pipeline.storage.state import EvaluationStatus, NotFound, StateDB
from qsolve_pipeline.storage.state._tables import JSONDocument, evaluation_records


def without_spans(output: dict) -> dict:
    """A record's output less the times a retry keeps of its earlier execution (``earlier_spans``)."""
    assert all(len(span) == 2 for span in output.get("earlier_spans", []))
    return {k: v for k, v in output.items() if k != "earlier_spans"}


def results(db: StateDB, n: int = 3) -> list[tuple[str, str, str, str]]:
    from qsolve.calibration.task_result import TaskResult

    out = []
    for i in range(n):
        r = TaskResult.model_validate(
            {
                "task": "CheckT1",
                "chip": "fake:fez",
                "qid": f"Q{i:02d}",
                "day": "2026-12-01",
                "status": "completed",
                "message": "ok",
                "figures": [],
                "settings": {"shots": 100, "interval": None},
                "outputs": {},
            }
        )
        db.record_task_result(r)
        out.append((r.id, r.task, r.chip, r.qid))
    return out


def run_of(db: StateDB, n: int = 3):
    rs = results(db, n)
    return db.create_evaluation_run(
        trigger="bulk", selection={"task": "CheckT1", "chip": "fake:fez"}, model="classical-judge",
        settings={"with_examples": False}, results=rs + rs[:1], skipped=[{"qid": "Q09", "why": "no figure"}],
    )  # fmt: skip


def test_a_run_holds_one_pending_record_per_task_result(db: StateDB) -> None:
    run = run_of(db)
    records = db.evaluation_records(run.id)
    assert [r.qid for r in records] == ["Q00", "Q01", "Q02"]  # the duplicate taken once
    assert {r.status for r in records} == {EvaluationStatus.PENDING}
    assert run.skipped == [{"qid": "Q09", "why": "no figure"}] and run.model == "classical-judge"


def test_each_record_is_claimed_once_and_the_run_ends_by_its_records(db: StateDB) -> None:
    run = run_of(db, 2)
    assert db.start_evaluation_run(run.id, "me") and not db.start_evaluation_run(run.id, "other")
    a, b = db.evaluation_records(run.id)
    assert db.claim_evaluation_record(a.id) and not db.claim_evaluation_record(a.id)
    assert db.finish_evaluation_record(a.id, "completed", output={"ok": True}, model_seconds=1.5)
    assert db.finish_evaluation_run(run.id, "me").status is EvaluationStatus.RUNNING  # b is pending
    assert db.claim_evaluation_record(b.id)
    assert db.finish_evaluation_record(b.id, "failed", error="the model did not answer")
    assert db.finish_evaluation_run(run.id, "me").status is EvaluationStatus.FAILED


def test_a_stale_heartbeat_is_read_as_interrupted_and_retry_runs_only_the_unfinished(db: StateDB) -> None:
    run = run_of(db, 2)
    db.start_evaluation_run(run.id, "dead")
    a, b = db.evaluation_records(run.id)
    db.claim_evaluation_record(a.id)
    db.finish_evaluation_record(a.id, "completed", output={"ok": True})
    db.claim_evaluation_record(b.id)  # then the owner died
    time.sleep(0.05)
    assert db.get_evaluation_run(run.id, stale_after=timedelta(hours=1)).status is EvaluationStatus.RUNNING
    got = db.get_evaluation_run(run.id, stale_after=timedelta(0))
    assert got.status is EvaluationStatus.INTERRUPTED
    statuses = {r.id: r.status for r in db.evaluation_records(run.id)}
    assert statuses == {a.id: EvaluationStatus.COMPLETED, b.id: EvaluationStatus.INTERRUPTED}
    assert not db.evaluation_heartbeat(run.id, "dead")  # the owner, back, learns it lost the run
    assert not db.finish_evaluation_record(b.id, "completed")  # and its late answer is not taken

    retried, reset = db.retry_evaluation_run(run.id)
    assert (retried.status, reset) == (EvaluationStatus.PENDING, 1)
    statuses = {r.id: r.status for r in db.evaluation_records(run.id)}
    assert statuses == {a.id: EvaluationStatus.COMPLETED, b.id: EvaluationStatus.PENDING}


def test_cancel_marks_the_unfinished_and_the_executor_sees_it(db: StateDB) -> None:
    run = run_of(db, 2)
    db.start_evaluation_run(run.id, "me")
    a, b = db.evaluation_records(run.id)
    db.claim_evaluation_record(a.id)
    cancelled = db.cancel_evaluation_run(run.id)
    assert cancelled.status is EvaluationStatus.CANCELLED
    assert {r.status for r in db.evaluation_records(run.id)} == {EvaluationStatus.CANCELLED}
    assert not db.evaluation_heartbeat(run.id, "me") and not db.claim_evaluation_record(b.id)
    assert db.retry_evaluation_run(run.id)[1] == 2


def test_retry_keeps_a_failed_records_answers_so_only_its_failed_questions_are_asked(db: StateDB) -> None:
    run = run_of(db, 2)
    db.start_evaluation_run(run.id, "me")
    a, b = db.evaluation_records(run.id)
    kept = {"answers": {"fit_reliability": {"state": "failed"}}, "failed_keys": ["fit_reliability"]}
    for record, status in ((a, "failed"), (b, "completed")):
        db.claim_evaluation_record(record.id)
        db.finish_evaluation_record(record.id, status, input={"task": "CheckT1"}, output=kept, error=None)
    db.finish_evaluation_run(run.id, "me")
    _, reset = db.retry_evaluation_run(run.id)
    again, done = db.evaluation_records(run.id)
    assert (
        reset == 1 and again.status is EvaluationStatus.PENDING and done.status is EvaluationStatus.COMPLETED
    )
    assert without_spans(again.output) == kept and again.input == {"task": "CheckT1"} and again.error is None


def test_a_record_cancelled_in_flight_stays_cancelled_and_keeps_the_answers_that_arrived(db: StateDB) -> None:
    """Independent test of issue 25: its late end was dropped whole, so retry asked what had arrived."""
    run = run_of(db, 1)
    db.start_evaluation_run(run.id, "me")
    (record,) = db.evaluation_records(run.id)
    db.claim_evaluation_record(record.id)
    db.cancel_evaluation_run(run.id)
    arrived = {"answers": {"fit_reliability": {"state": "arrived", "answer": "Assessment: Reliable"}}}
    assert not db.finish_evaluation_record(record.id, "completed", input={"task": "CheckT1"}, output=arrived)
    (kept,) = db.evaluation_records(run.id)
    assert kept.status is EvaluationStatus.CANCELLED and kept.output == arrived
    assert kept.input == {"task": "CheckT1"}
    _, reset = db.retry_evaluation_run(run.id)
    (again,) = db.evaluation_records(run.id)
    assert reset == 1 and again.status is EvaluationStatus.PENDING and without_spans(again.output) == arrived


def test_verdicts_are_an_immutable_history_and_each_reviewer_has_a_current_one(db: StateDB) -> None:
    record = db.evaluation_records(run_of(db, 1).id)[0]
    db.add_verdict(record.id, "ana", "agree")
    db.add_verdict(record.id, "bo", "disagree", area="status", comment="it is SHORT_T1")
    db.add_verdict(record.id, "ana", "disagree", area="fit")
    assert [(v.reviewer, v.verdict) for v in db.verdict_history(record.id)] == [
        ("ana", "agree"), ("bo", "disagree"), ("ana", "disagree"),
    ]  # fmt: skip
    current = {k: v.verdict for k, v in db.current_verdicts(record.id).items()}
    assert current == {"ana": "disagree", "bo": "disagree"}
    with pytest.raises(NotFound):
        db.add_verdict("nope", "ana", "agree")


def test_a_figure_is_served_only_to_a_record_that_references_it(db: StateDB) -> None:
    run = run_of(db, 2)
    a, b = db.evaluation_records(run.id)
    db.start_evaluation_run(run.id, "me")
    db.claim_evaluation_record(a.id)
    db.finish_evaluation_record(a.id, "completed", input={"figures": [{"sha256": "f" * 64}]})
    db.keep_asset("f" * 64, "b" * 64, 10, "image/png")
    db.keep_asset("f" * 64, "b" * 64, 10, "image/png")  # once per hash
    assert db.asset_for(a.id, "f" * 64) == ("b" * 64, "image/png")
    assert db.asset_for(b.id, "f" * 64) is None


def _at_once(*calls) -> list:
    """Each call in a thread of its own, released together; what each returned (or raised)."""
    barrier = threading.Barrier(len(calls))
    out: list = [None] * len(calls)

    def go(i: int, call) -> None:
        barrier.wait(timeout=30)
        try:
            out[i] = call()
        except Exception as e:  # noqa: BLE001 - the outcome is what the test looks at
            out[i] = e

    threads = [threading.Thread(target=go, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return out


def test_cancel_racing_completion_never_both_win(db: StateDB, database_url: str, tmp_path) -> None:
    """Issue 24: 25 times, a run's only record completing while the run is cancelled, each from its own
    connection. One wins: completed with its record, or cancelled with its record cancelled."""
    from qsolve_pipeline.storage.state import connect
    from tests.storage.state.conftest import default_settings

    ends = []
    with (
        connect(database_url, home=tmp_path, settings=default_settings()) as one,
        connect(database_url, home=tmp_path, settings=default_settings()) as two,
    ):
        for _ in range(25):
            run = run_of(db, 1)
            assert db.start_evaluation_run(run.id, "me")
            (record,) = db.evaluation_records(run.id)
            assert db.claim_evaluation_record(record.id)
            _at_once(
                lambda r=record.id: one.finish_evaluation_record(r, "completed", output={"ok": True}),
                lambda r=run.id: two.cancel_evaluation_run(r),
            )
            db.finish_evaluation_run(run.id, "me")  # as the executor does, after its last record
            end = db.get_evaluation_run(run.id).status
            (after,) = db.evaluation_records(run.id)
            assert (end, after.status) in (
                (EvaluationStatus.COMPLETED, EvaluationStatus.COMPLETED),
                (EvaluationStatus.CANCELLED, EvaluationStatus.CANCELLED),
            ), (end, after.status)
            ends.append(end)
    assert len(ends) == 25


def test_a_run_whose_flow_never_started_is_interrupted_after_a_grace_and_retried(db: StateDB) -> None:
    run = run_of(db, 2)  # stored; its flow never starts (Prefect's server did not come up, say)
    assert db.get_evaluation_run(run.id, stale_after=timedelta(hours=1)).status is EvaluationStatus.PENDING
    assert db.retry_evaluation_run(run.id)[1] == 0  # within the grace: it may yet start
    time.sleep(0.05)
    assert db.interrupt_stale(timedelta(hours=1), start_grace=timedelta(0)) == [run.id]
    assert {r.status for r in db.evaluation_records(run.id)} == {EvaluationStatus.INTERRUPTED}
    retried, reset = db.retry_evaluation_run(run.id, start_grace=timedelta(0))
    assert (retried.status, reset) == (EvaluationStatus.PENDING, 2)
    assert db.start_evaluation_run(run.id, "me")


def test_a_flow_that_comes_late_takes_its_run_interrupted_for_not_starting(db: StateDB) -> None:
    run = run_of(db, 2)
    time.sleep(0.05)
    db.interrupt_stale(None, start_grace=timedelta(0))
    assert db.start_evaluation_run(run.id, "late")
    assert {r.status for r in db.evaluation_records(run.id)} == {EvaluationStatus.PENDING}


def test_an_answer_with_a_nul_and_a_lone_surrogate_is_kept_byte_for_byte(db: StateDB) -> None:
    """A model's answer is its owner's word, any characters it holds (independent test of issue 25).
    PostgreSQL's JSONB holds neither U+0000 nor a lone surrogate: such a document is stored escaped there
    and read back as it was (storage.state._tables.JSONDocument)."""
    run = run_of(db, 1)
    db.start_evaluation_run(run.id, "me")
    (record,) = db.evaluation_records(run.id)
    db.claim_evaluation_record(record.id)
    text = "Status: SUCCESS\x00\nNotes: \ud800 odd bytes\r\n\t"
    output = {"answers": {"calibration_diagnosis": {"state": "arrived", "answer": text}}}
    assert db.finish_evaluation_record(record.id, "completed", output=output)
    (kept,) = db.evaluation_records(run.id)
    assert kept.status is EvaluationStatus.COMPLETED
    assert kept.output["answers"]["calibration_diagnosis"]["answer"] == text


ODD = [
    {"answer": "a NUL \x00 inside"},
    {"\x00 a key": "and a lone low surrogate \udc80"},
    {"two surrogates, not a pair": "\ud83d\ude00", "the pair": "\U0001f600"},
    {"qsolve:json-utf8-base64": "a document that looks escaped, and is not"},
    {"qsolve:json-utf8-base64": "e30=", "beside": 1},
    ["a list", "\x00", {"deep": ["\ud800", None, 1.5, True]}],
    "a bare string \x00",
    None,
]


def exactly(doc) -> str:
    """A document's text, code point for code point, its keys in order (JSONB orders them its own way)."""
    return json.dumps(doc, ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize("doc", ODD, ids=range(len(ODD)))
def test_every_document_reads_back_as_it_was_written(db: StateDB, doc) -> None:
    """Any record output, odd characters and the escape's own key included, read back as it was written."""
    run = run_of(db, 1)
    db.start_evaluation_run(run.id, "me")
    (record,) = db.evaluation_records(run.id)
    db.claim_evaluation_record(record.id)
    output = doc if isinstance(doc, dict) else {"kept": doc}
    assert db.finish_evaluation_record(record.id, "completed", output=output)
    (kept,) = db.evaluation_records(run.id)
    assert exactly(kept.output) == exactly(output)


def test_a_document_that_needs_no_escape_is_stored_as_it_is(db: StateDB) -> None:
    """Only a document holding U+0000 or a surrogate is escaped: SQL reads into every other one."""
    run = run_of(db, 2)
    db.start_evaluation_run(run.id, "me")
    plain, odd = db.evaluation_records(run.id)
    for record, answer in ((plain, "Status: SUCCESS é"), (odd, "Status: SUCCESS \x00")):
        db.claim_evaluation_record(record.id)
        db.finish_evaluation_record(record.id, "completed", output={"answer": answer})
    column = evaluation_records.c.output
    with db.engine.connect() as connection:
        query = sa.select(evaluation_records.c.id, column["answer"].as_string(), column[JSONDocument.ESCAPED])
        stored = {row[0]: row[1:] for row in connection.execute(query)}
    assert stored[plain.id] == ("Status: SUCCESS é", None)
    assert stored[odd.id][0] is None and stored[odd.id][1]  # under the escape's one key


def test_an_error_quoting_a_nul_and_a_lone_surrogate_is_kept_escaped(db: StateDB) -> None:
    """An endpoint's error body reaches the record's error: PostgreSQL's text refused its U+0000 (the
    record's end raised, the run was left running), and no UTF-8 holds a lone surrogate. Each is kept
    as its escape; the answers themselves are JSON documents, kept exactly."""
    run = run_of(db, 1)
    db.start_evaluation_run(run.id, "me")
    (record,) = db.evaluation_records(run.id)
    db.claim_evaluation_record(record.id)
    error = 'calibration_diagnosis: APIStatusError: Error code: 500 - {"detail": "\x00 and \ud800"}'
    assert db.finish_evaluation_record(record.id, "failed", error=error, output={"error": error})
    (kept,) = db.evaluation_records(run.id)
    assert kept.status is EvaluationStatus.FAILED
    assert (
        kept.error
        == 'calibration_diagnosis: APIStatusError: Error code: 500 - {"detail": "\\x00 and \\ud800"}'
    )
    assert kept.output == {"error": error}
