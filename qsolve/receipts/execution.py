"""Where counts come from, and how a device was asked to run them (quantum-provider-protocol §8.3).

``execution`` is an object of ``stated_by``, the five steps, ``verbatim``, ``sent`` (with ``client``
only) and an optional ``note``, and nothing else. Each built-in kind records one of its rows; a row
holds for a provenance, and is never removed. A kind of the open protocol (``http``, ``process``)
records the provider's word or nobody's.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from qsolve.receipts.values import MISSING

COUNTS_SOURCES = frozenset({"shots", "vendor_counts", "probabilities"})
STEPS = ("mitigation", "twirling", "decoupling", "remapping", "optimisation")
STATERS = frozenset({"client", "provider", "nobody"})
STEP_VALUES = {
    "client": frozenset({"off", "on", "default"}),
    "provider": frozenset({"off", "on", "none", "unknown"}),
    "nobody": frozenset({"unknown"}),
}
OPEN_KINDS = frozenset({"http", "process"})
_MEMBERS = frozenset({"stated_by", *STEPS, "verbatim", "sent", "note"})
_steps_of = itemgetter(*STEPS)


@dataclass(frozen=True)
class Row:
    """One row of §8.3's table: what a built-in kind's client records."""

    kind: str
    counts_sources: frozenset[str]
    fields: tuple[str, ...]
    settings: dict[str, Any]
    steps: dict[str, str]
    verbatim: bool
    provenance: str = "any"
    """``any``, ``silicon``, or ``not_silicon`` (a simulator, an emulator, or anything but silicon)."""
    model_setting: str | None = None
    """A setting whose value is the model's name, any string not empty (``native-turns`` with noise)."""

    def holds_for(self, provenance: Any) -> bool:
        if self.provenance == "any":
            return True
        if self.provenance == "silicon":
            return provenance == "silicon"
        return provenance != "silicon"

    def matches(self, execution: dict[str, Any]) -> bool:
        """``execution``, less its ``note``, is this row (``execution`` already holds §8.3's rules)."""
        if execution["stated_by"] != "client" or execution["verbatim"] is not self.verbatim:
            return False
        if _steps_of(execution) != _steps_of(self.steps):  # strings, by the rules
            return False
        sent = execution["sent"]
        if tuple(sent["fields"]) != self.fields:  # a list of strings, by the rules
            return False
        settings = sent["settings"]
        if self.model_setting is None:
            return _same_flat(settings, self.settings)
        model = settings.get(self.model_setting, MISSING)
        rest = {k: v for k, v in settings.items() if k != self.model_setting}
        return type(model) is str and model != "" and _same_flat(rest, self.settings)


def _same_flat(given: dict[str, Any], row: dict[str, Any]) -> bool:
    """Equal to a row's settings, whose values are booleans and strings: a boolean only to a boolean."""
    if given.keys() != row.keys():
        return False
    for name, want in row.items():
        got = given[name]
        if type(got) is not type(want) or got != want:
            return False
    return True


def _steps(default: str = "default", **given: str) -> dict[str, str]:
    return {step: given.get(step, default) for step in STEPS}


_NATIVE_FIELDS = ("backend", "input", "settings", "shots", "type")
_NATIVE_SETTINGS = {"/input/gateset": "native", "/settings/error_mitigation/debiasing": False}
_CLOUD_FIELDS = ("action", "clientToken", "deviceArn", "outputS3Bucket", "outputS3KeyPrefix", "shots")

