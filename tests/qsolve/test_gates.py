"""The eight gates, judged on trusted workflows run in this process (the sandbox has its own tests)."""

from __future__ import annotations

from qsolve.sandbox.calls import ModuleCode
from qsolve.validation.gate_run import run_gates
from qsolve.validation.gates import judge
from tests.conftest import SAMPLING_MODULE, WorkflowDir

MODULE = SAMPLING_MODULE

NOISY_CASE = {"name": "noisy", "input": {"x": 1}, "target": "fake:fez@1.6", "expect": {"min_fidelity": 0.5}}


def gates_of(
    wf: WorkflowDir, module: str = MODULE, cases: list | None = None, target: str = "sim-cpu"
) -> dict:
    wf.write("workflow.py", module)
    if cases is not None:
        wf.cases["cases"] = cases
    wf.save()
    def start() -> ModuleCode:  # a fresh import each time, as a fresh workflow process gives
        return ModuleCode.load(wf.path("workflow.py"))

    inputs = run_gates(wf.root, target, None, lambda e: None, start, start)
    return {g.name: g for g in judge(inputs)}


def test_all_eight_pass(wf: WorkflowDir) -> None:
    gates = gates_of(
        wf,
        MODULE + "\n\ndef estimate(input, params):\n    return {'circuits': 2, 'shots': 150}\n",
        cases=[{"name": "one", "input": {"x": 1}}, NOISY_CASE],
    )
    assert list(gates) == [
        "manifest",
        "example_inputs",
        "benchmark_cases",
        "methods_declared",
        "fidelity_checked",
        "cases_pass",
        "reproducible",
        "estimate_honest",
    ]
    assert all(g.passed for g in gates.values()), [g for g in gates.values() if not g.passed]
    assert (
        gates["estimate_honest"].message
        == "one: circuits 2 for 2 (ratio 1.00), shots 150 for 200 (ratio 0.75)"
    )


def test_six_gates_when_no_case_ran(wf: WorkflowDir) -> None:
    gates = gates_of(wf, cases=[{"name": "hw", "input": {"x": 1}, "target": "ibm:ibm_fez"}])
    assert len(gates) == 6
    assert not gates["cases_pass"].passed
    assert gates["cases_pass"].message.startswith(
        "no case ran to a result: FAIL TargetUnavailable: ibm:ibm_fez"
    )


#: the quantum method unavailable on an input of x = 0, and a classical method ``extra`` unavailable always
UNAVAILABLE = (
    MODULE.replace(
        "from qsolve import MethodResult", "from qsolve import MethodResult, MethodUnavailable"
    ).replace(
        "def quantum(input, params, ctx):\n",
        "def quantum(input, params, ctx):\n"
        "    if input['x'] == 0:\n"
        "        raise MethodUnavailable('no device')\n",
    )
    + "\n\ndef extra(input, params, ctx):\n    raise MethodUnavailable('only small inputs')\n"
    + "\n\ndef estimate(input, params):\n    return {'circuits': 2, 'shots': 200}\n"
)


def test_the_run_gates_judge_only_a_case_whose_quantum_methods_ran(wf: WorkflowDir) -> None:
    assert "raise MethodUnavailable('no device')" in UNAVAILABLE
    wf.manifest["methods"].append({"name": "extra", "kind": "classical"})
    wf.save()
    # a classical method merely unavailable is a result: the case is judged
    gates = gates_of(wf, UNAVAILABLE, cases=[{"name": "runs", "input": {"x": 1}}])
    assert gates["reproducible"].passed and gates["estimate_honest"].passed, gates
    assert gates["estimate_honest"].message.startswith("runs: circuits 2 for 2"), gates["estimate_honest"]
    # a quantum method unavailable sent nothing: its case is not the one judged, nor is it a result
    gates = gates_of(wf, UNAVAILABLE, cases=[{"name": "no-device", "input": {"x": 0}}])
    assert len(gates) == 6, list(gates)
    two = [{"name": "no-device", "input": {"x": 0}}, {"name": "runs", "input": {"x": 1}}]
    gates = gates_of(wf, UNAVAILABLE, cases=two)
    assert gates["estimate_honest"].message.startswith("runs: "), gates["estimate_honest"].message
    assert gates["reproducible"].message.startswith("runs ran again"), gates["reproducible"].message


def test_benchmark_cases_needs_one_case(wf: WorkflowDir) -> None:
    gates = gates_of(wf, cases=[])
    assert not gates["benchmark_cases"].passed and not gates["cases_pass"].passed


def test_fidelity_checked_needs_a_noisy_target(wf: WorkflowDir) -> None:
    case = {"name": "one", "input": {"x": 1}, "expect": {"min_fidelity": 0.5}}
    gates = gates_of(wf, cases=[case])
    assert not gates["fidelity_checked"].passed
    assert gates_of(wf, cases=[case], target="fake:fez")["fidelity_checked"].passed
    zero = {**NOISY_CASE, "expect": {"min_fidelity": 0.0}}
    assert not gates_of(wf, cases=[zero])["fidelity_checked"].passed


