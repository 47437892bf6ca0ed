"""Calibration experiments as circuits on one qubit of a fake device, run on qiskit-aer with its noise.

A qubit of ``fake:<device>[@<scale>]`` is simulated alone, with the noise a ``fake:`` target gives it
(:mod:`qsolve.targets.fake`: every error times the scale, capped, T1 and T2 divided by it, the device's
own asymmetric readout errors) and, unlike circuits of workflows, idle decoherence: qiskit-aer's
``NoiseModel.from_backend`` turns each ``Delay`` into a thermal-relaxation error of its duration (its
``RelaxationNoisePass``). The device comes from :func:`qsolve.targets.devices.device`, cached per machine.

Each experiment is one class: the plan a healthy run uses (its sweep chosen from the qubit's own T1 and
T2, so that it covers several decay constants), the circuits of a plan, the analysis (a fit of
:mod:`qsolve.calibration.fitting`) and the figure (:mod:`qsolve.calibration.figures`). A fault
(:mod:`qsolve.calibration.faults`) is a change to the plan.

    CheckT1                 X, delay, measure: P(1) decays as exp(−t/T1)
    CheckT2Echo             X/2, delay/2, X, delay/2, X/2: the echo decays as exp(−t/T2)
    CheckRamsey             X/2, delay, phase 2πΔt, X/2: fringes at the detuning Δ, damped by T2*
    CheckRabi               RX(π·a/a_π) for drive amplitudes a: P(1) oscillates, a_π the π amplitude
    ReadoutClassification   prepare 0 and 1, measure: the assignment matrix and fidelity

The fake devices have no pulse calibration, so the drive of CheckRabi is modelled: amplitude ``a``
(arbitrary units) rotates the qubit by ``π·a/a_π``, with ``a_π`` the qubit's :attr:`Qubit.pi_amplitude`
(0.08 to 0.14, fixed by the qubit's index).
"""

from __future__ import annotations

import math
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from qiskit import QuantumCircuit

from qsolve.calibration import fitting
from qsolve.calibration.task_result import Fit, Output, Sweep, qid_of

US = "us"  # microseconds: the unit of every delay, T1, T2 and interval here
READOUT_CAP = 0.5
_FAKE = re.compile(r"fake:([A-Za-z0-9_]+)(?:@(.+))?")


class UnknownChip(ValueError):
    """A chip that names no fake device, or a qubit it does not have."""


@dataclass(frozen=True)
class Qubit:
    """One qubit as the experiments see it: its coherence, gate and readout errors, scaled."""

    chip: str
    index: int
    t1: float  # µs
    t2: float  # µs
    readout: tuple[float, float]  # (P(1|0), P(0|1))
    gate_errors: dict[str, tuple[float, float]] = field(repr=False)  # name -> (error, duration in s)
    measure_duration: float | None
    dt: float | None

    @property
    def qid(self) -> str:
        return qid_of(self.index)

    @property
    def pi_amplitude(self) -> float:
        """The modelled drive amplitude of a π rotation (arbitrary units)."""
        return round(0.08 + 0.015 * (self.index % 5), 4)


def parse_chip(chip: str) -> tuple[str, float]:
    """``fake:fez@1.6`` -> ``("fez", 1.6)``; anything else is refused."""
    from qsolve.targets import UnknownTarget, check_target

    m = _FAKE.fullmatch(chip)
    if not m:
        raise UnknownChip(f"{chip!r}: calibration runs on fake:<device>[@<scale>] (e.g. fake:fez)")
    try:
        check_target(chip)
    except UnknownTarget as e:
        raise UnknownChip(str(e)) from None
    return m.group(1), float(m.group(2) or 1.0)


def chip_entities(chip: str) -> tuple[list[str], list[str]]:
    """The qids of a ``fake:`` chip's qubits (``Q00`` …) and of its couplings (``Q03-Q04``, each pair
    once, the lower qubit first), in order; ``([], [])`` for a chip this cannot name (an imported one)."""
    from qsolve.targets import UnknownTarget
    from qsolve.targets.devices import device

    try:
        name, _ = parse_chip(chip)
        target = device(name).target
    except (UnknownChip, UnknownTarget):
        return [], []
    qubits = [qid_of(i) for i in range(target.num_qubits)]
    pairs = sorted({(min(a, b), max(a, b)) for a, b in target.build_coupling_map().get_edges() if a != b})
    return qubits, [qid_of(a, b) for a, b in pairs]


