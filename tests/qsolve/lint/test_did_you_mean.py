"""A mistyped key is named with the key it is closest to, in lint and in the submission checks."""

from __future__ import annotations

from qsolve.lint import lint
from qsolve.validation.checks import check_submission
from tests.conftest import WorkflowDir


def test_a_mistyped_manifest_key_says_what_it_probably_meant(wf: WorkflowDir) -> None:
    wf.manifest["metrik"] = wf.manifest.pop("metric")
    wf.save()
    (issue,) = lint(wf.root).issues
    assert issue.format() == "E003 manifest.yaml: metrik: unknown key; did you mean 'metric'?"


def test_a_mistyped_expect_key_says_what_it_probably_meant(wf: WorkflowDir) -> None:
    wf.cases["cases"][0]["expect"] = {"max_gapp": 0.0}
    wf.cases["hardware_cases"][0]["expect"] = {"min_fidelty": 0.9}
    wf.save()
    (issue,) = lint(wf.root).issues  # lint reads hardware_cases only
    assert issue.format() == (
        "E052 benchmarks/cases.yaml: hardware_cases[0].expect.min_fidelty: unknown key; "
        "did you mean 'min_fidelity'?"
    )
    errors = check_submission(wf.root).errors
    said = "benchmarks/cases.yaml: cases[0] (one): expect.max_gapp: unknown key; did you mean 'max_gap'?"
    assert said in errors


def test_a_key_like_none_says_only_that_it_is_unknown(wf: WorkflowDir) -> None:
    wf.cases["cases"][0]["colour"] = "red"
    wf.save()
    assert "benchmarks/cases.yaml: cases[0] (one): colour: unknown key" in check_submission(wf.root).errors
