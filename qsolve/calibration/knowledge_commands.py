"""``qsolve knowledge reference`` and ``qsolve knowledge preview`` (issue 14, items 2 and 7).

    qsolve knowledge reference DIR [--json]
    qsolve knowledge preview DIR [--with-examples] [--json] [--model ID] [--question TEXT]

``reference`` prints the reference derived from DIR/task.md; with ``--json`` exactly
``{"background", "criteria", "parameters", "knowledge_chars", "knowledge_sha256"}``, the criteria in
their order, SUCCESS first. ``preview`` prints the six prompts the task's knowledge turns into, built
without a figure or a model call (``[figure]`` where an image goes), with the reference's size and
hash and the examples used. DIR is a task directory (``task-knowledge/CheckT1``) or an unpacked draft
of one. Exit 0, or 2 when DIR cannot be read as a task directory. Derivation warnings go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_commands(subparsers: Any) -> Any:
    """Add ``knowledge`` with ``reference`` and ``preview``; returns the ``knowledge`` subparsers, so
    that ``draft`` and ``archive`` can be added beside them."""
    p = subparsers.add_parser(
        "knowledge",
        help="task knowledge: the reference a task.md gives, and the prompts it turns into",
        description="Task knowledge (task-knowledge/<Task>/task.md with examples/): docs/calibration.md.",
    )
    sub = p.add_subparsers(dest="knowledge_command", required=True, metavar="COMMAND")

    r = sub.add_parser(
        "reference",
        help="the reference derived from DIR/task.md: background, criteria, parameters, size and hash",
    )
    r.add_argument("dir", metavar="DIR", help="a task directory (holding task.md)")
    r.add_argument("--json", action="store_true", help="print the reference as one JSON object")
    r.set_defaults(func=cmd_reference)

    v = sub.add_parser(
        "preview",
        help="the six prompts a task's knowledge turns into, [figure] where an image goes; no model call",
    )
    v.add_argument("dir", metavar="DIR", help="a task directory (holding task.md and examples/)")
    v.add_argument("--with-examples", action="store_true", help="show the examples, as in-context runs do")
    v.add_argument("--json", action="store_true", help="print the preview as one JSON object")
    v.add_argument("--model", metavar="ID", help="the model that would judge, named in the preview")
    v.add_argument("--question", metavar="TEXT", help="one more point for the significance question")
    v.set_defaults(func=cmd_preview)
    return sub


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


def _failed(message: str) -> int:
    print(f"qsolve: {message}", file=sys.stderr)
    return 2


def cmd_reference(args: argparse.Namespace) -> int:
    from qsolve.calibration.knowledge import KnowledgeError, read_task

    try:
        knowledge = read_task(args.dir)
    except KnowledgeError as e:
        return _failed(str(e))
    ref = knowledge.reference
    _warn(ref.warnings)
    if args.json:
        print(json.dumps(ref.public(), ensure_ascii=False))
        return 0
    kind = " (old format: the rendered text)" if ref.old_format else ""
    print(f"{ref.task}: a reference of {ref.knowledge_chars} characters{kind}, sha256 {ref.knowledge_sha256}")
    print("background:")
    print(f"  {ref.background}" if ref.background else "  (none)")
    print("criteria:")
    for code, criterion in ref.criteria.items():
        print(f"  {code}: {criterion}")
    if not ref.criteria:
        print("  (none: the generic statuses SUCCESS, SUBOPTIMAL, NO_SIGNAL, ANOMALOUS)")
    print("parameters:")
    for name, spec in ref.parameters.items():
        print(f"  {name} ({spec.type}): {spec.description}")
    if not ref.parameters:
        print("  (none: the model reports what the plot determines)")
    return 0


def cmd_preview(args: argparse.Namespace) -> int:
    from qsolve.calibration.examples import select_examples
    from qsolve.calibration.knowledge import KnowledgeError, read_task
    from qsolve.calibration.prompts import preview

    try:
        knowledge = read_task(args.dir)
    except KnowledgeError as e:
        return _failed(str(e))
    selection = select_examples(args.dir) if args.with_examples else None
    shown = preview(
        knowledge.reference,
        with_examples=args.with_examples,
        examples=selection.examples if selection else (),
        question=args.question,
        model=args.model,
    )
    skipped = [f"example {s.id}: {s.reason}" for s in (selection.skipped if selection else [])]
    _warn([*shown.warnings, *skipped])
    if args.json:
        data = shown.model_dump(mode="json")
        data["warnings"] = [*shown.warnings, *skipped]
        print(json.dumps(data, ensure_ascii=False))
        return 0
    used = ", ".join(f"{e.id} ({', '.join(e.questions)})" for e in shown.examples) or "none"
    print(
        f"{shown.task}: {len(shown.prompts)} prompts; reference {shown.knowledge_chars} characters, "
        f"sha256 {shown.knowledge_sha256}; model {shown.model or '(not named)'}; examples used: {used}"
    )
    for key, text in shown.prompts.items():
        print(f"\n=== {key} ===\n{text}")
    return 0
