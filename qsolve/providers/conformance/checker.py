"""The conformance checker (quantum-provider-protocol §9): a provider held to qsolve's vectors.

In this order, each check one line (``pass``, ``FAIL``, ``skip`` for one not run, ``n/a`` for one that
does not apply to the device):

describe/    the ``describe`` answer in full (it reads, names its provenance and calibration, gives a basis
             of §4 the client compiles to), its ``billing`` one of §5.1's three forms, and the same answer
             when asked again (a client compiles against it and asks again before it submits);
estimates/   each program compiled to the device (:func:`~qsolve.providers.compiler.compile_circuit`) and
             estimated: each answer one of §5.2's three forms (``unsupported``: the cost is its billing's);
messages/    the vectors' messages sent as they are, each refused with its code: zero shots ``invalid``,
             a program in another basis ``refused``, a program without its gates ``invalid``, and
             an angle out of range for every gate of every basis (§4: ``[m, k]`` with ``0 ≤ m < 2^k``,
             ``k ≤ 32``; in ``prxrzxx`` an ``xx`` past ¼ of a turn and a ``prx`` past ½), and
             ``refused`` a gate on a place the device does not have, two qubits it does not couple, a
             resonator used out of turn or measured, one shot past ``max_shots`` (``n/a`` for a device
             with no such thing: no resonator, every pair coupled, no ``max_shots``);
submit/      each of those messages that carries a job sent again as a ``submit``, each refused with the
             same code (§4: a provider refuses a program at submit as at estimate; taking it there is
             a job, named with the answer to the cancel the checker then sends). Sent only when the spend
             is allowed, as the programs are (below); to a provider that gives no estimate they went to
             submit already (``n/a``);
credentials/ for a provider that has a credential, a message with a wrong one and one with none, each
             refused ``unauthorized`` (a provider that takes them takes anyone's messages);
programs/    each program run with seed 1 and held to its counts, read of the shots the device kept, and
             its result asked twice found the same. They run only when every estimate says free, or with
             ``yes`` (the person allows the spend): a cost unknown (unpriced, refused, or no estimate and a
             billing that sets no price) is not free. Programs not run are ``skip`` and are not passes;
charged/     each program's ``charged`` (§5.5) held to the estimate shown before its submit (§7): a job
             estimated free charged nothing, a priced one no more than its amount (unless
             ``at_least``) and in its currency; after a job charged past it, no further job is sent
             without ``yes``;
reference/   for the reference provider's own devices, each program's counts exactly the vectors';
cancel/      each job it ran asked to cancel, the answer held to §5.6 (:func:`read_cancel`: ``done`` for a job
             that finished, ``failed`` with its reason, ``unsupported`` from a provider that cannot cancel,
             whether its describe says ``cancels: false`` or nothing, §5.1; not from one that says true);
credentials/not-echoed  last: no answer of the run quoted a credential (§3), neither the wrong one
             it was sent nor its own (the client takes it out of what it shows, and says it did).

The messages that carry a program go to ``estimate``; to a provider that gives no estimate they go to
``submit``, and then only when its billing is free or with ``yes``. A provider that does not answer in
time stops the checker: what is left is not run. A process provider whose transport broke is started
again for the next check. Nothing the checker prints holds the credential: it is taken out of every line.
"""

from __future__ import annotations

import copy
import json
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from qiskit import QuantumCircuit

from qsolve.errors import shown
from qsolve.providers.device import BASES, NoBasis
from qsolve.providers.errors import ProviderError, job_shown, redact
from qsolve.providers.messages import (
    AnswerRefused,
    Description,
    ProviderAnswerError,
    read_envelope,
)

VECTORS = "provider-v1.json"
SEED = 1
#: how long the checker follows one job to its end
WAIT_S = 600.0
#: the most qubits the probe measures: what the compiler's check simulates
PROBE_QUBITS = 20
NOT_RUN_COST = "not run: the cost is unknown; --yes allows the spend"
#: why a message naming a token that cannot be filled for the device does not apply to it
NOT_FOR_THE_DEVICE = {
    "$probe-in-another-basis": "the device runs every basis of §4: no program is in another",
    "$resonator": "the device has no computational resonator",
    "$mover": "the device has no computational resonator",
    "$unpaired-a": "the device couples every two of its qubits: no pair is missing",
    "$unpaired-b": "the device couples every two of its qubits: no pair is missing",
    "$too-many-shots": "its describe sets no max_shots",
    "$pair-a": "the device couples no two of its qubits",
    "$pair-b": "the device couples no two of its qubits",
}

Status = Literal["pass", "FAIL", "skip", "n/a"]