def open_qubit(chip: str, index: int) -> Qubit:
    from qsolve.targets import UnknownTarget
    from qsolve.targets.devices import device

    name, scale = parse_chip(chip)
    try:
        dev = device(name)
    except UnknownTarget as e:
        raise UnknownChip(str(e)) from None
    target = dev.target
    if not 0 <= index < target.num_qubits:
        raise UnknownChip(f"{chip} has qubits 0 to {target.num_qubits - 1}, not {index}")
    props = target.qubit_properties[index]
    t1 = props.t1 / scale
    t2 = min(props.t2, 2 * props.t1) / scale  # T2 ≤ 2·T1, as qiskit-aer truncates it
    gates = {}
    for gate in ("sx", "x"):
        ip = target[gate][(index,)]
        gates[gate] = (min((ip.error or 0.0) * scale, 2 / 3), ip.duration or 0.0)
    measure = target["measure"].get((index,))
    return Qubit(
        chip=chip,
        index=index,
        t1=t1 * 1e6,
        t2=t2 * 1e6,
        readout=tuple(min(p * scale, READOUT_CAP) for p in dev.readout[index]),
        gate_errors=gates,
        measure_duration=measure.duration if measure is not None else None,
        dt=target.dt,
    )


@dataclass(frozen=True)
class Plan:
    """How a run is taken: its sweep, shots and interval, and the settings a fault may change."""

    sweep: Sweep | None
    shots: int
    interval: float  # µs between shots
    detuning: float = 0.0  # MHz: CheckRamsey's artificial detuning
    drive: float = 1.0  # the share of the drive that reaches the qubit (CheckRabi)
    readout: tuple[float, float] | None = None  # readout errors in place of the qubit's own

    def with_sweep(self, **changes: float) -> Plan:
        s = self.sweep
        values = {"start": s.start, "stop": s.stop, "points": s.points} | changes
        return replace(self, sweep=Sweep.linear(s.parameter, s.unit, **values))


@dataclass(frozen=True)
class Analysis:
    """What a run gave: the points, the fit (or why there is none), the outputs, the status."""

    x: np.ndarray
    y: np.ndarray
    fit: fitting.FitResult | None
    outputs: dict[str, Output]
    status: str
    message: str
    summary: Fit | None


def nice(value: float) -> float:
    """Rounded up to two significant digits, as a person would choose a sweep's end: 244 -> 250."""
    if value <= 0:
        return value
    power = 10 ** (math.floor(math.log10(value)) - 1)
    return math.ceil(round(value / power, 9)) * power


def _out(value: float, unit: str, error: float | None) -> Output:
    return Output(value=value, unit=unit, error=error if error is None or math.isfinite(error) else None)


class Experiment(ABC):
    name: str
    #: the outputs, in order (the first is the headline), with their units
    outputs: tuple[tuple[str, str], ...]
    shots = 1000
    #: whether its figure draws a fitted curve (the fit question asks about it)
    fitted = True

    @abstractmethod
    def plan(self, qubit: Qubit) -> Plan:
        """The healthy plan: its sweep chosen from the qubit's own coherence."""

    @abstractmethod
    def circuits(self, plan: Plan, qubit: Qubit) -> list[QuantumCircuit]:
        """One circuit per point of the sweep, measuring into clbit 0."""

    @abstractmethod
    def analyse(self, plan: Plan, qubit: Qubit, p1: np.ndarray) -> Analysis:
        """Fit the measured P(1) of each circuit."""

    @abstractmethod
    def figure(self, plan: Plan, qubit: Qubit, analysis: Analysis) -> bytes:
        """The PNG a person (or a model) judges."""

    def _fitted(
        self, model: fitting.Model, plan: Plan, p1: np.ndarray, outputs
    ) -> tuple[fitting.FitResult | None, dict[str, Output], str, str]:
        """Fit ``model``; ``outputs(fit)`` gives the outputs. A fit that fails fails the run."""
        x = np.asarray(plan.sweep.values())
        try:
            result = fitting.fit(model, x, p1, plan.shots)
        except fitting.FitFailed as e:
            return None, {}, "failed", f"fit failed: {e}"
        return result, outputs(result), "completed", "Successfully finished"


