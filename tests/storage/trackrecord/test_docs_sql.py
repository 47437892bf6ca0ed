"""docs/trackrecord.md's SQL answers the analysts' questions (issue 23, item 6): every statement of every
``sql`` block of the page runs against a filed scenario (builders.scenario), over the views of
``trackrecord.duckdb`` as an analyst opens them, and the new questions ("best method per case",
"hardware against simulator") give the answers the scenario was built to have."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from qsolve.judging.deciding import BELOW
from qsolve_pipeline.storage.trackrecord import file_rows
from qsolve_pipeline.storage.trackrecord.row import MethodObjective
from qsolve_pipeline.storage.trackrecord.sql import run_sql

from .builders import row, scenario

DOC = Path(__file__).resolve().parents[3] / "docs" / "trackrecord.md"
BLOCK = re.compile(r"^```sql\n(.*?)^```", re.S | re.M)


def statements() -> list[tuple[str, str]]:
    """(the comment above it, the statement) for every statement of the doc's sql blocks."""
    out = []
    for block in BLOCK.findall(DOC.read_text()):
        for chunk in [c for c in block.split(";\n") if c.strip()]:
            lines = chunk.strip().splitlines()
            said = " ".join(line.removeprefix("-- ") for line in lines if line.startswith("--"))
            sql = "\n".join(line for line in lines if not line.startswith("--")).strip().rstrip(";")
            out.append((said, sql))
    return out


STATEMENTS = statements()


def test_the_doc_has_the_questions():
    said = " ".join(s for s, _ in STATEMENTS)
    assert "Best method per case" in said and "Hardware against simulator" in said
    assert len(STATEMENTS) >= 10


@pytest.fixture(scope="module")
def analyst(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("docs") / "home"
    # the scenario, and the case the doc names (max-cut's own) run twice, once this month
    ring = [
        row("r30", version="1.1.0", case="ring-6-with-chord", minute=26, accuracy=0.9),
        row("r31", version="1.1.0", case="ring-6-with-chord", recorded_at=datetime.now(UTC)),
    ]
    # issue 37: a zero baseline (no accuracy, a warning) and a case whose two rounds differ
    honest = [
        row(
            "h1",
            workflow="honest",
            case="zero",
            accuracy=None,
            verdict=BELOW,
            methods=[],
            warnings=["the baseline is 0: no relative accuracy, so this case has none"],
        ),
        # the flaky method's own objective differs between its rounds (what the nondeterministic view
        # compares), not only the platform's numbers
        row(
            "h2",
            workflow="honest",
            case="flaky",
            minute=1,
            passed=False,
            message=None,
            methods=[MethodObjective(name="qaoa", kind="quantum", objective=-6.3)],
            reason="gap 0.3 > max_gap 0",
            expect='{"max_abs_error":null,"max_gap":0.0}',
        ),
        row(
            "h3",
            workflow="honest",
            case="flaky",
            minute=2,
            methods=[MethodObjective(name="qaoa", kind="quantum", objective=-9.0)],
        ),
    ]
    file_rows([*scenario(), *ring, *honest], home)
    run_sql("SELECT 1", home)  # any reading command, as the doc says: it rebuilds trackrecord.duckdb
    con = duckdb.connect(str(home / "trackrecord.duckdb"), read_only=True)
    yield con
    con.close()


def answer(con: duckdb.DuckDBPyConnection, question: str) -> list[tuple]:
    (sql,) = [sql for said, sql in STATEMENTS if said.startswith(question)]
    return con.sql(sql).fetchall()


@pytest.mark.parametrize(("said", "sql"), STATEMENTS, ids=[s[:40] for s, _ in STATEMENTS])
def test_every_statement_of_the_doc_runs(analyst, said, sql, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # COPY ... TO 'current.parquet' writes here
    result = analyst.sql(sql) if not sql.startswith("COPY") else analyst.execute(sql)
    if sql.startswith("COPY"):
        assert (tmp_path / "current.parquet").exists()
    else:
        assert result.fetchall(), said


def test_best_method_per_case(analyst):
    best = answer(analyst, "Best method per case")
    by_case = {}
    for workflow, version, case, target, method, kind, objective in best:
        by_case.setdefault((workflow, version, case, target), set()).add((method, kind, objective))
    # r09 (max-cut 1.1.0 k5, accuracy 0.7): the reference's -10 beats qaoa's -9 and greedy's -8
    assert by_case[("max-cut", "1.1.0", "k5", "sim-cpu")] == {("reference", "classical", -10.0)}
    # r07 (ring-6, accuracy 1.0): qaoa and the reference tie at -9; both listed
    assert by_case[("max-cut", "1.1.0", "ring-6", "sim-cpu")] == {
        ("qaoa", "quantum", -9.0),
        ("reference", "classical", -9.0),
    }
    assert not any(m == "greedy" for ms in by_case.values() for m, _, _ in ms)  # never the best
    counted = answer(analyst, "How often each method is the best")
    # the reference is best (or tied) in every current row; qaoa ties it where the accuracy is 1.0
    assert counted == [
        ("honest", "qaoa", 1),  # flaky's latest round: its only method
        ("max-cut", "reference", 11),
        ("max-cut", "qaoa", 7),
        ("qubo", "reference", 5),
        ("qubo", "qaoa", 2),
    ]


def test_hardware_against_simulator(analyst):
    rows = answer(analyst, "Hardware against simulator")
    # qubo 2 case a: measured on provider:lab (r21), simulated on sim-cpu (r20) and on the reference
    # provider's simulator (r24), which on_hardware no longer holds
    assert [(r[0], r[2], r[3], r[5]) for r in rows] == [
        ("qubo", "a", "provider:lab", "provider:reference"),
        ("qubo", "a", "provider:lab", "sim-cpu"),
    ]
    kinds = answer(analyst, "Which device targets measured")
    assert ("provider:reference", False, 1) in kinds and ("ibm:ibm_fez", True, 1) in kinds


def test_every_failure_has_its_reason(analyst):
    """Issue 37: "failure messages, most frequent first" put NULL on top; a reason is never null."""
    reasons = answer(analyst, "Failure reasons")
    assert reasons and all(reason is not None for reason, _ in reasons)
    assert ("gap 0.3 > max_gap 0", 1) in reasons
    failed = answer(analyst, "Which runs failed and why")
    mine = [r[:7] for r in failed if r[0] == "honest"]
    assert mine == [("honest", "1.0.0", "flaky", "sim-cpu", "failed", "gap 0.3 > max_gap 0", "0.0")]


def test_a_crash_is_not_a_match(analyst):
    """qubo's current sim- rows include a crash: bool_and over its verdicts is false, not true."""
    assert dict(answer(analyst, "Does every current sim- case")) == {
        "honest": False,
        "max-cut": False,
        "qubo": False,
    }


def test_warnings_and_rounds_that_differ(analyst):
    warned = answer(analyst, "Warnings of the current rows")
    assert [w[:3] for w in warned] == [("honest", "1.0.0", "zero")]
    flagged = {(r[0], r[2]): r for r in answer(analyst, "Cases whose rounds gave different results")}
    assert flagged[("honest", "flaky")][5:7] == (2, 2) and flagged[("honest", "flaky")][-1] == [False, True]
