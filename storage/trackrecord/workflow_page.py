"""The workflow page (benchmarks-and-gates.md, "What the workflow page shows"): the track record, the
noise-model estimate, the results on quantum hardware and the earlier results, with the headline
accuracy (the median over the track-record rows) and each row's verdict.

The page reads one workflow's rows into memory and builds the same views as ``trackrecord.duckdb`` over
them (views.py), so the page and an analyst's query agree; like ``qsolve query``, it brings
``trackrecord.duckdb`` up to date on the way and warns of files left out (``views.reading``), and reads
around a file damaged past its footer (``damaged``).
``version`` shows that version's ``sim-`` and ``fake:`` results as if it were current; the hardware
sections are the workflow's, whatever the version (every version's hardware results stay on the page
until replaced).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb
from pydantic import BaseModel, ConfigDict
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from .damaged import found_damaged, leave_out_damaged, read_failure
from .errors import UnknownWorkflow
from .layout import Layout
from .live import state_of
from .row import COLUMNS, TrackRecordRow
from .views import Sources, attach, create_views, parquet_source, reading, session, sql_text

ROW_COLUMNS = ", ".join(name for name, _, _ in COLUMNS)


class EarlierResult(TrackRecordRow):
    """An older row, with the section whose case and target it is an earlier result of."""

    section: str


class Nondeterministic(BaseModel):
    """A case whose runs with the same input (its version), params, target and seed gave different
    answers: the methods' own objectives, what they sent or the verdict (the ``nondeterministic``
    view): the rounds, oldest first, each named by its time to the second and its run id."""

    model_config = ConfigDict(frozen=True)

    case_name: str
    target: str
    seed: int
    params: str
    result_hashes: int
    runs: int
    run_ids: list[str]
    rounds: list[datetime]
    hashes: list[str]
    passed: list[bool]
    answers: int  # how many different answers the rounds gave (objectives, circuits and shots, verdict)
    answered: list[list[dict]]  # each round's methods' objectives
    circuits: list[int] = []  # each round's circuits and shots sent (a view built before these: none)
    shots: list[int] = []

    def sentence(self) -> str:
        sent = list(zip(self.circuits, self.shots, strict=True))
        differ = len(sent) == len(self.rounds) and len(set(sent)) > 1  # shown only where they differ
        shown = ", ".join(
            f"{t.strftime('%Y-%m-%d %H:%M:%S')} {run_id} {'pass' if ok else 'FAIL'} {_objectives(methods)}"
            + (f" ({sent[i][0]} circuits, {sent[i][1]} shots)" if differ else "")
            for i, (t, run_id, ok, methods) in enumerate(
                zip(self.rounds, self.run_ids, self.passed, self.answered, strict=True)
            )
        )
        return (
            f"{self.case_name} on {self.target} (seed {self.seed}, params {self.params}) is not "
            f"reproducible: {self.answers} different answers over {self.runs} rounds ({shown}); "
            "a method's randomness must come from ctx.rng"
        )


def _objectives(methods: list[dict]) -> str:
    """A round's methods' objectives, as ``qaoa -3.0 reference -4.0``; a method with none, by why
    (``qaoa failed: ZeroDivisionError: division by zero (workflow.py:29)``), never ``none``."""
    return " ".join(f"{m['name']} {_objective(m)}" for m in methods)


def _objective(m: dict) -> str:
    if m.get("available", True):
        return str(m["objective"])
    why = m.get("reason") or "no objective"
    return why if len(why) <= 120 else why[:117] + "..."


class WorkflowPage(BaseModel):
    """One workflow's page, for its current version or the one asked for."""

    model_config = ConfigDict(frozen=True)

    workflow: str
    version: str  # the version the page shows
    current_version: str  # the newest published version (views.py says how it is known)
    versions: list[str]  # every recorded version, oldest first
    headline_accuracy: float | None  # the median accuracy over the track-record rows that have one
    without_accuracy: int = 0  # track-record rows with none (a zero baseline: no relative accuracy)
    metric_note: str | None = None  # the manifest's metric.note: what qualifies that accuracy
    #: run id -> the bound a failing row's numbers broke ("gap 0.0189 > max_gap 0"), where its case's
    #: expect is known (its message is null then, as the seed has it)
    bounds: dict[str, str] = {}
    #: run id -> what a hardware row's receipts say ("3 receipts verify; simulated"), where checked
    receipts: dict[str, str] = {}
    passed: int  # track-record rows (sim- targets) that passed
    total: int  # track-record rows
    track_record: list[TrackRecordRow]
    noise_model_estimate: list[TrackRecordRow]
    on_hardware: list[TrackRecordRow]  # rows whose counts a device measured
    on_simulators: list[TrackRecordRow] = []  # device targets whose counts were simulated (issue 23)
    #: device rows whose receipts do not all verify for them (or that name none): no class is shown
    #: (published.by_receipts sections device rows by their receipts; page() by the row's word)
    unverified_devices: list[TrackRecordRow] = []
    earlier_results: list[EarlierResult]
    nondeterministic: list[Nondeterministic] = []  # the version's cases whose rounds differ (issue 37)
    #: the track-record log's checkpoint its rows are in: its first ``log_entries`` entries, the last of
    #: hash ``log_head`` (``qsolve trackrecord checkpoint`` signs it; ``verify --checkpoint`` checks it)
    log_entries: int = 0
    log_head: str | None = None

    def none_said(self) -> str:
        """How many track-record rows have no accuracy, and why: ``2 rows have none: the baseline is 0
        in 1, nothing compared in 1``."""
        from qsolve.judging.deciding import NOT_A_SHARE, NOT_COMPARED, ZERO_BASELINE

        rows = [r for r in self.track_record if r.accuracy is None]
        zero = sum(1 for r in rows if any(w.startswith(ZERO_BASELINE) for w in r.warnings))
        nothing = sum(1 for r in rows if r.verdict == NOT_COMPARED)
        # the quantum method's objective that is no share (the reference's leaves the accuracy defined)
        share = sum(1 for r in rows if any(w.startswith("quantum") and NOT_A_SHARE in w for w in r.warnings))
        why = [f"the baseline is 0 in {zero}"] * bool(zero)
        why += [f"nothing compared in {nothing}"] * bool(nothing)
        why += [f"an error rate that is no share in {share}"] * bool(share)
        n = len(rows)
        return f"{n} {'row has' if n == 1 else 'rows have'} none" + (f": {', '.join(why)}" if why else "")