def load_vectors() -> dict[str, Any]:
    """The vectors, from the package's data (a non-editable install carries them)."""
    text = resources.files("qsolve.providers.conformance").joinpath(VECTORS).read_text(encoding="utf-8")
    return json.loads(text)


# ---- the programs ---------------------------------------------------------------------------------


def probe_circuit(qubits: int) -> QuantumCircuit:
    """§6's probe on ``qubits`` qubits: X on qubit 0, qubit i measured into bit i."""
    circuit = QuantumCircuit(qubits, qubits, name="probe")
    circuit.x(0)
    circuit.measure(range(qubits), range(qubits))
    return circuit


def probe_width(description: Description) -> int:
    return min(len(description.device().computational_qubits), PROBE_QUBITS)


def build_circuit(vector: dict[str, Any], probe_qubits: int) -> QuantumCircuit:
    """The circuit a program vector describes (``build: probe``, ``qasm2`` or ``qasm3`` text)."""
    if vector.get("build") == "probe":
        return probe_circuit(probe_qubits)
    if "qasm2" in vector:
        from qiskit import qasm2

        return qasm2.loads(vector["qasm2"])
    if "qasm3" in vector:
        from qiskit import qasm3

        return qasm3.loads(vector["qasm3"])
    raise ValueError(f"program vector {vector.get('name')!r} has no circuit")


def expand(outcome: str, width: int) -> str:
    """An outcome as the vectors write it, ``0…01`` its tail after as many zeros as fill ``width`` bits
    (``01`` for two, ``1`` for one)."""
    if "…" not in outcome:
        return outcome
    head, tail = outcome.split("…", 1)
    head, tail = head.rstrip("0"), tail.lstrip("0")  # the zeros either side of … are the filler
    return head + "0" * max(0, width - len(head) - len(tail)) + tail


def judge(expect: list[dict[str, Any]], counts: dict[str, int], kept: int, width: int) -> list[str]:
    """What the counts break of the vector's expectations (none: they hold)."""
    share = {k: v / kept for k, v in counts.items()}
    broken = []
    for rule in expect:
        if "most" in rule:
            want = expand(rule["most"], width)
            top = max(counts, key=lambda k: (counts[k], k)) if counts else None
            if top != want:
                broken.append(f"the most frequent outcome is {top}, not {want}")
            continue
        outcomes = [expand(o, width) for o in rule["outcomes"]]
        got = sum(share.get(o, 0.0) for o in outcomes)
        named = " and ".join(outcomes)
        if "at_least" in rule and got < rule["at_least"]:
            broken.append(f"{named} hold {got:.3f} of the shots, below {rule['at_least']}")
        if "between" in rule:
            lo, hi = rule["between"]
            if not lo <= got <= hi:
                broken.append(f"{named} hold {got:.3f} of the shots, outside [{lo}, {hi}]")
    return broken


def shown_counts(counts: dict[str, int], kept: int, most: int = 3) -> str:
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:most]
    text = ", ".join(f"{k} {v / kept:.3f}" for k, v in top)
    more = len([v for v in counts.values() if v]) - len(top)
    return f"{text}{f' (and {more} more outcomes)' if more > 0 else ''} of {kept} shots"


def x_gate(vectors: dict[str, Any], basis: str, qubit: int) -> dict[str, Any]:
    gate = copy.deepcopy(vectors["x_by_basis"][basis])
    gate["qubits"] = [qubit if q == "$q" else q for q in gate["qubits"]]
    return gate


def probe_in_another_basis(vectors: dict[str, Any], description: Description) -> dict[str, Any] | None:
    """The probe written in the first basis of §4 whose gates the device does not all list."""
    device = description.device()
    listed = set(device.native_gates)
    other = next((b for b, gates in BASES.items() if not set(gates) <= listed), None)
    if other is None:
        return None
    places = device.computational_qubits[: probe_width(description)]
    return {
        "format": "wai.native/1",
        "basis": other,
        "bits": len(places),
        "gates": [x_gate(vectors, other, places[0])],
        "measure": [{"qubit": q, "bit": b} for b, q in enumerate(places)],
    }