def test_example_inputs_must_match_the_schema(wf: WorkflowDir) -> None:
    wf.write("examples/bad.json", {"x": "one"})
    gate = gates_of(wf)["example_inputs"]
    assert not gate.passed
    assert gate.message.startswith("examples/bad.json does not match schemas/input.json at $.x")
    for p in wf.path("examples").iterdir():
        p.unlink()
    assert gates_of(wf)["example_inputs"].message == "no example in examples/ (*.json)"


def test_methods_declared(wf: WorkflowDir) -> None:
    wf.manifest["methods"] = wf.manifest["methods"][:1]
    wf.save()
    gates = gates_of(wf)
    assert not gates["methods_declared"].passed and not gates["manifest"].passed


def test_cases_pass_names_failing_cases(wf: WorkflowDir) -> None:
    cases = [
        {"name": "one", "input": {"x": 1}},
        {"name": "bad", "input": {"x": 2}, "expect": {"max_two_qubit_gates": -1}},
    ]
    gate = gates_of(wf, cases=cases)["cases_pass"]
    assert gate.message == "1 of 2 cases fail: bad (0 two-qubit gates > -1)"


def test_reproducible_fails_on_a_result_that_changes_between_runs(wf: WorkflowDir) -> None:
    greedy = (
        "def greedy(input, params, ctx):\n    import os\n"
        "    return MethodResult(-int.from_bytes(os.urandom(6)) - 1)\n"
    )
    noisy = MODULE + "\n\n" + greedy
    wf.manifest["methods"].append({"name": "greedy", "kind": "classical"})
    wf.save()
    gate = gates_of(wf, noisy, cases=[{"name": "one", "input": {"x": 1}}])["reproducible"]
    assert not gate.passed
    assert gate.message.startswith("one ran again with method greedy's objective: -")  # its own value
    assert "then -" in gate.message and "must come from ctx.rng" in gate.message


def test_reproducible_names_the_first_differing_value_of_a_solution(wf: WorkflowDir) -> None:
    flaky = (
        "def greedy(input, params, ctx):\n    import os\n"
        "    return MethodResult(-1.0, solution={'x': 1, 'bits': [0, os.urandom(8).hex()]})\n"
    )
    wf.manifest["methods"].append({"name": "greedy", "kind": "classical"})
    wf.save()
    module = MODULE.replace('return -float(solution["x"])', "return -float(solution['x'])")
    gate = gates_of(wf, module + "\n\n" + flaky, cases=[{"name": "one", "input": {"x": 1}}])["reproducible"]
    assert not gate.passed
    assert gate.message.startswith("one ran again with method greedy's solution.bits[1]: '"), gate.message


def test_reproducible_names_the_circuits_of_a_method_whose_answer_stays(wf: WorkflowDir) -> None:
    """It named a platform number (``different result at fidelity``): now the method whose circuits
    differ, and ctx.rng."""
    random_angle = MODULE.replace(
        "    qc.x(0)\n    qc.measure_all()\n    ctx.sample([qc, qc]",
        "    import os\n    qc.rx(0.5 + 2 * int.from_bytes(os.urandom(4)) / 2**32, 0)\n"
        "    qc.measure_all()\n    ctx.sample([qc, qc]",
    )
    assert random_angle != MODULE
    gate = gates_of(wf, random_angle, cases=[{"name": "one", "input": {"x": 1}}])["reproducible"]
    assert not gate.passed
    assert gate.message.startswith(
        "one ran again with method quantum's circuits differ, the same answer or not: circuits[0].fidelity: "
    ), gate.message
    assert gate.message.endswith("never from an unseeded generator, the clock or the order of a set")


def test_a_job_stopped_after_a_case_ran_still_reports_the_run_gates(wf: WorkflowDir) -> None:
    """The seed adds reproducible and estimate_honest when at least one case ran to a result: a time
    limit reached during the second run leaves them failing with its reason, never dropped."""
    from qsolve.errors import OutOfTime

    wf.write("workflow.py", MODULE)
    wf.cases["cases"] = [{"name": "one", "input": {"x": 1}}]
    wf.save()

    def start() -> ModuleCode:
        return ModuleCode.load(wf.path("workflow.py"))

    def out_of_time() -> ModuleCode:
        raise OutOfTime("the sandbox job was stopped at its time limit of 300 s")

    inputs = run_gates(wf.root, "sim-cpu", None, lambda e: None, start, out_of_time)
    gates = {g.name: g for g in judge(inputs)}
    assert len(gates) == 8 and gates["cases_pass"].message.startswith("the sandbox job was stopped")
    for name in ("reproducible", "estimate_honest"):
        assert not gates[name].passed
        assert "stopped at its time limit of 300 s in case one (its second run" in gates[name].message