def page(
    name: str,
    version: str | None = None,
    home: Path | str | None = None,
    *,
    published: str | None = None,
    metric_note: str | None = None,
) -> WorkflowPage:
    """The page of workflow ``name``; raises :class:`UnknownWorkflow` when it (or ``version``) is neither
    recorded nor ``published``. ``published``: the latest published version, as the state database
    says (issue 11): it is the current one, shown with its own track record even while that is empty."""
    layout = Layout(home)
    inventory = leave_out_damaged(reading(layout))
    with state_of(layout) as state:  # read after the files: the rows are in this prefix of the log
        log_entries, log_head = state.trackrecord_log_head() if state is not None else (0, None)
    con = session(duckdb.connect())
    try:
        attach(con, layout)
        try:
            _read_filed(con, inventory, name)
        except duckdb.Error as e:  # a file damaged past its footer (``damaged``): read without it, once
            if not (read_failure(e) and found_damaged(inventory)):
                raise
            _read_filed(con, leave_out_damaged(inventory), name)
        scoped = Sources(filed="page_filed", candidates="page_filed")
        create_views(con, scoped, temp=True)
        versions = con.sql("SELECT version, is_current FROM versions ORDER BY first_recorded_at, version")
        listed = versions.fetchall()
        if not listed and published is None:
            raise UnknownWorkflow(name)
        known = [v for v, _ in listed]
        newest = next((v for v, is_current in listed if is_current), None)
        current = published or newest
        if published is not None and published not in known:
            known.append(published)
        if version is not None and version not in known:
            raise UnknownWorkflow(name, version, known)
        shown = version or current
        if shown != newest:
            create_views(con, scoped, temp=True, version=shown)
        card = con.execute(
            "SELECT passed, total, headline_accuracy, without_accuracy FROM workflow_cards"
        ).fetchall()
        passed, total, headline, without = card[0] if card else (0, 0, None, 0)
        flagged = con.sql(  # through Arrow: Python's own times would need pytz (DuckDB 1.5)
            f"SELECT * EXCLUDE (workflow, version) FROM nondeterministic WHERE version = {sql_text(shown)}"
            " ORDER BY case_name, target, seed, params"
        ).to_arrow_table()
        nondeterministic = [Nondeterministic(**r) for r in flagged.to_pylist()]
        return WorkflowPage(
            workflow=name,
            version=shown,
            current_version=current,
            versions=known,
            headline_accuracy=headline,
            without_accuracy=without or 0,
            nondeterministic=nondeterministic,
            metric_note=metric_note,
            passed=passed,
            total=total,
            log_entries=log_entries,
            log_head=log_head if log_entries else None,
            track_record=_rows(con, "track_record", "case_name, target"),
            noise_model_estimate=_rows(con, "noise_model_estimate", "case_name, target"),
            on_hardware=_rows(con, "on_hardware", "case_name, target"),
            on_simulators=_rows(con, "on_simulators", "case_name, target"),
            earlier_results=[
                EarlierResult(**r)
                for r in con.sql(
                    f"SELECT {ROW_COLUMNS}, section FROM earlier_results"
                    " ORDER BY section DESC, case_name, target, recorded_at DESC, run_id"
                )
                .to_arrow_table()
                .to_pylist()
            ],
        )
    finally:
        con.close()


