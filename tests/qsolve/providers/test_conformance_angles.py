"""The checker's checks added by issue 38 (item 3): an angle out of range for every angle of every gate of
every basis of §4, by each of its rules (``[m, k]`` with ``m`` past ``2^k − 1``, ``m`` below 0, ``k`` past
32; in ``prxrzxx`` an ``xx`` past ¼ of a turn and a ``prx`` past ½), each a vector of its own, each
against a provider written for the test that takes exactly that one program
(tests/qsolve/providers/bent.py, ``lax-angle``); and a ``cancel`` answered ``unsupported`` accepted with
or without ``cancels`` in describe (§5.1, §5.6, §9), its vectors read as they say."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from qsolve.cli import main
from qsolve.providers import compiler
from qsolve.providers.conformance import load_vectors
from qsolve.providers.conformance.checker import read_cancel
from qsolve.providers.program import BASES, GATES

from .test_conformance import checked
from .test_conformance_rules import failures

BENT = [sys.executable, str(Path(__file__).with_name("bent.py"))]
REFERENCE = [sys.executable, "-m", "qsolve.providers.reference", "--stdio", "--qubits", "4"]
VECTORS = load_vectors()
ANGLES = {
    "program-angle-out-of-range",
    "program-angle-exponent-out-of-range",
    "program-angle-negative",
    "program-prx-phase-out-of-range",
    "program-prx-turn-out-of-range",
    "program-gpi2-angle-out-of-range",
    "program-zz-angle-out-of-range",
    "program-xx-angle-out-of-range",
    "program-xx-past-quarter-turn",
    "program-prx-past-half-turn",
    # each angle of §4 sent m below 0 and k past 32 too (the attack of tests/attacks/test_issue38_attacks.py)
    "program-prx-phase-negative",
    "program-prx-phase-exponent-out-of-range",
    "program-prx-turn-negative",
    "program-prx-turn-exponent-out-of-range",
    "program-gpi2-angle-negative",
    "program-gpi2-angle-exponent-out-of-range",
    "program-zz-angle-negative",
    "program-zz-angle-exponent-out-of-range",
    "program-xx-angle-negative",
    "program-xx-angle-exponent-out-of-range",
}
#: §4's three rules of an angle [m, k], each broken by some vector on every angle of every gate
RULES = {
    "m past 2^k − 1": lambda m, k: m >= 2**k,
    "m below 0": lambda m, k: m < 0,
    "k past 32": lambda m, k: k > 32,
}


def circuit_key(circuit) -> str:
    """What a circuit is, gate by gate, as text."""
    gates = [
        (
            i.operation.name,
            [repr(p) for p in i.operation.params],
            [circuit.find_bit(q).index for q in i.qubits],
            [circuit.find_bit(c).index for c in i.clbits],
        )
        for i in circuit.data
    ]
    return json.dumps([circuit.num_qubits, circuit.num_clbits, repr(circuit.global_phase), gates])


@pytest.fixture(scope="module", autouse=True)
def compiled_once() -> Iterator[None]:
    """The checker compiles the same probe programs for the same device in every test here (the compiler
    is seeded, its output frozen): each is compiled once per module, the checker's verdicts unchanged."""
    compile_circuit = compiler.compile_circuit
    done: dict[tuple[str, str, int], compiler.Compiled] = {}

    def once(circuit, device, *, seed=0):
        key = (circuit_key(circuit), device.model_dump_json(), seed)
        if key not in done:
            done[key] = compile_circuit(circuit, device, seed=seed)
        return done[key]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(compiler, "compile_circuit", once)
        yield


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("QSOLVE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QSOLVE_DATABASE_URL", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return tmp_path / "home"


def test_every_angle_of_every_gate_of_every_basis_has_a_vector_out_of_its_range():
    """Each (basis, gate, angle) of §4 is sent, by some vector, an angle that breaks each of §4's three
    rules (``m`` past ``2^k − 1``, ``m`` below 0, ``k`` past 32), that rule alone."""
    covered: set[tuple[str, str, str, int]] = set()
    by_name = {m["name"]: m for m in VECTORS["messages"]}
    assert set(by_name) >= ANGLES
    for name in ANGLES:
        assert by_name[name]["code"] == "invalid"
        for basis, gates in by_name[name]["gates_by_basis"].items():
            assert len(gates) == 1
            for i, (m, k) in enumerate(gates[0]["turns"]):
                broken = [rule for rule, breaks in RULES.items() if breaks(m, k)]
                assert len(broken) <= 1, (name, basis, broken)
                covered |= {(rule, basis, gates[0]["gate"], i) for rule in broken}
    wanted = {
        (rule, basis, gate, i)
        for rule in RULES
        for basis, gates in BASES.items()
        for gate in gates
        for i in range(GATES[gate][1])
    }
    assert wanted - covered == set()
    assert by_name["program-xx-past-quarter-turn"]["gates_by_basis"] == {
        "prxrzxx": [{"gate": "xx", "qubits": ["$pair-a", "$pair-b"], "turns": [[3, 3]]}]
    }
    assert by_name["program-prx-past-half-turn"]["gates_by_basis"]["prxrzxx"][0]["turns"][0] == [3, 2]


@pytest.mark.parametrize("basis", sorted(BASES))
def test_the_reference_refuses_every_angle_vector_in_each_basis(home, capsys, basis):
    device = ["--basis", basis, "--connectivity", "line"]
    assert main(["providers", "add", "ref", "--process", "--", *REFERENCE, *device]) == 0
    code, checks, _ = checked(capsys, "ref")
    assert code == 0, failures(checks)
    for name in ANGLES:
        status, detail = checks[f"messages/{name}"]
        applies = basis in next(m for m in VECTORS["messages"] if m["name"] == name)["gates_by_basis"]
        other = ("n/a", f"no such program in the device's basis, {basis}")
        assert (status, detail) == (("pass", "invalid") if applies else other)


@pytest.mark.parametrize(
    ("basis", "lax", "check"),
    [
        ("rzsxxcz", "rz:angle [5, 2]: m must be", "program-angle-out-of-range"),
        ("rzsxxcz", "rz:k must be 0 to 32", "program-angle-exponent-out-of-range"),
        ("gpizz", "gpi:angle [-1, 2]", "program-angle-negative"),
        ("prxcz", "prx:gates.0.turns.1: angle [5, 2]", "program-prx-phase-out-of-range"),
        ("prxrzxx", "prx:gates.0.turns.0: angle [5, 2]", "program-prx-turn-out-of-range"),
        ("gpizz", "gpi2:angle [5, 2]", "program-gpi2-angle-out-of-range"),
        ("gpizz", "zz:angle [5, 2]", "program-zz-angle-out-of-range"),
        ("prxrzxx", "xx:angle [5, 2]", "program-xx-angle-out-of-range"),
        ("prxrzxx", "xx:takes 0 to ¼ of a turn", "program-xx-past-quarter-turn"),
        ("prxrzxx", "prx:takes 0 to ½ of a turn", "program-prx-past-half-turn"),
        ("prxcz", "prx:gates.0.turns.1: angle [-1, 2]", "program-prx-phase-negative"),
        ("prxrzxx", "prx:gates.0.turns.1: angle [1, 33]", "program-prx-phase-exponent-out-of-range"),
        ("prxrzxx", "prx:gates.0.turns.0: angle [-1, 2]", "program-prx-turn-negative"),
        ("prxrzxx", "prx:gates.0.turns.0: angle [1, 33]", "program-prx-turn-exponent-out-of-range"),
        ("gpizz", "gpi2:angle [-1, 2]", "program-gpi2-angle-negative"),
        ("gpizz", "gpi2:angle [1, 33]", "program-gpi2-angle-exponent-out-of-range"),
        ("gpizz", "zz:angle [-1, 2]", "program-zz-angle-negative"),
        ("gpizz", "zz:angle [1, 33]", "program-zz-angle-exponent-out-of-range"),
        ("prxrzxx", "xx:angle [-1, 2]", "program-xx-angle-negative"),
        ("prxrzxx", "xx:angle [1, 33]", "program-xx-angle-exponent-out-of-range"),
    ],
)
def test_a_provider_that_takes_one_angle_out_of_range_fails_that_check_alone(
    home, capsys, monkeypatch, basis, lax, check
):
    monkeypatch.setenv("BENT_BASIS", basis)
    argv = ["providers", "add", "lax", "--env", "BENT_BASIS", "--process", "--", *BENT, "--stdio"]
    assert main([*argv, "lax-angle", lax]) == 0
    code, checks, _ = checked(capsys, "lax")
    assert code == 1
    assert failures(checks) == {f"messages/{check}": 'answered "ok": true; it should refuse it, invalid'}


# ---- cancel answered unsupported -------------------------------------------------------------------------


@pytest.mark.parametrize("vector", VECTORS["cancels"]["answers"], ids=lambda v: json.dumps(v))
def test_cancel_vectors_read_as_they_say(vector):
    answer = vector["answer"]
    if "error" in answer:
        status, detail = read_cancel(vector["ended"], vector["cancels"], code=answer["error"])
    else:
        status, detail = read_cancel(
            vector["ended"], vector["cancels"], status=answer["status"], reason=answer.get("reason")
        )
    assert status == vector["read"], detail


def test_a_provider_whose_cancel_is_unsupported_passes_without_cancels_in_describe(home, capsys, tmp_path):
    """The audit's provider: cancel answers ``unsupported``, describe says nothing of ``cancels``."""
    script = tmp_path / "no_cancel.py"
    script.write_text(
        "import json, os, sys\n"
        "out = os.fdopen(os.dup(1), 'wb', buffering=0)\n"
        "os.dup2(2, 1)\n"
        "from qsolve.providers.reference import ReferenceOptions, ReferenceProvider\n"
        "provider = ReferenceProvider(ReferenceOptions())\n"
        "says = sys.argv[1]\n"
        "for line in sys.stdin.buffer:\n"
        "    message = json.loads(line)\n"
        "    if message.get('op') == 'cancel':\n"
        "        answer = {'ok': False, 'error': {'code': 'unsupported', 'message': 'cannot cancel'}}\n"
        "    else:\n"
        "        answer = provider.handle(message)\n"
        "        if message.get('op') == 'describe' and answer.get('ok'):\n"
        "            answer.pop('cancels', None)\n"
        "            if says != 'nothing':\n"
        "                answer['cancels'] = says == 'true'\n"
        "    out.write(json.dumps(answer).encode() + b'\\n')\n"
    )
    for says, code in (("nothing", 0), ("false", 0), ("true", 1)):
        name = f"cancels-{says}"
        assert main(["providers", "add", name, "--process", "--", sys.executable, str(script), says]) == 0
        got, checks, _ = checked(capsys, name)
        assert got == code, (says, failures(checks))
        if says == "true":
            said = "answered unsupported, and its describe says cancels true"
            assert checks["cancel/probe"] == ("FAIL", said)
            assert checks["messages/cancel-of-no-job"][0] == "FAIL"
        else:
            assert checks["cancel/probe"][0] == "pass"
            assert checks["messages/cancel-of-no-job"][0] == "pass"
