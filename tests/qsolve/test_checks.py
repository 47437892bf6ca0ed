"""The submission checks: every case of `cases` and `hardware_cases`, one bad case rejects all."""

from __future__ import annotations

import os

import pytest

from qsolve.validation.checks import HARDWARE_BYTES_MAX, TOO_LARGE, check_submission
from tests.conftest import REPO, WorkflowDir


def set_case(wf: WorkflowDir, section: str, index: int, **keys) -> None:
    case = wf.cases[section][index]
    for k, v in keys.items():
        if v is None:
            case.pop(k, None)
        else:
            case[k] = v
    wf.save()


def only_error(wf: WorkflowDir) -> str:
    report = check_submission(wf.root)
    assert not report.ok
    assert len(report.errors) == 1, report.errors
    return report.errors[0]


def test_valid_workflow_passes_with_inputs_resolved(wf: WorkflowDir) -> None:
    report = check_submission(wf.root)
    assert report.ok, report.errors
    assert [c.input for c in report.cases] == [{"x": 1}, {"x": 2}]
    assert report.hardware_cases[0].inline()["input"] == {"x": 2}
    assert "input_file" not in report.hardware_cases[0].inline()


def test_max_cut_passes() -> None:
    report = check_submission(REPO / "workflows" / "max-cut")
    assert report.ok, report.errors
    assert report.warnings == []


def test_neither_input_nor_input_file(wf: WorkflowDir) -> None:
    set_case(wf, "cases", 1, input_file=None)
    assert only_error(wf) == "benchmarks/cases.yaml: cases[1] (two): has neither `input` nor `input_file`"


def test_input_wins_over_input_file(wf: WorkflowDir) -> None:
    set_case(wf, "cases", 0, input_file="examples/does-not-exist.json")
    report = check_submission(wf.root)
    assert report.ok, report.errors
    assert report.cases[0].input == {"x": 1}


@pytest.mark.parametrize(
    ("input_file", "reason"),
    [
        ("/etc/hostname", "is absolute"),
        ("examples/../examples/a.json", "contains '..'"),
        ("examples/missing.json", "does not exist"),
        ("examples", "is a folder, not a file"),
    ],
)
def test_input_file_refused(wf: WorkflowDir, input_file: str, reason: str) -> None:
    set_case(wf, "cases", 1, input_file=input_file)
    error = only_error(wf)
    assert error.startswith(f"benchmarks/cases.yaml: cases[1] (two): input_file {input_file!r} ")
    assert reason in error


def test_input_file_leaving_through_a_file_link(wf: WorkflowDir) -> None:
    outside = wf.root.parent / "secret.json"
    outside.write_text('{"x": 3}')
    os.symlink(outside, wf.path("examples/link.json"))
    set_case(wf, "cases", 1, input_file="examples/link.json")
    assert "is a symbolic link or passes through one: the platform follows no link" in only_error(wf)


def test_input_file_leaving_through_a_folder_link(wf: WorkflowDir) -> None:
    outside = wf.root.parent / "elsewhere"
    outside.mkdir()
    (outside / "in.json").write_text('{"x": 3}')
    os.symlink(outside, wf.path("benchmarks/inputs"))
    set_case(wf, "cases", 1, input_file="benchmarks/inputs/in.json")
    assert "is a symbolic link or passes through one: the platform follows no link" in only_error(wf)


def test_a_link_that_stays_inside_is_refused_too(wf: WorkflowDir) -> None:
    """The platform follows no link in a submitted folder (issue 22): what a link points at can change
    between a check and a read; a file of the folder is given by its own path."""
    os.symlink(wf.path("examples/a.json"), wf.path("examples/alias.json"))
    set_case(wf, "cases", 1, input_file="examples/alias.json")
    assert "the platform follows no link" in only_error(wf)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\xff\xfe{}", "cannot be read: not UTF-8"),
        (b'{"x": 1', "is not JSON: line 1 column 8"),
        (b'{"x": NaN}', "is not JSON"),
        (b"[1, 2]", "holds a JSON array, not a JSON object"),
    ],
)
def test_input_file_content_refused(wf: WorkflowDir, content: bytes, reason: str) -> None:
    wf.write("benchmarks/inputs/bad.json", content)
    set_case(wf, "hardware_cases", 0, input_file="benchmarks/inputs/bad.json")
    error = only_error(wf)
    assert error.startswith("benchmarks/cases.yaml: hardware_cases[0] (hw): input_file ")
    assert reason in error


def test_input_not_matching_the_schema_names_the_schema_path(wf: WorkflowDir) -> None:
    set_case(wf, "cases", 0, input={"x": -1})
    error = only_error(wf)
    assert error.startswith("benchmarks/cases.yaml: cases[0] (one): input does not match schemas/input.json")
    assert "at $.x" in error and "schema path: properties/x/minimum" in error


def test_hardware_case_input_checked_too(wf: WorkflowDir) -> None:
    set_case(wf, "hardware_cases", 0, input_file=None, input={"y": 1})
    assert only_error(wf).startswith("benchmarks/cases.yaml: hardware_cases[0] (hw): input does not match")


def test_params_not_matching_the_params_schema(wf: WorkflowDir) -> None:
    set_case(wf, "cases", 0, params={"layers": 2})
    error = only_error(wf)
    assert "cases[0] (one): params do not match the manifest's params schema" in error
    assert "additionalProperties" in error