def checkpoint_label(p: WorkflowPage) -> str:
    """Which checkpoint of the log the page's rows are in: its size and the start of its head's hash."""
    return f"{p.log_entries} (head {str(p.log_head)[:16]})"


def _read_filed(con: duckdb.DuckDBPyConnection, inventory, name: str) -> None:
    """The workflow's rows as filed, from the inventory's files, into ``page_filed``."""
    source = parquet_source(inventory.files())
    sql = f"CREATE OR REPLACE TEMP TABLE page_filed AS SELECT * FROM {source} WHERE workflow = ?"
    con.execute(sql, [name])


def _rows(con: duckdb.DuckDBPyConnection, view: str, order: str) -> list[TrackRecordRow]:
    table = con.sql(f"SELECT {ROW_COLUMNS} FROM {view} ORDER BY {order}").to_arrow_table()
    return [TrackRecordRow(**r) for r in table.to_pylist()]


# --- the terminal ---------------------------------------------------------------------------------------


def render_page(p: WorkflowPage, console: Console | None = None) -> None:
    """Print the page: a heading with the headline accuracy, then the four sections."""
    console = console or Console()
    _BOUNDS.clear()
    _BOUNDS.update(p.bounds)
    _RECEIPTS.clear()
    _RECEIPTS.update(p.receipts)
    shown = p.version + (
        " (current)" if p.version == p.current_version else f" (current: {p.current_version})"
    )
    head = Text.assemble((p.workflow, "bold"), " ", shown)
    none = f"; {p.none_said()}" if p.without_accuracy else ""
    if p.headline_accuracy is None and p.without_accuracy:  # rows that ran and have none: not "yet"
        headline = f"Headline accuracy: none ({p.none_said()})"
    elif p.headline_accuracy is None:
        headline = "Headline accuracy: none yet (no track-record row with an accuracy)"
    else:
        n = sum(1 for r in p.track_record if r.accuracy is not None)
        headline = f"Headline accuracy {percent(p.headline_accuracy)} (median of {n} track-record rows{none})"
    matches = sum(1 for r in p.track_record if r.verdict and r.verdict.startswith("Matches"))
    summary = (
        f"{headline}; {p.passed} of {p.total} cases passed on sim- targets; "
        f"{matches} of {p.total} match the best classical answer"
    )
    note = [Text(f"The accuracy: {p.metric_note}", style="dim")] if p.metric_note else []
    if p.log_head is not None:
        note.append(Text(f"Rows as of the track-record log's checkpoint {checkpoint_label(p)}", style="dim"))
    warned = [Text(f"warning: {w}", style="yellow") for w in warnings(p)]
    console.print(Group(head, Text(summary), *note, *warned))
    _section(console, "Track record", p.track_record, _TRACK)
    _section(console, "Noise-model estimate (not in the headline)", p.noise_model_estimate, _NOISE)
    _section(
        console,
        "On quantum hardware (not in the headline)",
        p.on_hardware,
        _hardware_columns(p.current_version),
    )
    if p.on_simulators:
        _section(
            console,
            "On simulated devices (a provider's simulator: no device measured the counts)",
            p.on_simulators,
            _hardware_columns(p.current_version),
        )
    if p.unverified_devices:
        _section(
            console,
            "On devices, not verified (their receipts do not show how the counts were made)",
            p.unverified_devices,
            _hardware_columns(p.current_version),
        )
    _section(console, "Earlier results", p.earlier_results, _EARLIER)


