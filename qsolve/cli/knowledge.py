"""``qsolve knowledge reference`` and ``qsolve knowledge preview`` (issue 14, items 2 and 7).

    qsolve knowledge reference DIR [--json]
    qsolve knowledge preview (DIR | --draft ID) [--with-examples] [--max-figures N] [--json] [--model ID]
                             [--question TEXT]
    qsolve knowledge draft ZIP [--json] [--uploader NAME]      qsolve knowledge draft --list [--json]
    qsolve knowledge archive (DRAFT_ID | TASK_DIR) --output PATH [--json]

``reference`` prints the reference derived from DIR/task.md; with ``--json`` exactly
``{"background", "criteria", "parameters", "knowledge_chars", "knowledge_sha256"}``, the criteria in
their order, SUCCESS first. ``preview`` prints the six prompts the task's knowledge turns into, built
without a figure or a model call (``[figure]`` where an image goes), with the reference's size and
hash and the examples used. DIR is a task directory (``task-knowledge/CheckT1``) or an unpacked draft
of one; ``--draft ID`` previews a stored knowledge draft instead. ``draft`` stores a zip of one task
directory as a knowledge draft (qsolve/evaluation/drafts.py) and prints its id, task and warnings;
``archive`` writes a draft's zip byte for byte, or a published task directory as a draft's zip. Exit 0,
or 2 when DIR cannot be read as a task directory or a draft is refused or unknown. Derivation warnings
go to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

from qsolve.cli.evaluation import _quiet_pipe


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
    r.set_defaults(func=_quiet_pipe(cmd_reference))

    v = sub.add_parser(
        "preview",
        help="the six prompts a task's knowledge turns into, [figure] where an image goes; no model call",
    )
    v.add_argument("dir", metavar="DIR", nargs="?", help="a task directory (holding task.md and examples/)")
    v.add_argument("--draft", metavar="ID", help="preview a stored knowledge draft instead of DIR")
    v.add_argument("--with-examples", action="store_true", help="show the examples, as in-context runs do")
    v.add_argument(
        "--max-figures",
        metavar="N",
        type=int,
        default=1,
        help="lay the prompts out for N figures of a result (1 to 4; default 1); an example left out to "
        "keep a request within four images is a warning",
    )
    v.add_argument("--json", action="store_true", help="print the preview as one JSON object")
    v.add_argument("--model", metavar="ID", help="the model that would judge, named in the preview")
    v.add_argument("--question", metavar="TEXT", help="one more point for the significance question")
    v.set_defaults(func=_quiet_pipe(cmd_preview))

    d = sub.add_parser(
        "draft",
        help="store a zip of one task directory as a knowledge draft (its id: the zip's SHA-256), or --list",
    )
    d.add_argument(
        "zip", metavar="ZIP", nargs="?", help="the zip: one folder named as the task, holding task.md"
    )
    d.add_argument("--list", action="store_true", help="list the stored drafts")
    d.add_argument("--uploader", metavar="NAME", help="who uploads it (default: the login name)")
    d.add_argument("--json", action="store_true", help="print the draft (or the list) as JSON")
    d.set_defaults(func=_quiet_pipe(cmd_draft))

    a = sub.add_parser(
        "archive",
        help="a draft's zip byte for byte, or a published task directory as a zip that stores as a draft",
    )
    a.add_argument("source", metavar="DRAFT_ID|TASK_DIR", help="a draft's id, or a task directory")
    a.add_argument(
        "--output",
        metavar="PATH",
        required=True,
        help="the file to write ('-': standard output); a folder: "
        "the file in it under the draft's uploaded name, or <Task>.zip",
    )
    a.add_argument("--json", action="store_true", help="print what was written (path, bytes, sha256) as JSON")
    a.set_defaults(func=_quiet_pipe(cmd_archive))
    return sub


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


def _failed(message: str) -> int:
    print(f"qsolve: {message}", file=sys.stderr)
    return 2


def cmd_reference(args: argparse.Namespace) -> int:
    from qsolve.evaluation.knowledge import KnowledgeError, read_task

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
    from qsolve.evaluation.knowledge import KnowledgeError
    from qsolve.evaluation.models import ConfigError, UnknownModel, choose_model
    from qsolve.evaluation.prompts import preview_task

    if (args.dir is None) == (args.draft is None):
        return _failed("knowledge preview: give a task directory DIR or --draft ID (one of them)")
    if not 1 <= args.max_figures <= 4:
        return _failed(f"--max-figures {args.max_figures}: 1 to 4 figures of a result are shown")
    directory = args.dir
    if args.draft is not None:
        from qsolve.evaluation.drafts import DraftError, DraftStore

        try:
            directory = DraftStore().get(args.draft).directory
        except DraftError as e:
            return _failed(str(e))
    try:  # the model that would judge, chosen as an evaluation chooses it
        choice = choose_model(args.model)
    except (ConfigError, UnknownModel) as e:
        return _failed(str(e))
    model = choice.id + (" (fallback)" if choice.fallback else "")
    try:
        task = preview_task(
            directory, with_examples=args.with_examples, question=args.question, model=model,
            max_figures=args.max_figures,
        )  # fmt: skip
    except KnowledgeError as e:
        return _failed(str(e))
    shown = task.preview
    _warn(task.warnings)
    if args.json:
        data = shown.model_dump(mode="json")
        data["warnings"] = task.warnings
        if args.draft is not None:
            data["knowledge_draft_id"] = args.draft.strip().lower()
        print(json.dumps(data, ensure_ascii=False))
        return 0
    used = ", ".join(f"{e.id} ({', '.join(e.questions)})" for e in shown.examples) or "none"
    if args.draft is not None:
        print(f"knowledge draft {args.draft.strip().lower()}")
    print(
        f"{shown.task}: {len(shown.prompts)} prompts; reference {shown.knowledge_chars} characters, "
        f"sha256 {shown.knowledge_sha256}; model {shown.model or '(not named)'}; examples used: {used}"
    )
    for key, text in shown.prompts.items():
        print(f"\n=== {key} ===\n{text}")
    return 0


def cmd_draft(args: argparse.Namespace) -> int:
    from pathlib import Path

    from qsolve.evaluation.drafts import DraftError, DraftStore, draft_id_of, read_zip

    store = DraftStore()
    if args.list == (args.zip is not None):
        return _failed("knowledge draft: give a ZIP to store, or --list (one of them)")
    if args.list:
        drafts = store.list()
        if args.json:
            print(json.dumps([d.metadata() for d in drafts], ensure_ascii=False))
        for d in [] if args.json else drafts:
            print(
                f"{d.id}  {d.task}  {d.file_name}  {d.uploader}  {d.created_at}  {len(d.warnings)} warning(s)"
            )
        return 0
    try:
        zipped = read_zip(args.zip)
        stored = not store.exists(draft_id_of(zipped))
        draft = store.store(zipped, Path(args.zip).name, uploader=args.uploader)
    except DraftError as e:
        return _failed(str(e))
    if args.json:
        data = {**draft.metadata(), "stored": stored, "directory": str(draft.directory)}
        print(json.dumps(data, ensure_ascii=False))
        return 0
    _warn(draft.warnings)
    state = "stored" if stored else "already stored, unchanged"
    print(f"{draft.id}\n{draft.task}: knowledge draft {state} ({draft.file_name}, {draft.zip_bytes:,} bytes)")
    print(f"{len(draft.warnings)} warning(s)" if draft.warnings else "no warnings")
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    from pathlib import Path

    from qsolve.evaluation.drafts import DraftError, DraftStore, task_archive

    source = Path(args.source)
    try:
        if source.is_dir():
            data, name = task_archive(source), f"{source.resolve().name}.zip"
        else:
            store = DraftStore()
            draft = store.get(args.source)
            data, name = store.archive(draft.id), draft.file_name
    except DraftError as e:
        return _failed(str(e))
    if args.output == "-" and getattr(args, "json", False):
        return _failed(
            "knowledge archive: --json prints what was written; it cannot share stdout with --output -"
        )
    if args.output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return 0
    output = Path(args.output)
    if output.is_dir():
        output = output / name
    try:
        output.write_bytes(data)
    except OSError as e:
        return _failed(f"{output}: cannot be written: {e.strerror or e}")
    if args.json:
        digest = hashlib.sha256(data).hexdigest()
        print(json.dumps({"output": str(output), "bytes": len(data), "sha256": digest}))
        return 0
    print(f"{output}: {len(data):,} bytes")
    return 0
