"""How ``qsolve test`` shows a validation report and its progress on a terminal (rich)."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from qsolve.judging.deciding import BELOW, MATCHES
from qsolve.sandbox.calls import one_line
from qsolve.validation.pipeline import ValidationReport


def _n(x: float | None, fmt: str = ".4g") -> str:
    return "" if x is None else format(x, fmt)


class Progress:
    """Prints one line as each case starts and ends, on standard error: one line each, never broken at
    the console's width (a log or a pipe has none; a terminal wraps it itself)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.started = time.monotonic()
        self.case_started = self.started

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "case":
            self.case_started = time.monotonic()
            name = _text(event["name"])
            at = f"{event['index'] + 1}/{event['total']}"
            self.console.print(f"[dim]  [{at}] {name} ...[/dim]", soft_wrap=True)
        elif kind == "result":
            took = time.monotonic() - self.case_started
            verdict = _result(event["passed"], event.get("why") or event["message"])
            self.console.print(
                f"  [{event['index'] + 1}/{event['total']}] {_text(event['name'])}: {verdict} ({took:.1f} s)",
                soft_wrap=True,
            )
            for w in event.get("warnings") or []:
                said = f"    [yellow]warning:[/yellow] {_text(w)}"
                self.console.print(said, soft_wrap=True, highlight=False)
        elif kind == "stopped":  # the time limit: the job ends here
            why = _text(event["why"])
            self.console.print(f"  [red]stopped[/red]: {why}", soft_wrap=True, highlight=False)
        elif kind == "rerun":
            self.console.print(
                f"[dim]  running {_text(event['name'])} again (reproducible) ...[/dim]", soft_wrap=True
            )


def _text(text: str) -> str:
    """A name or message the workflow chose, for a Rich line: one line, its markup shown as text."""
    return escape(one_line(text))


def _result(passed: bool, message: str | None) -> str:
    """pass, or FAIL and why; a case that raised already says FAIL (``FAIL ValueError: ...``)."""
    if passed:
        return "[green]pass[/green]"
    return f"[red]FAIL[/red] {_text((message or '').removeprefix('FAIL '))}"  # the workflow's words: text


def case_table(cases) -> Table:
    """The cases as ``qsolve test`` and ``qsolve run`` show them: one row each."""
    table = Table(title="Cases", title_justify="left")
    for col in (
        "case",
        "target",
        "result",
        "quantum",
        "baseline",
        "gap",
        "accuracy",
        "verdict",
        "fidelity",
        "2q gates",
        "circuits",
        "shots",
    ):
        table.add_column(col, overflow="fold")  # a narrow terminal wraps a name, never cuts it
    for c in cases:
        result = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]"  # why: below (print_cases)
        pm = c.accuracy_pm if c.accuracy_pm is not None and c.accuracy_pm >= 0 else None  # never negative
        acc = "" if c.accuracy is None else _n(c.accuracy) + (f" ± {_n(pm, '.2g')}" if pm is not None else "")
        verdict = {MATCHES: "matches", BELOW: "below"}.get(c.verdict or "", "")
        table.add_row(
            _text(c.name),
            c.target,
            result,
            _n(c.quantum),
            _n(c.baseline),
            _n(c.gap),
            acc,
            verdict,
            _n(c.fidelity, ".3f"),
            _n(c.max_two_qubit_gates, "d"),
            str(c.circuits),
            str(c.shots),
        )
    return table


def print_cases(cases, console: Console) -> None:
    """The case table, then why each case that failed did, one line each below it: a message in a
    column of its own wrapped into 15 characters."""
    console.print(case_table(cases))
    for c in cases:
        if not c.passed:
            console.print(f"  {_text(c.name)}: {_result(False, c.why())}", soft_wrap=True, highlight=False)


def show(report: ValidationReport, console: Console) -> None:
    name = report.workflow or report.folder or "the workflow folder"
    console.print(f"[bold]{name}[/bold] {report.version or ''} on {report.target}".replace("  ", " "))
    if report.checks.errors:
        console.print("[red]Submission checks failed:[/red]")
        for e in report.checks.errors:
            console.print(f"  {e}", markup=False)
    for w in report.checks.warnings:
        console.print(f"[yellow]warning:[/yellow] {_text(w)}", highlight=False)
    if report.cases:
        print_cases(report.cases, console)
        if report.metric_note:
            console.print(f"[dim]accuracy: {report.metric_note}[/dim]", highlight=False)
        console.print("[dim]verdict: matches / is below the best classical answer (the reference)[/dim]")
        for w in report.case_warnings:
            console.print(f"[yellow]warning:[/yellow] {_text(w)}", highlight=False)
    if report.gates:
        table = Table(title="Gates", title_justify="left")
        table.add_column("gate")
        table.add_column("")
        table.add_column("message")
        for g in report.gates:
            table.add_row(g.name, "[green]pass[/green]" if g.passed else "[red]FAIL[/red]", _text(g.message))
        console.print(table)
    if report.sandbox:
        s = report.sandbox
        held = s.protections.summary() if s.protections else "unknown"
        style = "dim" if s.confined else "yellow"
        console.print(
            f"[{style}]sandbox: {held}; {s.timeout_s} s limit; took {s.seconds:.1f} s[/{style}]",
            highlight=False,
            soft_wrap=True,  # one line, as the progress lines: it wrapped as "took 5.6\ns"
        )
        if not s.confined:
            console.print(
                "[yellow]this workflow's code ran without the full boundary: the platform's flows would "
                "refuse it[/yellow]"
            )
        if s.died and s.log_tail:
            console.print("[dim]last lines of the job's log:[/dim]")
            console.print(s.log_tail, markup=False, highlight=False)
    passed = sum(g.passed for g in report.gates)
    if report.passed:
        console.print(f"[green]All {len(report.gates)} gates pass.[/green]")
    elif report.gates:
        console.print(f"[red]{len(report.gates) - passed} of {len(report.gates)} gates fail.[/red]")