def test_params_mistyped(wf: WorkflowDir) -> None:
    set_case(wf, "cases", 1, params={"shots": "many"})
    assert "schema path: properties/shots/type" in only_error(wf)


def test_shots_above_100000(wf: WorkflowDir) -> None:
    set_case(wf, "cases", 1, params={"shots": 100_001})
    assert only_error(wf) == "benchmarks/cases.yaml: cases[1] (two): params.shots 100,001 is above 100,000"
    set_case(wf, "cases", 1, params={"shots": 100_000})
    assert check_submission(wf.root).ok


def test_one_bad_case_rejects_the_whole_submission_and_all_are_reported(wf: WorkflowDir) -> None:
    set_case(wf, "cases", 0, input={"x": "one"})
    set_case(wf, "hardware_cases", 0, input_file="examples/none.json")
    report = check_submission(wf.root)
    assert not report.ok
    assert [e.split(":")[1].strip() for e in report.errors] == ["cases[0] (one)", "hardware_cases[0] (hw)"]
    assert [c.case.name for c in report.cases] == ["two"]


def test_hardware_cases_too_large(wf: WorkflowDir) -> None:
    big = {"x": 1, "pad": "y" * (HARDWARE_BYTES_MAX // 2)}
    wf.write("schemas/input.json", {"type": "object"})
    wf.cases["hardware_cases"] = [{"name": f"hw{i}", "input": big, "target": "ibm:ibm_fez"} for i in range(2)]
    wf.save()
    assert only_error(wf).startswith(TOO_LARGE)
    wf.cases["hardware_cases"] = wf.cases["hardware_cases"][:1]
    wf.save()
    assert check_submission(wf.root).ok


def test_unknown_key_inside_a_case_or_expect(wf: WorkflowDir) -> None:
    wf.cases["cases"].append({"name": "three", "input": {"x": 1}, "expect": {"max_gapp": 0.1}})
    wf.save()
    assert only_error(wf) == (
        "benchmarks/cases.yaml: cases[2] (three): expect.max_gapp: unknown key; "
        "did you mean 'max_gap'?"
    )
    wf.cases["cases"][2] = {"name": "three", "input": {"x": 1}, "sed": 3}
    wf.save()
    assert only_error(wf) == "benchmarks/cases.yaml: cases[2] (three): sed: unknown key; did you mean 'seed'?"


def test_unknown_top_level_keys_are_ignored(wf: WorkflowDir) -> None:
    wf.cases["notes"] = {"anything": True}
    wf.save()
    assert check_submission(wf.root).ok


def test_missing_cases_key_means_zero_cases(wf: WorkflowDir) -> None:
    del wf.cases["cases"]
    wf.save()
    report = check_submission(wf.root)
    assert report.ok and report.cases == []


def test_same_name_and_target_is_a_warning(wf: WorkflowDir) -> None:
    wf.cases["cases"].append({"name": "one", "input": {"x": 5}, "target": "sim-cpu"})
    wf.cases["cases"].append({"name": "one", "input": {"x": 5}, "target": "fake:fez"})
    wf.save()
    report = check_submission(wf.root)
    assert report.ok
    (warning,) = report.warnings
    assert warning.startswith("benchmarks/cases.yaml: cases[2] (one): same name and target as cases[0] (one)")


def test_a_workflow_that_does_not_read_is_rejected_with_its_issues(wf: WorkflowDir) -> None:
    wf.manifest["metric"] = {"tolerance": 2}
    wf.save()
    assert only_error(wf) == "E021 manifest.yaml: metric.tolerance: tolerance 2 is outside 0 to 1"


def _forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each platform worker forked from now on, counted (the worker is started as it always is)."""
    from qsolve.runtime import worker

    started: list[int] = []
    start = worker.Worker._start

    def counted(self: worker.Worker) -> None:
        start(self)
        started.append(self.pid)

    monkeypatch.setattr(worker.Worker, "_start", counted)
    return started


def test_the_checks_fork_one_platform_worker_for_the_schemas_and_every_case(
    wf: WorkflowDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's three schemas (input, output, params) and every case's validations are checked in
    one platform worker (issue 39, item 5): one fork, not one for each schema and one for the cases."""
    started = _forks(monkeypatch)
    report = check_submission(wf.root)
    assert report.ok, report.errors
    assert len(started) == 1 and started[0] != os.getpid(), started


def test_a_schema_that_fails_its_check_still_gets_the_others_checked_in_a_new_worker(
    wf: WorkflowDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept worker that a check ended (a schema too costly, stopped at its deadline) is replaced: the
    next schema is checked in a fresh one, and each bad schema is still named."""
    from qsolve.runtime import worker

    monkeypatch.setattr(worker, "SCHEMA_S", 1.0)
    costly = {"type": "string", "pattern": "|".join(["(a)"] * 1_600_000)}
    wf.write("schemas/input.json", {"type": "object", "properties": {"x": costly}})
    wf.write("schemas/output.json", {"type": "objekt"})
    started = _forks(monkeypatch)
    report = check_submission(wf.root)
    assert not report.ok
    assert any("schemas/input.json: not a valid JSON Schema: the platform" in e for e in report.errors), (
        report.errors
    )
    assert any("schemas/output.json" in e and "not a valid JSON Schema" in e for e in report.errors), (
        report.errors
    )
    assert len(started) == 2, started  # the one the costly check ended, then a fresh one