def test_module_state_does_not_carry_into_the_second_run(wf: WorkflowDir) -> None:
    counter = "def greedy(input, params, ctx):\n    CALLS.append(1)\n    return MethodResult(-len(CALLS))\n"
    wf.manifest["methods"].append({"name": "greedy", "kind": "classical"})
    wf.save()
    cases = [{"name": "one", "input": {"x": 1}}]
    gate = gates_of(wf, MODULE + "\n\n" + counter, cases=cases)["reproducible"]
    assert gate.passed, gate.message


def test_estimate_honest(wf: WorkflowDir) -> None:
    cases = [{"name": "one", "input": {"x": 1}}]
    gates = gates_of(wf, cases=cases)
    assert gates["estimate_honest"].passed and gates["estimate_honest"].message.startswith("note:")
    lying = MODULE + "\n\ndef estimate(input, params):\n    return {'circuits': 5, 'shots': 200}\n"
    gate = gates_of(wf, lying, cases=cases)["estimate_honest"]
    assert not gate.passed
    assert gate.message == "estimate() says 5 circuits, one sent 2 (ratio 2.50, outside 0.5 to 2.0)"
    broken = MODULE + "\n\ndef estimate(input, params):\n    return 3\n"
    assert not gates_of(wf, broken, cases=cases)["estimate_honest"].passed


def test_a_module_that_does_not_import_fails_every_case(wf: WorkflowDir) -> None:
    gates = gates_of(wf, MODULE + "\nraise RuntimeError('no')\n", cases=[{"name": "one", "input": {"x": 1}}])
    assert gates["cases_pass"].message == "no case ran to a result: FAIL RuntimeError: no (workflow.py:22)"
    assert len(gates) == 6


def test_estimate_honest_passes_with_a_note_when_nothing_was_sent_even_if_estimate_raised(
    wf: WorkflowDir,
) -> None:
    from tests.conftest import MODULE as SENDS_NOTHING

    raising = SENDS_NOTHING + "\n\ndef estimate(input, params):\n    raise ValueError('cannot say')\n"
    gate = gates_of(wf, raising, cases=[{"name": "one", "input": {"x": 1}}])["estimate_honest"]
    assert gate.passed
    assert gate.message.startswith("note: one sent no circuits, nothing to compare (")
    assert "cannot say" in gate.message


def test_the_examples_validations_together_are_bounded(wf: WorkflowDir, monkeypatch) -> None:
    """Finding (issue 22 tester), fixed: ``example_inputs`` bounded each example's validation at
    ``SCHEMA_S`` (10 s) and nothing more, outside the checks' one bound: a schema that takes just under
    10 s to pass each example, and a thousand examples, held the platform's job for hours. The examples'
    validations together now stop at ``CHECKS_S`` (made small here), named."""
    from qsolve.validation import checks
    from qsolve.validation.gates import GateInputs, example_inputs
    from qsolve.workflow.folder import load_workflow
    from tests.qsolve.runtime.test_worker import costly_schema

    monkeypatch.setattr(checks, "CHECKS_S", 0.5)
    costly = costly_schema(11)  # 2^11 failing branches before the one that passes: tenths of a second
    wf.write("schemas/input.json", {"$defs": costly["$defs"], "anyOf": [costly, {"type": "object"}]})
    for i in range(8):
        wf.write(f"examples/e{i}.json", {"x": i})
    gate = example_inputs(GateInputs(root=wf.root, run_target="sim-cpu", workflow=load_workflow(wf.root)))
    assert not gate.passed
    assert gate.message.startswith("the platform stopped validating examples/") and gate.message.endswith(
        "the validations of all the examples reached their bound of 0.5 s "
        "(schemas this costly to check need simplifying)"
    ), gate.message


def test_the_gates_take_the_workflow_the_checks_read_and_read_the_folder_again_only_without_it(
    wf: WorkflowDir, monkeypatch
) -> None:
    """Given the workflow the submission checks read from the same folder, the gates do not read the
    folder again (issue 39, item 5: three schema checks and the YAML, twice); the verdicts are the
    same. A workflow read from another folder is not taken: the folder is read."""
    import qsolve.validation.gate_run as gate_run
    from qsolve.workflow.folder import load_workflow

    wf.write("workflow.py", MODULE)
    wf.save()
    checked = load_workflow(wf.root)
    reads: list[object] = []
    monkeypatch.setattr(gate_run, "load_workflow", lambda root: reads.append(root) or load_workflow(root))

    def start() -> ModuleCode:
        return ModuleCode.load(wf.path("workflow.py"))

    given = judge(run_gates(wf.root, "sim-cpu", None, lambda e: None, start, start, checked))
    assert reads == []
    read = judge(run_gates(wf.root, "sim-cpu", None, lambda e: None, start, start))
    assert reads == [wf.root]
    assert [(g.name, g.passed, g.message) for g in given] == [(g.name, g.passed, g.message) for g in read]
    elsewhere = load_workflow(wf.root).__class__(**{**checked.__dict__, "root": wf.root.parent})
    run_gates(wf.root, "sim-cpu", None, lambda e: None, start, start, elsewhere)
    assert reads == [wf.root, wf.root]