def _summary(result: fitting.FitResult | None, model: fitting.Model) -> Fit:
    if result is None:
        return Fit(model=model.formula)
    return Fit(model=model.formula, r2=result.r2, reduced_chi2=result.reduced_chi2, dof=result.dof)


def _interval(sweep_stop: float, t1: float) -> float:
    """The wait between shots: the longest sequence plus five T1, so each shot starts in |0⟩."""
    return nice(sweep_stop + 5 * t1)


class _Swept(Experiment):
    """An experiment drawn as its sweep's points and the fitted curve, with the headline fit in the
    legend: ``fit_label`` is (what it is called, its output, its unit)."""

    xlabel: str
    ylabel: str
    fit_label: tuple[str, str, str]

    def figure(self, plan: Plan, qubit: Qubit, analysis: Analysis) -> bytes:
        from qsolve.calibration.figures import sweep_figure

        label, output, unit = self.fit_label
        legend = note = None
        curve = analysis.fit if drawn(analysis, plan.shots) else None
        if curve is not None:
            legend = fit_legend(label, analysis.outputs[output], unit, plan)
        elif analysis.fit is not None:  # a fit of noise: no curve is drawn, and the figure says why
            ratio = signal_to_noise(analysis, plan.shots)
            note = f"no fit: no signal above the noise (signal/noise {ratio:.1f})"
        return sweep_figure(
            f"{self.name} — {qubit.qid} ({qubit.chip})",
            analysis.x,
            analysis.y,
            plan.shots,
            xlabel=self.xlabel,
            ylabel=self.ylabel,
            curve=curve,
            legend=legend,
            note=note,
        )


class _Decay(_Swept):
    """An exponential decay in the delay: CheckT1 and CheckT2Echo."""

    xlabel = "Delay (µs)"

    @property
    def fit_label(self) -> tuple[str, str, str]:
        return (self.label, self.constant, "µs")

    constant: str  # "t1" or "t2_echo"
    label: str  # "T1"
    span: float  # decay constants a healthy sweep covers
    ylabel: str

    def coherence(self, qubit: Qubit) -> float:
        return qubit.t1

    def plan(self, qubit: Qubit) -> Plan:
        stop = nice(self.span * self.coherence(qubit))
        return Plan(Sweep.linear("delay", US, 0.0, stop, 31), self.shots, _interval(stop, qubit.t1))

    def analyse(self, plan: Plan, qubit: Qubit, p1: np.ndarray) -> Analysis:
        def outputs(r: fitting.FitResult) -> dict[str, Output]:
            return {self.constant: _out(r.values["tau"], US, r.errors["tau"])}

        result, outs, status, message = self._fitted(fitting.EXP_DECAY, plan, p1, outputs)
        x = np.asarray(plan.sweep.values())
        return Analysis(x, p1, result, outs, status, message, _summary(result, fitting.EXP_DECAY))


def _value(out: Output) -> str:
    return f"{out.value:.3g} ± {out.error:.2g}" if out.error is not None else f"{out.value:.3g}"


#: a fitted curve is drawn only when its swing (2|A|) is this many times the points' shot noise
MIN_SIGNAL_TO_NOISE = 5.0
#: a relative standard error below this is a degenerate covariance, not a measurement
DEGENERATE_RELATIVE_ERROR = 1e-6
#: a fitted time constant beyond this many sweep spans is not determined by the sweep
MAX_SPANS = 100.0


def signal_to_noise(analysis: Analysis, shots: int) -> float:
    """The fitted swing (2|A|) over the points' mean shot noise (binomial, ``shots`` shots)."""
    if analysis.fit is None:
        return 0.0
    amplitude = abs(float(analysis.fit.values.get("amplitude", 0.0)))
    noise = float(np.mean(fitting.binomial_sigma(analysis.y, shots)))
    return 2 * amplitude / noise if noise > 0 else math.inf


