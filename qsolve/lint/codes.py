"""The catalogue of lint codes: each code, what causes it and how to fix it.

E050, E052, E053 and E054 are the seed's (benchmarks-and-gates.md, "Lint codes for benchmark
mistakes"); the rest are qsolve's own. ``docs/lint-codes.md`` documents every code listed here.
"""

from __future__ import annotations

from typing import NamedTuple


class Code(NamedTuple):
    code: str
    title: str
    cause: str
    fix: str


CODES: tuple[Code, ...] = (
    Code(
        "E001",
        "manifest missing",
        "The folder has no `manifest.yaml`.",
        "Add `manifest.yaml` at the top of the workflow folder (docs/writing-a-workflow.md).",
    ),
    Code(
        "E002",
        "manifest not YAML",
        "`manifest.yaml` does not parse as YAML, is not UTF-8, or is not a mapping of keys.",
        "Fix the YAML syntax the message points at; the file must be a mapping.",
    ),
    Code(
        "E003",
        "unknown manifest key",
        "A key the manifest format does not have, at any depth (`metric.tolerence`, `resources.cpu`).",
        "Remove it or correct its spelling.",
    ),
    Code(
        "E004",
        "mistyped manifest value",
        "A manifest value of the wrong type (`version: 1.0` is a "
        "number, `methods` not a list, `kind` neither `quantum` nor `classical`).",
        'Give the type the manifest format asks for; quote versions: `version: "1.0"`.',
    ),
    Code(
        "E005",
        "required manifest key missing",
        "One of `name`, `version`, `input_schema`, "
        "`output_schema`, `methods` (or a method's `name` or `kind`) is absent.",
        "Add the key.",
    ),
    Code(
        "E006",
        "bad name or version",
        "`name` does not match `[a-z0-9][a-z0-9-]*`, or `version` is not letters, digits and `. + _ -`.",
        "Rename, for example `max-cut`, `1.0.0`.",
    ),
    Code(
        "E007",
        "path leaves the workflow folder",
        "`module`, `input_schema` or `output_schema` is "
        "absolute, contains `..`, or is or passes through a symbolic link (the platform follows no link).",
        "Give a path relative to the workflow folder, to a file of the folder itself.",
    ),
    Code(
        "E010",
        "fewer than two methods",
        "`methods` lists fewer than two methods.",
        "Declare the quantum method and at least the `reference` method.",
    ),
    Code(
        "E011",
        "no reference method",
        "No method is named `reference`; it is the baseline every case compares against.",
        "Name your exact or best classical method `reference`.",
    ),
    Code(
        "E012",
        "quantum_method names no quantum method",
        "`quantum_method` is not the name of a method declared with `kind: quantum`.",
        "Name a quantum method, or drop the key to use the first.",
    ),
    Code(
        "E013",
        "no quantum method",
        "No method has `kind: quantum`.",
        "Declare the workflow's quantum method with `kind: quantum`.",
    ),
    Code("E014", "duplicate method name", "Two methods have the same `name`.", "Give each a unique name."),
    Code(
        "E015",
        "unknown device family",
        "`targets.qpu` lists a family other than `ibm` or `provider`.",
        "List only `ibm` and/or `provider`.",
    ),
    Code(
        "E020",
        "unknown metric kind",
        "`metric.kind` is not `relative_gap`, `relative_error` or `error_rate`.",
        "Choose one of the three kinds.",
    ),
    Code(
        "E021",
        "tolerance out of range",
        "`metric.tolerance` is outside 0 to 1.",
        "Give a share between 0 and 1, or use `tolerance_abs` for a difference in the objective's units.",
    ),
    Code(
        "E022",
        "negative tolerance_abs",
        "`metric.tolerance_abs` is below 0.",
        "Give a non-negative number in the objective's units, or leave it out.",
    ),
    Code("E023", "note too long", "`metric.note` is over 600 characters.", "Shorten it to 600 characters."),
    Code(
        "E030",
        "timeout out of range",
        "`resources.timeout_s` is outside 1 to 7200 seconds. (The sandbox raises values under 300 to 300.)",
        "Give a number of seconds from 1 to 7200.",
    ),
    Code(
        "E031",
        "memory out of range",
        "`resources.memory_mb` is outside 64 to 8192 MB.",
        "Give a number of megabytes from 64 to 8192.",
    ),
    Code(
        "E040",
        "module missing or not Python",
        "The file `module` names does not exist, or does not parse as Python.",
        "Add the module, or fix the syntax error at the line given.",
    ),
    Code(
        "E041",
        "evaluate missing",
        "The module defines no top-level `evaluate`.",
        "Define `evaluate(input, solution) -> float` (lower is better).",
    ),
    Code(
        "E042",
        "method function missing",
        "A declared method has no top-level function of its name (or of its `function:`) in the module.",
        "Define the function or fix the name.",
    ),
    Code(
        "W043",
        "a function cannot take its arguments (a warning)",
        "A method, `evaluate` or `estimate` has parameters that cannot take what the platform passes: "
        "a method `(input, params, ctx)`, `evaluate(input, solution)`, `estimate(input, params)`; or is "
        "an `async def`, whose call gives a coroutine, not a result. Every case would fail at `qsolve test`.",
        "Give the function exactly those parameters, in that order (`def qaoa(input, params, ctx)`).",
    ),
    Code(
        "E050",
        "benchmarks/cases.yaml missing",
        "The workflow has no `benchmarks/cases.yaml`.",
        "Add the file with at least one case (seed: benchmarks-and-gates.md).",
    ),
    Code(
        "E052",
        "hardware_cases invalid",
        "`hardware_cases` is unreadable or invalid (the file is not "
        "YAML, a key is unknown, a type is wrong), or a hardware case's `target` is not "
        "`ibm:<device>` (letters, digits, `_ . -`, 1 to 60 characters).",
        "Fix the YAML and the key; give every hardware case a target such as `ibm:ibm_fez`.",
    ),
    Code(
        "E053",
        "too many hardware cases",
        "More than three `hardware_cases`.",
        "Keep at most three: a device run is slow, scarce and costs money.",
    ),
    Code(
        "E054",
        "ibm not among the manifest's targets",
        "`hardware_cases` is not empty and the manifest does not list `ibm` under `targets.qpu`.",
        "Add `targets: {qpu: [ibm]}` to the manifest.",
    ),
    Code(
        "E060",
        "schema missing or not JSON",
        "A schema file the manifest names does not exist or is not JSON.",
        "Add the file, or fix its JSON.",
    ),
    Code(
        "E061",
        "not a valid JSON Schema",
        "The input, output or params schema fails its metaschema "
        "(2020-12 unless it names another with `$schema`), or has a `pattern` (or a `patternProperties` "
        "key) that RE2, the platform's regular-expression engine, cannot run: a backreference, a lookaround.",
        "Fix the schema at the key path given; write the pattern without backreferences and lookaround.",
    ),
    Code(
        "E064",
        "example not a JSON object",
        "A file in `examples/` is not JSON, or holds something other than one JSON object.",
        "Make each example one JSON object, the input of one run.",
    ),
)

BY_CODE = {c.code: c for c in CODES}