def warnings(p: WorkflowPage) -> list[str]:
    """What the page warns of, never changing a verdict: each warning of its current rows (sim-, fake:
    and device targets), once per case and target, and each case whose rounds gave different answers."""
    out = []
    for r in [*p.track_record, *p.noise_model_estimate, *p.on_hardware, *p.on_simulators]:
        out += [f"{r.case_name} on {r.target}: {w}" for w in r.warnings]
    return out + [n.sentence() for n in p.nondeterministic]


def percent(x: float | None, pm: float | None = None) -> str:
    if x is None:
        return ""
    shown = pm is not None and pm >= 0  # a negative one (filed before stderr < 0 was refused): none
    return f"{100 * x:.1f}%" + (f" ± {100 * pm:.1f}%" if shown else "")


def _num(x: float | int | None, fmt: str = ".4g") -> str:
    return "" if x is None else format(x, fmt)


_BOUNDS: dict[str, str] = {}  # run id -> the bound its numbers broke, for the page being rendered
_RECEIPTS: dict[str, str] = {}  # run id -> what its receipts say, for the page being rendered


def _result(r: TrackRecordRow) -> Text:
    if r.passed:
        return Text("pass", style="green")
    label = "FAIL" if r.status == "failed" else r.status.upper()
    why = r.message or _BOUNDS.get(r.run_id) or r.reason
    return Text(label + (f": {why}" if why else ""), style="red")


_COMMON = [
    ("case", lambda r: r.case_name),
    ("target", lambda r: r.target),
    ("result", _result),
    ("accuracy", lambda r: percent(r.accuracy, r.accuracy_pm)),
    ("verdict", lambda r: r.verdict or ""),
]
_TRACK = _COMMON + [
    ("gap", lambda r: _num(r.gap)),
    ("credits", lambda r: _num(r.credits, ".2f")),
    ("circuits", lambda r: str(r.circuits)),
    ("shots", lambda r: str(r.shots)),
    ("2q gates", lambda r: _num(r.max_two_qubit_gates, "d")),
    ("seconds", lambda r: _num(r.run_seconds, ".1f")),
]
_NOISE = _COMMON + [
    ("fidelity", lambda r: _num(r.fidelity, ".3f")),
    ("scored", lambda r: percent(r.coverage)),
    ("kept", lambda r: percent(r.postselection)),
    ("2q gates", lambda r: _num(r.max_two_qubit_gates, "d")),
]


def _hardware_columns(current: str) -> list:
    return [
        ("case", lambda r: r.case_name),
        ("target", lambda r: r.target),
        ("version", lambda r: r.version + ("" if r.version == current else " (earlier)")),
        ("result", _result),
        ("accuracy", lambda r: percent(r.accuracy, r.accuracy_pm)),
        ("verdict", lambda r: r.verdict or ""),
        ("fidelity", lambda r: _num(r.fidelity, ".3f")),
        ("kept", lambda r: percent(r.postselection)),
        ("credits", lambda r: _num(r.credits, ".2f")),
        ("recorded", lambda r: r.recorded_at.strftime("%Y-%m-%d %H:%M")),
        ("receipts", lambda r: _RECEIPTS.get(r.run_id, "")),
    ]


_EARLIER = [
    ("of", lambda r: r.section.replace("_", " ")),
    ("case", lambda r: r.case_name),
    ("target", lambda r: r.target),
    ("version", lambda r: r.version),
    ("recorded", lambda r: r.recorded_at.strftime("%Y-%m-%d %H:%M")),
    ("result", _result),
    ("accuracy", lambda r: percent(r.accuracy, r.accuracy_pm)),
    ("verdict", lambda r: r.verdict or ""),
]


_NO_WRAP = {"case", "target", "version", "recorded", "accuracy"}


def _section(console: Console, title: str, rows: list, columns: list) -> None:
    console.print()
    if not rows:
        console.print(Text.assemble((title, "bold"), (": none", "dim")))
        return
    table = Table(title=title, title_justify="left", title_style="bold", header_style="bold")
    for name, _ in columns:
        table.add_column(name, no_wrap=name in _NO_WRAP, overflow="fold")
    for r in rows:
        table.add_row(*(fn(r) for _, fn in columns))
    console.print(table)