ROWS: tuple[Row, ...] = (
    Row(
        kind="sampler-v2",
        counts_sources=frozenset({"shots"}),
        fields=("backend", "params", "program_id"),
        settings={
            "/params/options/dynamical_decoupling/enable": False,
            "/params/options/twirling/enable_gates": False,
            "/params/options/twirling/enable_measure": False,
        },
        steps=_steps(decoupling="off", twirling="off"),
        verbatim=False,
    ),
    Row(
        kind="prx-circuits",
        counts_sources=frozenset({"vendor_counts"}),
        fields=("circuits", "shots"),
        settings={},
        steps=_steps(),
        verbatim=False,
    ),
    Row(
        kind="native-turns",
        counts_sources=frozenset({"probabilities"}),
        fields=_NATIVE_FIELDS,
        settings=_NATIVE_SETTINGS,
        steps=_steps(mitigation="off"),
        verbatim=False,
    ),
    Row(
        kind="native-turns",
        counts_sources=frozenset({"probabilities"}),
        fields=("backend", "input", "noise", "settings", "shots", "type"),
        settings=_NATIVE_SETTINGS,
        steps=_steps(mitigation="off"),
        verbatim=False,
        provenance="not_silicon",
        model_setting="/noise/model",
    ),
    Row(
        kind="cloud-tasks",
        counts_sources=frozenset({"shots", "probabilities"}),
        fields=_CLOUD_FIELDS,
        settings={"verbatim_box": True},
        steps=_steps(remapping="off", optimisation="off"),
        verbatim=True,
        provenance="silicon",
    ),
    Row(
        kind="cloud-tasks",
        counts_sources=frozenset({"shots", "probabilities"}),
        fields=_CLOUD_FIELDS,
        settings={},
        steps=_steps(),
        verbatim=False,
        provenance="not_silicon",
    ),
)
KINDS_WITH_ROWS = frozenset(row.kind for row in ROWS)
# A row holds for a provenance by whether it is silicon alone: the rows of each kind, for each answer.
_ROWS_HOLDING = {
    (kind, silicon): tuple(row for row in ROWS if row.kind == kind and row.holds_for(provenance))
    for kind in KINDS_WITH_ROWS
    for silicon, provenance in ((True, "silicon"), (False, "simulator"))
}


def rows_for(kind: Any, provenance: Any) -> tuple[Row, ...]:
    """The rows of ``kind`` that hold for ``provenance``."""
    if type(kind) is not str:
        return ()
    return _ROWS_HOLDING.get((kind, provenance == "silicon"), ())


def _settings_key_ok(key: str, fields: list[str]) -> bool:
    if key.startswith("/"):
        token = key[1:].partition("/")[0]
        if "~" in token:
            token = token.replace("~1", "/").replace("~0", "~")
        return token in fields
    return key != ""


def _sent_ok(sent: Any) -> bool:
    if type(sent) is not dict or sent.keys() != _SENT_MEMBERS:
        return False
    fields, settings = sent["fields"], sent["settings"]
    if type(fields) is not list or type(settings) is not dict:
        return False
    previous = None
    for name in fields:
        if type(name) is not str:
            return False
        # UTF-8 keeps the order of code points, so strings compare as their UTF-8 bytes do.
        if previous is not None and previous >= name:
            return False  # each once, in increasing order of their UTF-8 bytes
        previous = name
    return all(_settings_key_ok(key, fields) for key in settings)


_SENT_MEMBERS = frozenset({"fields", "settings"})


def execution_breaks_rules(execution: Any) -> bool:
    """``execution`` breaks a rule of §8.3 (its form, its stater's values, verbatim, settings)."""
    if type(execution) is not dict or not execution.keys() <= _MEMBERS:
        return True
    stated_by = execution.get("stated_by")
    if type(stated_by) is not str or stated_by not in STATERS:
        return True
    allowed = STEP_VALUES[stated_by]
    said = False  # a step said to be off or on
    for step in STEPS:
        value = execution.get(step)
        if type(value) is not str or value not in allowed:
            return True
        said = said or value in ("off", "on")
    verbatim = execution.get("verbatim", MISSING)
    if stated_by == "nobody":
        if verbatim is not None:
            return True
    elif type(verbatim) is not bool:
        return True
    if ("sent" in execution) != (stated_by == "client"):
        return True
    if stated_by == "client" and not _sent_ok(execution["sent"]):
        return True
    if "note" in execution and type(execution["note"]) is not str:
        return True
    # A program run as written is neither remapped nor optimised.
    if verbatim is True and not (
        execution["remapping"] in ("off", "none") and execution["optimisation"] in ("off", "none")
    ):
        return True
    # A client that says a step is off or on says by which setting.
    return stated_by == "client" and said and not execution["sent"]["settings"]


def execution_reason(kind: Any, provenance: Any, execution: Any) -> bool:
    """Whether a stated provider's result gets the reason ``execution`` (§8.4)."""
    if execution_breaks_rules(execution):
        return True
    stated_by = execution["stated_by"]
    if kind in KINDS_WITH_ROWS:
        return stated_by != "nobody" and not any(row.matches(execution) for row in rows_for(kind, provenance))
    if kind in OPEN_KINDS:
        return stated_by not in ("provider", "nobody")
    return False


def counts_source_reason(kind: Any, provenance: Any, counts_source: Any) -> bool:
    """Whether a stated provider's result gets the reason ``counts_source`` (§8.4)."""
    if type(counts_source) is not str or counts_source not in COUNTS_SOURCES:
        return True
    if kind in KINDS_WITH_ROWS:
        return not any(counts_source in row.counts_sources for row in rows_for(kind, provenance))
    return False