def drawn(analysis: Analysis, shots: int) -> bool:
    """Whether the figure draws the fitted curve: a fit there is, of a signal above the noise
    (:data:`MIN_SIGNAL_TO_NOISE`). An undriven Rabi's flat points get no curve: "No fit"."""
    return analysis.fit is not None and signal_to_noise(analysis, shots) >= MIN_SIGNAL_TO_NOISE


def determined(out: Output, plan: Plan, unit: str) -> bool:
    """A fitted value the figure may state: a finite, non-degenerate uncertainty, and for a time
    constant no more than :data:`MAX_SPANS` sweep spans."""
    if out.error is None or not math.isfinite(out.error) or not math.isfinite(out.value) or out.value == 0:
        return False
    if out.error / abs(out.value) < DEGENERATE_RELATIVE_ERROR:
        return False
    if unit == "µs" and plan.sweep is not None and plan.sweep.stop > plan.sweep.start:
        return out.value <= MAX_SPANS * (plan.sweep.stop - plan.sweep.start)
    return True


def fit_legend(label: str, out: Output, unit: str, plan: Plan) -> str:
    """``fit: T1 = 215 ± 6.5 µs``; a value the sweep does not determine (a degenerate fit) is not
    printed as if it were measured: ``fit: T2* not determined by this sweep``."""
    if not determined(out, plan, unit):
        return f"fit: {label} not determined by this sweep"
    return f"fit: {label} = {_value(out)} {unit}".rstrip()


class CheckT1(_Decay):
    name = "CheckT1"
    outputs = (("t1", US),)
    constant, label, span = "t1", "T1", 5.0
    ylabel = "Excited-state population P(1)"

    def circuits(self, plan: Plan, qubit: Qubit) -> list[QuantumCircuit]:
        out = []
        for t in plan.sweep.values():
            c = QuantumCircuit(1, 1, name=f"t1_{t:g}")
            c.x(0)
            c.delay(t, 0, unit=US)
            c.measure(0, 0)
            out.append(c)
        return out


class CheckT2Echo(_Decay):
    name = "CheckT2Echo"
    outputs = (("t2_echo", US),)
    constant, label, span = "t2_echo", "T2 echo", 4.0
    ylabel = "Echo population P(1)"

    def coherence(self, qubit: Qubit) -> float:
        return qubit.t2

    def circuits(self, plan: Plan, qubit: Qubit) -> list[QuantumCircuit]:
        out = []
        for t in plan.sweep.values():
            c = QuantumCircuit(1, 1, name=f"echo_{t:g}")
            c.sx(0)
            c.delay(t / 2, 0, unit=US)
            c.x(0)
            c.delay(t / 2, 0, unit=US)
            c.rz(math.pi, 0)  # so that the echo ends in |1⟩ and decays to 1/2
            c.sx(0)
            c.measure(0, 0)
            out.append(c)
        return out


class CheckRamsey(_Swept):
    name = "CheckRamsey"
    outputs = (("t2_star", US), ("detuning", "MHz"))
    xlabel, ylabel, fit_label = "Delay (µs)", "Population P(1)", ("T2*", "t2_star", "µs")
    fringes = 5  # over a healthy sweep: eight points a fringe

    def plan(self, qubit: Qubit) -> Plan:
        stop = nice(3 * qubit.t2)
        sweep = Sweep.linear("delay", US, 0.0, stop, 41)
        return Plan(sweep, self.shots, _interval(stop, qubit.t1), detuning=round(self.fringes / stop, 6))

    def circuits(self, plan: Plan, qubit: Qubit) -> list[QuantumCircuit]:
        out = []
        for t in plan.sweep.values():
            c = QuantumCircuit(1, 1, name=f"ramsey_{t:g}")
            c.sx(0)
            c.delay(t, 0, unit=US)
            c.rz(2 * math.pi * plan.detuning * t, 0)  # the artificial detuning, as a phase (MHz × µs)
            c.sx(0)
            c.measure(0, 0)
            out.append(c)
        return out

    def analyse(self, plan: Plan, qubit: Qubit, p1: np.ndarray) -> Analysis:
        def outputs(r: fitting.FitResult) -> dict[str, Output]:
            return {
                "t2_star": _out(r.values["tau"], US, r.errors["tau"]),
                "detuning": _out(r.values["frequency"], "MHz", r.errors["frequency"]),
            }

        result, outs, status, message = self._fitted(fitting.DAMPED_COSINE, plan, p1, outputs)
        x = np.asarray(plan.sweep.values())
        return Analysis(x, p1, result, outs, status, message, _summary(result, fitting.DAMPED_COSINE))