def device_fills(description: Description) -> dict[str, Any]:
    """The places and counts the device's own messages name: a place it does not have, two qubits it
    does not couple and two it does, its first move's qubit and resonator, one shot past its
    ``max_shots`` (each only where the device has one)."""
    device = description.device()
    fills: dict[str, Any] = {"$no-qubit": device.qubits}
    qubits = device.computational_qubits
    unpaired = next(
        ((a, b) for i, a in enumerate(qubits) for b in qubits[i + 1 :] if not device.connects(a, b)), None
    )
    if unpaired is not None:
        fills["$unpaired-a"], fills["$unpaired-b"] = unpaired
    paired = next(
        ((a, b) for i, a in enumerate(qubits) for b in qubits[i + 1 :] if device.connects(a, b)), None
    )
    if paired is not None:
        fills["$pair-a"], fills["$pair-b"] = paired
    if device.moves:
        fills["$mover"], fills["$resonator"] = device.moves[0]
    if description.max_shots:
        fills["$too-many-shots"] = description.max_shots + 1
    return fills


def substitute(value: Any, fills: dict[str, Any]) -> Any:
    """The vector's message with each ``$name`` string replaced by what it stands for."""
    if isinstance(value, str) and value in fills:
        return copy.deepcopy(fills[value])
    if isinstance(value, dict):
        return {k: substitute(v, fills) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, fills) for v in value]
    return value


def reference_counts(options: Any = None) -> dict[str, dict[str, int]]:
    """The counts the reference provider (in this process) gives for each program at seed 1: what the
    vectors' ``reference`` holds for its device."""
    from qsolve.providers.compiler import compile_circuit
    from qsolve.providers.reference import ReferenceProvider

    vectors = load_vectors()
    provider = ReferenceProvider(options)
    message = {"protocol": vectors["protocol"]}
    answer = read_envelope(provider.handle({**message, "op": "describe"}))
    description = Description.model_validate(answer)
    out = {}
    for vector in vectors["programs"]:
        circuit = build_circuit(vector, probe_width(description))
        compiled = compile_circuit(circuit, description.device(), seed=SEED)
        program = compiled.program.model_dump(mode="json", exclude_none=True)
        shots = vector["shots"]
        job = read_envelope(
            provider.handle({**message, "op": "submit", "program": program, "shots": shots, "seed": SEED})
        )["job"]
        result = read_envelope(provider.handle({**message, "op": "result", "job": job}))
        out[vector["name"]] = result["counts"]
    return out


# ---- the checker ----------------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    status: Status
    detail: str

    def line(self) -> str:
        return f"{self.status:<6}{self.name}: {self.detail}"


@dataclass
class _Program:
    vector: dict[str, Any]
    program: dict[str, Any] | None = None
    bits: int = 0
    free: bool = False
    cost: str = ""  # what a priced job costs
    estimate: dict[str, Any] = field(default_factory=dict)  # as shown before its submit (§8.1 cost.estimate)
    job: str | None = None
    ended: str | None = None  # the last status read
    skip: str | None = None  # why it is not run (n/a or not run)
    na: bool = False
    cost_unknown: bool = False
    failed: str | None = None  # why it did not compile
    swaps: int = 0


class Stopped(Exception):  # noqa: N818 - the checker stops: the rest is not run
    pass