class CheckRabi(_Swept):
    name = "CheckRabi"
    outputs = (("pi_amplitude", "a.u."), ("oscillations", ""))
    xlabel, ylabel = "Drive amplitude (a.u.)", "Excited-state population P(1)"
    fit_label = ("π amplitude", "pi_amplitude", "a.u.")

    def plan(self, qubit: Qubit) -> Plan:
        return Plan(Sweep.linear("drive_amplitude", "a.u.", 0.0, 0.4, 31), self.shots, _interval(0, qubit.t1))

    def circuits(self, plan: Plan, qubit: Qubit) -> list[QuantumCircuit]:
        out = []
        for a in plan.sweep.values():
            theta = math.pi * plan.drive * a / qubit.pi_amplitude
            c = QuantumCircuit(1, 1, name=f"rabi_{a:g}")
            c.rz(math.pi / 2, 0)  # RX(θ) = RZ(π/2)·SX·RZ(θ+π)·SX·RZ(π/2), in the device's basis
            c.sx(0)
            c.rz(theta + math.pi, 0)
            c.sx(0)
            c.rz(math.pi / 2, 0)
            c.measure(0, 0)
            out.append(c)
        return out

    def analyse(self, plan: Plan, qubit: Qubit, p1: np.ndarray) -> Analysis:
        span = plan.sweep.stop - plan.sweep.start

        def outputs(r: fitting.FitResult) -> dict[str, Output]:
            f, phase = r.values["frequency"], r.values["phase"]
            if f <= 0:
                raise fitting.FitFailed("no oscillation")
            pi_amp = ((-phase) % (2 * math.pi)) / (2 * math.pi * f)  # the first maximum of P(1)
            ef, ep = r.errors["frequency"], r.errors["phase"]
            error = None
            if ef is not None and ep is not None:
                error = math.hypot(pi_amp * ef / f, ep / (2 * math.pi * f))
            return {
                "pi_amplitude": _out(pi_amp, "a.u.", error),
                "oscillations": Output(value=float(math.floor(span * f + 1e-9)), unit=""),
            }

        try:
            result, outs, status, message = self._fitted(fitting.COSINE, plan, p1, outputs)
        except fitting.FitFailed as e:
            result, outs, status, message = None, {}, "failed", f"fit failed: {e}"
        x = np.asarray(plan.sweep.values())
        return Analysis(x, p1, result, outs, status, message, _summary(result, fitting.COSINE))


class ReadoutClassification(Experiment):
    name = "ReadoutClassification"
    outputs = (("average_readout_fidelity", ""), ("readout_fidelity_0", ""), ("readout_fidelity_1", ""))
    shots = 2000
    fitted = False

    def plan(self, qubit: Qubit) -> Plan:
        return Plan(None, self.shots, _interval(0, qubit.t1))

    def circuits(self, plan: Plan, qubit: Qubit) -> list[QuantumCircuit]:
        ground = QuantumCircuit(1, 1, name="prepare_0")
        ground.measure(0, 0)
        excited = QuantumCircuit(1, 1, name="prepare_1")
        excited.x(0)
        excited.measure(0, 0)
        return [ground, excited]

    def analyse(self, plan: Plan, qubit: Qubit, p1: np.ndarray) -> Analysis:
        f0, f1 = 1 - float(p1[0]), float(p1[1])
        n = plan.shots

        def err(p: float) -> float:
            return math.sqrt(max(p * (1 - p), 0.25 / n) / n)

        outputs = {
            "average_readout_fidelity": _out((f0 + f1) / 2, "", math.hypot(err(f0), err(f1)) / 2),
            "readout_fidelity_0": _out(f0, "", err(f0)),
            "readout_fidelity_1": _out(f1, "", err(f1)),
        }
        x = np.array([0.0, 1.0])
        return Analysis(x, np.asarray(p1), None, outputs, "completed", "Successfully finished", None)

    def figure(self, plan: Plan, qubit: Qubit, analysis: Analysis) -> bytes:
        from qsolve.calibration.figures import matrix_figure

        p1_0, p1_1 = (float(v) for v in analysis.y)
        matrix = [[1 - p1_0, p1_0], [1 - p1_1, p1_1]]
        fidelity = analysis.outputs["average_readout_fidelity"].value
        return matrix_figure(
            f"{self.name} — {qubit.qid} ({qubit.chip})",
            matrix,
            rows=["prepared |0⟩", "prepared |1⟩"],
            columns=["measured 0", "measured 1"],
            note=f"assignment fidelity {fidelity:.3f} ({plan.shots} shots per state)",
        )


#: outputs that count something: whole numbers (their knowledge says "an integer")
INTEGER_OUTPUTS = frozenset({"oscillations"})

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e for e in (CheckT1(), CheckRamsey(), CheckRabi(), CheckT2Echo(), ReadoutClassification())
}
TASKS = tuple(EXPERIMENTS)


def experiment(task: str) -> Experiment:
    try:
        return EXPERIMENTS[task]
    except KeyError:
        raise KeyError(f"no calibration task {task!r}: one of {', '.join(TASKS)}") from None


# the simulator of one qubit

_local = threading.local()  # one simulator per qubit and thread: runs in threads share none


def run(circuits: Sequence[QuantumCircuit], qubit: Qubit, plan: Plan, seed: int) -> np.ndarray:
    """P(1) of each circuit, ``plan.shots`` shots each, on the qubit's noisy simulator."""
    readout = plan.readout or qubit.readout
    simulator = _simulator(qubit, readout)
    result = simulator.run(list(circuits), shots=plan.shots, seed_simulator=seed).result()
    return np.array([result.get_counts(i).get("1", 0) / plan.shots for i in range(len(circuits))])


def _simulator(qubit: Qubit, readout: tuple[float, float]):
    simulators = _local.__dict__.setdefault("simulators", {})
    key = (qubit.chip, qubit.index, readout)
    if key not in simulators:
        simulators[key] = _build_simulator(qubit, readout)
    return simulators[key]


def _build_simulator(qubit: Qubit, readout: tuple[float, float]):
    """The qubit alone as a one-qubit backend, its noise model from qiskit-aer's ``from_backend`` (which
    adds thermal relaxation to delays), its readout errors the device's own, asymmetric."""
    from qiskit.circuit import Delay, Parameter
    from qiskit.circuit.library import Measure, RZGate, SXGate, XGate
    from qiskit.providers import BackendV2, Options
    from qiskit.transpiler import InstructionProperties, QubitProperties, Target
    from qiskit_aer import AerSimulator
    from qiskit_aer.noise import NoiseModel, ReadoutError

    from qsolve.targets.base import SIMULATION_MB

    target = Target(
        num_qubits=1, dt=qubit.dt, qubit_properties=[QubitProperties(t1=qubit.t1 * 1e-6, t2=qubit.t2 * 1e-6)]
    )
    for name, gate in (("sx", SXGate()), ("x", XGate())):
        error, duration = qubit.gate_errors[name]
        target.add_instruction(gate, {(0,): InstructionProperties(duration=duration, error=error)})
    target.add_instruction(RZGate(Parameter("θ")), {(0,): InstructionProperties(duration=0.0, error=0.0)})
    target.add_instruction(Measure(), {(0,): InstructionProperties(duration=qubit.measure_duration)})
    target.add_instruction(Delay(Parameter("t")), {(0,): None})

    class OneQubit(BackendV2):
        @property
        def target(self) -> Target:
            return target

        @property
        def max_circuits(self) -> None:
            return None

        @classmethod
        def _default_options(cls) -> Options:
            return Options()

        def run(self, run_input, **options):  # only its description is used
            raise NotImplementedError

    model = NoiseModel.from_backend(OneQubit(name=f"{qubit.chip}:{qubit.qid}"), readout_error=False)
    p1_given_0, p0_given_1 = readout
    model.add_readout_error(ReadoutError([[1 - p1_given_0, p1_given_0], [p0_given_1, 1 - p0_given_1]]), [0])
    return AerSimulator(noise_model=model, max_parallel_threads=1, max_memory_mb=SIMULATION_MB)