@dataclass
class Checker:
    """One run of the checker against one provider, opened by ``connect`` (a fresh ProviderClient)."""

    name: str
    connect: Callable[[], Any]
    yes: bool = False
    emit: Callable[[str], None] = print
    vectors: dict[str, Any] = field(default_factory=load_vectors)
    checks: list[Check] = field(default_factory=list)
    client: Any = None
    stopped: str | None = None
    description: Description | None = None
    estimates_given: bool = True
    #: a client sending another credential in place of the provider's (``None``: none at all)
    connect_with: Callable[[str | None], Any] | None = None
    #: a job charged past its estimate: its estimates no longer say what a job costs, so no further
    #: job is sent without ``yes``
    overcharged: str | None = None
    #: why the programs' jobs may cost (an estimate not free, or a cost unknown); None: all free
    jobs_not_free: str | None = None
    _secrets: tuple[str, ...] = ()
    #: (which credential, the operation) for each answer that quoted a credential
    _quoted: list[tuple[str, str]] = field(default_factory=list)
    #: the programs whose submit went out, in order (what Ctrl-C may leave at the provider)
    _sent: list[_Program] = field(default_factory=list)

    # ---- output ------------------------------------------------------------------------------------

    def add(self, name: str, status: Status, detail: str) -> None:
        check = Check(name, status, shown(redact(" ".join(detail.split()), self._secrets)))  # one line
        self.checks.append(check)
        self.emit(check.line())

    def summary(self) -> str:
        counts = {s: sum(c.status == s for c in self.checks) for s in ("pass", "FAIL", "skip", "n/a")}
        parts = [f"{counts['pass']} pass"]
        if counts["FAIL"]:
            parts.append(f"{counts['FAIL']} FAIL")
        if counts["skip"]:
            parts.append(
                f"{counts['skip']} not run (counted as failures: the run does not pass until they run)"
            )
        if counts["n/a"]:
            parts.append(f"{counts['n/a']} n/a (not for this device; not failures)")
        return f"{len(self.checks)} checks: " + ", ".join(parts)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.status in ("pass", "n/a") for c in self.checks)

    def left_running(self) -> list[str]:
        """Each job the checker sent whose end it did not see (what Ctrl-C leaves at the provider, never
        cancelled for it, §5.7): ``job J (programs/NAME)``, or a submit whose answer never came."""
        left = []
        for p in self._sent:
            name = f"programs/{p.vector['name']}"
            if p.job is None and p.ended is None:
                left.append(f"the submit of {name}, whose answer never came (the provider may have taken it)")
            elif p.job is not None and p.ended not in ("done", "failed", "cancelled"):
                left.append(f"job {job_shown(p.job)} ({name})")
        return left

    # ---- the client --------------------------------------------------------------------------------

    def _open(self) -> None:
        self.client = self.connect()
        self._secrets = tuple(getattr(self.client, "_secrets", ()) or ())

    def close(self) -> None:
        if self.client is not None:
            self._quoted += [("its own", op) for op in getattr(self.client, "quoted", ())]
            self.client.close()
            self.client = None

    def call(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(client)``; a transport that broke is opened again for the next check, and a provider
        that did not answer in time stops the checker."""
        if self.stopped:
            raise Stopped(self.stopped)
        try:
            return fn(self.client)
        except ProviderError as e:
            if e.code == "timeout":
                self.stopped = f"not run: {self.name} did not answer in time ({e.detail})"
            broken = getattr(self.client.transport, "_broken", None)
            if e.code in ("transport", "timeout") or broken:
                self.close()
                self._open()
            raise

    # ---- the run -------------------------------------------------------------------------------------

    def run(self) -> list[Check]:
        self._open()
        try:
            self._run()
        finally:
            self.close()
        return self.checks

    def _run(self) -> None:
        programs = [_Program(v) for v in self.vectors["programs"]]
        probe = [p for p in programs if p.vector.get("build") == "probe"][:1]
        described = self._describe()
        fills: dict[str, Any] = {}
        if described:
            self._compile(programs)
            self._estimates(programs)
            fills = self._fills(programs)
            self._programs(probe)  # §6: the first job on a new provider is the probe
            self._cancels(probe)  # on the connection that ran it (a process provider may keep no jobs)
        for m in self.vectors["messages"]:
            self._message(m, fills)
        for m in self.vectors["messages"]:
            if m["send"].get("op") == "estimate":
                self._message(m, fills, at="submit")
        credentials = self.vectors.get("credentials", [])
        for c in credentials:
            if "send" in c:
                self._credential(c)
        if described:
            rest = [p for p in programs if p not in probe]
            self._programs(rest)
            self._cancels(rest)
        else:
            for p in programs:
                self.add(f"programs/{p.vector['name']}", "skip", "not run: the provider gave no description")
        for c in credentials:
            if c.get("check") == "never_quoted":
                self._never_quoted(c)

    # ---- describe ----------------------------------------------------------------------------------

    def _describe(self) -> bool:
        try:
            d = self.call(lambda c: c.describe())
        except (ProviderError, Stopped) as e:
            self.add("describe/complete", "FAIL", str(e))
            self.add("describe/billing", "skip", "not run: no description")
            self.add("describe/stable", "skip", "not run: no description")
            return False
        problems = [p for p in d.problems() if not p.startswith("billing:")]
        try:
            basis = d.device().basis() if d.qubits else None
        except NoBasis as e:
            basis = None
            problems.append(str(e))
        self.description = d
        if problems:
            self.add("describe/complete", "FAIL", "; ".join(problems))
        else:
            runs = f"compiles to {basis}" if basis else "runs no circuits (qubits 0)"
            self.add(
                "describe/complete",
                "pass",
                f"{d.provider}, device {d.device_name}, {d.provenance}, {d.qubits} qubits, {runs}, "
                f"calibration {d.calibration.id if d.calibration else None}",
            )
        billing = d.billing
        if billing.kind == "refused":
            self.add("describe/billing", "FAIL", f"of none of §5.1's three forms: {billing.reason}")
        else:
            self.add("describe/billing", "pass", _kind_text(billing.kind, billing.text()))
        try:
            again = self.call(lambda c: c.describe())
        except (ProviderError, Stopped) as e:
            self.add("describe/stable", "FAIL", f"asked again: {e}")
        else:
            from qsolve.providers.sealing import describe_digest

            if describe_digest(again.answer) != describe_digest(d.answer):
                self.add("describe/stable", "FAIL", "asked again, the describe answer changed")
            else:
                self.add("describe/stable", "pass", "the same answer when asked again")
        return True

    # ---- compiling and estimating ------------------------------------------------------------------------

    def _runs_circuits(self) -> bool:
        d = self.description
        if d is None or not d.qubits:
            return False
        try:
            d.device().basis()
        except NoBasis:
            return False
        return True

    def _compile(self, programs: list[_Program]) -> None:
        from qsolve.providers.compiler import CompileError, compile_circuit

        d = self.description
        assert d is not None
        if not d.qubits:
            for p in programs:
                p.skip, p.na = "the device runs no circuits (§9: its circuit programs are not run)", True
            return
        if not self._runs_circuits():
            for p in programs:
                p.skip = "not run: the device's native gates make no basis of §4 to compile to"
            return
        device = d.device()
        width = probe_width(d)
        for p in programs:
            circuit = build_circuit(p.vector, width)
            p.bits = circuit.num_clbits
            if circuit.num_qubits > len(device.computational_qubits):
                p.skip, p.na = (
                    f"the program needs {circuit.num_qubits} qubits; the device has "
                    f"{len(device.computational_qubits)}",
                    True,
                )
                continue
            try:
                compiled = compile_circuit(circuit, device, seed=SEED)
            except CompileError as e:
                p.failed, p.skip = f"it does not compile to the device: {e}", "not run: it did not compile"
                continue
            p.program = compiled.program.model_dump(mode="json", exclude_none=True)
            p.swaps = compiled.swaps

    def _shots(self, p: _Program) -> int:
        shots = int(p.vector["shots"])
        d = self.description
        return min(shots, d.max_shots) if d is not None and d.max_shots else shots

    def _estimates(self, programs: list[_Program]) -> None:
        d = self.description
        assert d is not None
        billing_free = d.billing.kind == "free"
        for p in programs:
            name = f"estimates/{p.vector['name']}"
            if p.program is None:
                if p.failed:
                    self.add(name, "FAIL", p.failed)
                else:
                    self.add(name, "n/a" if p.na else "skip", p.skip or "")
                continue
            program, shots = p.program, self._shots(p)
            try:
                estimate = self.call(lambda c, program=program, shots=shots: c.estimate(program, shots))
            except Stopped as e:
                p.skip = str(e)
                self.add(name, "skip", str(e))
                continue
            except ProviderError as e:
                if e.code == "unsupported":
                    self.estimates_given = False
                    p.free, p.cost_unknown = billing_free, not billing_free
                    p.estimate = {"free": True} if billing_free else {"unknown": "no estimate"}
                    self.add(
                        name,
                        "pass",
                        "unsupported: the provider gives no estimate; the cost is its billing's "
                        f"({'free' if billing_free else 'unknown'})",
                    )
                else:
                    p.skip = "not run: its estimate failed"
                    self.add(name, "FAIL", str(e))
                continue
            p.free = estimate.kind == "free"
            p.cost_unknown = not estimate.cost_known
            p.estimate = estimate.shown()
            if estimate.kind == "priced":
                p.cost = f"not free ({estimate.text()})"
            if estimate.kind == "refused":
                self.add(name, "FAIL", f"{estimate.reason}: a cost unknown, no figure shown")
            else:
                self.add(name, "pass", f"{_kind_text(estimate.kind, estimate.text())} ({shots} shots)")
        compiled = [p for p in programs if p.program is not None]
        costly = [p for p in compiled if not p.free]
        if any(p.cost_unknown or p.skip for p in costly) or (not compiled and not billing_free):
            self.jobs_not_free = NOT_RUN_COST
        elif costly:
            self.jobs_not_free = f"not run: the jobs are {costly[0].cost}; --yes allows the spend"

    # ---- messages ---------------------------------------------------------------------------------------

    def _fills(self, programs: list[_Program]) -> dict[str, Any]:
        d = self.description
        assert d is not None
        probe = next((p.program for p in programs if p.vector.get("build") == "probe"), None)
        fills: dict[str, Any] = {}
        if probe is not None:
            fills["$probe"] = probe
        if self._runs_circuits():
            fills["$basis"] = d.device().basis()
            other = probe_in_another_basis(self.vectors, d)
            if other is not None:
                fills["$probe-in-another-basis"] = other
            fills.update(device_fills(d))
        return fills

    def _message(self, vector: dict[str, Any], fills: dict[str, Any], at: str | None = None) -> None:
        """The vector's message sent as it is, or (``at="submit"``) as a ``submit``: §4 has a provider
        refuse at submit what it refuses at estimate (§5.2: an estimate checks the job as submit would),
        and taking it there is a job the person may be billed for."""
        name, code = f"{at or 'messages'}/{vector['name']}", vector["code"]
        if self.stopped:
            return self.add(name, "skip", self.stopped)
        fills = dict(fills)
        tokens = set(_tokens(vector["send"]))
        if "gates_by_basis" in vector and "$basis" in fills:
            gates = vector["gates_by_basis"].get(fills["$basis"])
            if gates is None:
                return self.add(name, "n/a", f"no such program in the device's basis, {fills['$basis']}")
            fills["$gates"] = gates
            tokens |= set(_tokens(gates))
        needed = sorted(tokens - set(fills))
        if needed:
            d = self.description
            if d is None:
                return self.add(name, "skip", "not run: the provider gave no description to write it for")
            if not d.qubits:
                return self.add(name, "n/a", "the device runs no circuits: no program to send")
            if self._runs_circuits() and all(t in NOT_FOR_THE_DEVICE for t in needed):
                return self.add(name, "n/a", NOT_FOR_THE_DEVICE[needed[0]])
            return self.add(name, "skip", "not run: no program was compiled for the device to send")
        message = substitute(substitute(vector["send"], fills), fills)  # $gates holds places to fill
        if at == "submit" and not self.estimates_given:
            return self.add(
                name, "n/a", f"messages/{vector['name']} went to submit: the provider gives no estimate"
            )
        if at == "submit" or (
            "program" in message and message.get("op") == "estimate" and not self.estimates_given
        ):
            why = self._why_not_sent()
            if why is not None:
                return self.add(name, "skip", why)
            message["op"] = "submit"
        try:
            answer = self.call(lambda c: c.raw(message))
        except (ProviderError, Stopped) as e:
            return self.add(name, "skip" if isinstance(e, Stopped) else "FAIL", str(e))
        try:
            taken = read_envelope(answer)
        except ProviderAnswerError as e:
            if e.code == code:
                return self.add(name, "pass", code)
            d = self.description
            if e.code == vector.get("or_when_it_cannot_cancel") and d is not None and d.cancels is not True:
                said = "its describe says so" if d.cancels is False else "its describe says nothing of it"
                return self.add(name, "pass", f"{e.code}: it cannot cancel ({said})")
            return self.add(name, "FAIL", f"answered {e.code} ({e.message[:120]}), not {code}")
        except AnswerRefused as e:
            return self.add(name, "FAIL", f"the answer does not read ({e.reason}); {code} was due")
        if message.get("op") == "submit" and isinstance(taken.get("job"), str):
            job = taken["job"][:80]
            return self.add(
                name,
                "FAIL",
                f"submit took it as job {job} ({self._cancel_taken(job)}); it should refuse it, {code}",
            )
        return self.add(name, "FAIL", f'answered "ok": true; it should refuse it, {code}')

    def _cancel_taken(self, job: str) -> str:
        """A job taken that should not have been, asked to cancel: what the answer was."""
        try:
            return f"cancel answered {self.call(lambda c: c.cancel(job)).status}"
        except ProviderError as e:
            return f"cancel answered {e.code}"
        except Stopped:
            return "not asked to cancel: the checker stopped"

    def _why_not_sent(self) -> str | None:
        """Why a message a provider may take as a job, and bill, is not sent (None: it is sent): the spend
        is allowed with ``yes``, else only while every estimate says free and no job was charged past
        its estimate."""
        if self.yes:
            return None
        if self.overcharged:
            return f"not run: {self.overcharged}; --yes allows the spend"
        if self.description is None:
            return "not run: the provider gave no description of what a job costs; --yes allows the spend"
        return self.jobs_not_free

    # ---- credentials --------------------------------------------------------------------------------

    def _credential(self, vector: dict[str, Any]) -> None:
        """A message sent with another credential than the provider's (or none): refused with its code."""
        name, code = f"credentials/{vector['name']}", vector["code"]
        if self.stopped:
            return self.add(name, "skip", self.stopped)
        if not self._secrets:
            return self.add(name, "n/a", "the provider has no credential (its entry has none)")
        if self.connect_with is None:
            return self.add(name, "skip", "not run: the checker was given no way to send another credential")
        sent = vector.get("credential")
        credential = f"qsolve-conformance-{secrets.token_hex(12)}" if sent == "$wrong-credential" else None
        what = "a wrong credential" if credential else "no credential"
        client = None
        try:
            client = self.connect_with(credential)
            answer = client.raw(vector["send"])
        except ProviderError as e:
            return self.add(name, "FAIL", f"with {what}: {e}")
        finally:
            if client is not None:
                self._quoted += [("the wrong one" if credential else "its own", op) for op in client.quoted]
                client.close()
        try:
            read_envelope(answer)
        except ProviderAnswerError as e:
            if e.code == code:
                return self.add(name, "pass", f"{code} with {what}")
            return self.add(name, "FAIL", f"with {what}: answered {e.code} ({e.message[:120]}), not {code}")
        except AnswerRefused as e:
            why = f"the answer does not read ({e.reason}); {code} was due"
            return self.add(name, "FAIL", f"with {what}: {why}")
        return self.add(name, "FAIL", f'with {what}: answered "ok": true; it takes anyone\'s messages')

    def _never_quoted(self, vector: dict[str, Any]) -> None:
        name = f"credentials/{vector['name']}"
        self.close()  # the last client's answers counted too
        if self.stopped:
            return self.add(name, "skip", self.stopped)
        if not self._secrets:
            return self.add(name, "n/a", "the provider has no credential (its entry has none)")
        if not self._quoted:
            return self.add(name, "pass", "no answer quoted a credential")
        which = sorted({f"{op} quoted {whose}" for whose, op in self._quoted})
        return self.add(
            name, "FAIL", f"answers quoted the credential they were sent (§3): {'; '.join(which)}"
        )

    # ---- programs -----------------------------------------------------------------------------------

    def _programs(self, programs: list[_Program]) -> None:
        runnable = [p for p in programs if p.program is not None and p.skip is None]
        costly = [p for p in runnable if not p.free]
        why_not = None
        if costly and not self.yes:
            unknown = any(p.cost_unknown for p in costly)
            why_not = (
                NOT_RUN_COST if unknown else f"not run: the jobs are {costly[0].cost}; --yes allows the spend"
            )
        reference = self._reference()
        for p in programs:
            name = f"programs/{p.vector['name']}"
            if p.program is None or p.skip is not None:
                self.add(name, "n/a" if p.na else "skip", p.skip or "not run")
                continue
            if why_not is None and self.overcharged and not self.yes:
                why_not = self._why_not_sent()
            if why_not is not None:
                self.add(name, "skip", why_not)
                continue
            counts = self._run_program(name, p)
            if reference is not None and counts is not None:
                want = reference.get(p.vector["name"])
                ref_name = f"reference/{p.vector['name']}"
                if want is None:
                    self.add(ref_name, "n/a", "the vectors hold no counts for it")
                elif {k: v for k, v in counts.items() if v} == want:
                    self.add(ref_name, "pass", f"exactly the vectors' counts at seed {SEED}")
                else:
                    self.add(ref_name, "FAIL", f"counts {_short(counts)}, not the vectors' {_short(want)}")

    def _reference(self) -> dict[str, dict[str, int]] | None:
        """The vectors' counts for this device, when the provider is the reference on one of its devices."""
        d, held = self.description, self.vectors.get("reference", {})
        if d is None or d.provider != held.get("provider"):
            return None
        return held.get("devices", {}).get(d.device_name)

    def _run_program(self, name: str, p: _Program) -> dict[str, int] | None:
        program, shots = p.program, self._shots(p)
        assert program is not None
        self._sent.append(p)
        try:
            p.job = self.call(lambda c: c.submit(program, shots, seed=SEED))
        except (ProviderError, Stopped) as e:
            p.ended = "not taken"  # refused, or not sent: nothing of it runs on
            self.add(name, "skip" if isinstance(e, Stopped) else "FAIL", f"submit: {e}")
            return None
        try:
            status = self._follow(p)
        except (ProviderError, Stopped) as e:
            self.add(name, "skip" if isinstance(e, Stopped) else "FAIL", f"job {p.job}: {e}")
            return None
        if status.status != "done":
            reason = f": {status.reason}" if status.reason else ""
            self.add(name, "FAIL", f"job {p.job} {status.status}{reason}")
            return None
        try:
            result = self.call(lambda c: c.result(p.job, shots, bits=p.bits))
            again = self.call(lambda c: c.result(p.job, shots, bits=p.bits))
        except (ProviderError, Stopped) as e:
            self.add(name, "skip" if isinstance(e, Stopped) else "FAIL", f"job {p.job}: {e}")
            return None
        self._charged(p, result)
        if again.counts != result.counts:
            self.add(name, "FAIL", f"job {p.job}: its result asked twice gave other counts (§5.5)")
            return None
        kept = result.kept_shots
        broken = judge(p.vector["expect"], result.counts, kept, p.bits)
        shown = shown_counts(result.counts, kept)
        if p.swaps:
            shown += f" (routed: {p.swaps} swap{'s' * (p.swaps > 1)})"
        if broken:
            self.add(name, "FAIL", f"{'; '.join(broken)} ({shown})")
        else:
            self.add(name, "pass", shown)
        return result.counts

    def _charged(self, p: _Program, result: Any) -> None:
        """``charged/``: what the result says the job cost held to the estimate shown before its submit
        (§5.5, §7): a job estimated free charged nothing, a priced one no more than its amount (unless
        ``at_least``), in its currency. A charge past it stops the jobs that follow unless ``yes``."""
        from qsolve.providers.jobs import estimate_text, past_estimate

        name, shown = f"charged/{p.vector['name']}", estimate_text(p.estimate)
        if result.charged is None:
            return self.add(name, "pass", f"job {p.job}: no charge stated (its estimate: {shown})")
        charged = result.charged.model_dump()
        said = f"job {p.job}: charged {charged['amount']} {charged['currency']}"
        why = past_estimate(p.estimate, charged)
        if not why:
            return self.add(name, "pass", f"{said} (its estimate: {shown})")
        self.overcharged = self.overcharged or (
            f"job {p.job} was charged past its estimate, so its estimates do not say what a job costs"
        )
        self.add(
            name, "FAIL", f"{said}, {why} (§7: a job costs no more than the estimate shown before its submit)"
        )

    def _follow(self, p: _Program):
        deadline = time.monotonic() + WAIT_S
        wait = 0.05
        while True:
            status = self.call(lambda c: c.status(p.job))
            p.ended = status.status
            if status.ended:
                return status
            if time.monotonic() > deadline:
                raise Stopped(f"not run to its end: still {status.status} after {WAIT_S:g} s")
            time.sleep(wait)
            wait = min(wait * 2, 2.0)

    # ---- cancel -----------------------------------------------------------------------------------------

    def _cancels(self, programs: list[_Program]) -> None:
        d = self.description
        cancels = None if d is None else d.cancels
        for p in programs:
            if p.job is None:
                continue
            name = f"cancel/{p.vector['name']}"
            try:
                answer = self.call(lambda c, job=p.job: c.cancel(job))
            except Stopped as e:
                self.add(name, "skip", str(e))
                continue
            except ProviderError as e:
                self.add(name, *read_cancel(p.ended, cancels, code=e.code or "", detail=str(e), job=p.job))
                continue
            read = read_cancel(p.ended, cancels, status=answer.status, reason=answer.reason, job=p.job)
            self.add(name, *read)


def read_cancel(
    ended: str | None,
    cancels: bool | None,
    *,
    status: str | None = None,
    reason: str | None = None,
    code: str | None = None,
    detail: str = "",
    job: str = "the job",
) -> tuple[Status, str]:
    """A cancel's answer held to §5.6, for a job that had ``ended`` so (None or ``running``: not yet) on
    a provider whose describe says ``cancels`` (None: nothing): ``cancelled``; ``done`` for a job that
    had finished; ``failed`` with its reason for one that had failed; or ``unsupported`` from a provider
    that cannot cancel, whether or not its describe says so (``cancels`` is optional, §5.1), but not
    from one whose describe says it cancels. ``code`` is the error's code when the answer is one."""
    if code is not None:
        if code == "unsupported" and cancels is False:
            return "pass", "unsupported: the provider cannot cancel (its describe says so)"
        if code == "unsupported" and cancels is None:
            return "pass", "unsupported: the provider cannot cancel (its describe does not say cancels)"
        if code == "unsupported":
            return "FAIL", "answered unsupported, and its describe says cancels true"
        return "FAIL", detail or f"answered {code}"
    if ended in ("done", "failed", "cancelled") and status != ended:
        return "FAIL", f"job {job} had {ended}: cancel answered {status}, not {ended}"
    if status == "failed" and not reason:
        return "FAIL", f"job {job}: cancel answered failed with no reason"
    how = {"done": "the job had finished", "failed": f"it had failed: {reason}"}
    return "pass", f"{status} ({how.get(status or '', 'cancelled')})"


def _tokens(value: Any) -> Iterator[str]:
    if isinstance(value, str) and value.startswith("$"):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tokens(v)
    elif isinstance(value, list):
        for v in value:
            yield from _tokens(v)


def _short(counts: dict[str, int], most: int = 4) -> str:
    top = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))[:most]
    return "{" + ", ".join(f"{k}: {v}" for k, v in top) + (", …" if len(counts) > most else "") + "}"


def _kind_text(kind: str, text: str) -> str:
    return kind if text == kind else f"{kind}: {text}"
